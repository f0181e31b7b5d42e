"""TM102: `torch.load(f)` without `map_location` -> a CPU fallback that keeps CUDA machines' behaviour."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod, traverse
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.helpers.checkpoints import _Checkpoints
from codemods.helpers.load_flows import LOAD_WORD, Flows
from codemods.helpers.names import attribute_chain

# torch.load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args)
POSITIONAL = ("f", "map_location", "pickle_module")


class LoadMapLocation(MigrationCodemod):
    """Give `torch.load` a `map_location`, so that a checkpoint saved on a GPU loads anywhere.

    ## What it does
    Adds a `map_location` to every `torch.load(...)` call that has none. When the loaded object
    goes straight into `load_state_dict` (as the argument, or through a name assigned from
    `torch.load` in the same function), where the tensors are copied into the model's own
    parameters wherever they live, it adds `map_location="cpu"`. Every other load keeps what it
    does on a CUDA machine and only gains the CPU fallback:
    `map_location=None if torch.cuda.is_available() else "cpu"`. A load of a path that this file's
    own `torch.save` writes only tensors made on the CPU to (a dataset's processed cache:
    `torch.ByteTensor(array)`, `torch.from_numpy`, factories without `device=`) loads anywhere and
    is left as it is.

    ## Why is this bad?
    Without `map_location`, `torch.load` puts every tensor back on the device it was saved from. A
    checkpoint saved on a GPU then fails to load on a machine without CUDA ("Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is False"), so the code
    cannot be tested on a CPU machine.

    ## Example
    ```python
    import torch

    model.load_state_dict(torch.load("model.pt"))
    features = torch.load("features.pt")
    ```

    ## Use instead
    ```python
    import torch

    model.load_state_dict(torch.load("model.pt", map_location="cpu"))
    features = torch.load("features.pt",
                          map_location=None if torch.cuda.is_available() else "cpu")
    ```

    ## Fix safety
    Review. With CUDA, the fallback is `None`: tensors land where they were saved, as before (data
    a `Dataset` keeps on the CPU stays there, GPU tensors go back to their GPU). Without CUDA they
    load onto the CPU instead of failing. A state dict loaded onto the CPU is copied into the model
    by `load_state_dict` exactly as one loaded onto the GPU. Calls with `*args`/`**kwargs` (which
    may already carry a `map_location`) yield a finding.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-model-across-devices
    """

    PRUNE = True  # its sites are `torch.load` calls on trigger lines; Flows reads `load...` lines

    def visit_Module(self, node: cst.Module) -> None:
        self.flows = Flows(self.imports)
        self.visit_where(node, self.flows, LOAD_WORD)
        self._blocks: list[Sequence[cst.BaseStatement]] = [node.body]  # module, then enclosing defs
        self._module = node
        self._checkpoints: _Checkpoints | bool | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        self._blocks.append(body)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._blocks.pop()
        return updated_node

    def _saved_here_on_cpu(self, path: cst.BaseExpression) -> bool:
        """Whether this file's own `torch.save` to `path` writes only tensors made on the CPU (a
        dataset's processed cache): its saves are read with a full walk, once, on the first need,
        and never where the file may move the default device."""
        if self._checkpoints is None:
            text = self.module_code(self._module)
            self._checkpoints = _Checkpoints(self.imports) if "set_default" not in text else False
            if self._checkpoints:
                traverse(self._module, self._checkpoints)
        return bool(self._checkpoints) and self._checkpoints.saved_on_cpu(path)

    def _fallback(self) -> cst.BaseExpression:
        """`None if torch.cuda.is_available() else "cpu"`, queuing `import torch` when no import
        this call can see spells it (`from torch import load` alone, or `import torch` only inside
        another function)."""
        is_available = self.imports.local_name_for("torch.cuda.is_available")
        if is_available is None or not any(_imports(b, is_available.split(".")[0]) for b in self._blocks):
            self.add_needed_import("torch")
            is_available = "torch.cuda.is_available"
        return cst.IfExp(
            test=cst.Call(attribute_chain(is_available)),
            body=cst.Name("None"),
            orelse=cst.SimpleString('"cpu"'),
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) != "torch.load":
            return updated_node
        bound = arguments.bind(original_node, POSITIONAL)
        if "map_location" in bound:
            return updated_node
        if arguments.has_star_args(original_node):
            self.finding(
                original_node,
                "torch.load with *args/**kwargs: cannot tell whether map_location is given",
                suggestion='pass map_location=None if torch.cuda.is_available() else "cpu"',
            )
            return updated_node
        if "f" not in bound:
            return updated_node
        at = bound["f"].index + 1
        whole_state_dict = id(original_node) in self.flows.feeds and id(original_node) not in self.flows.partial
        if not whole_state_dict and self._saved_here_on_cpu(bound["f"].arg.value):
            return updated_node  # what this file saved from the CPU loads anywhere as it is
        if whole_state_dict:
            location: cst.BaseExpression = cst.SimpleString('"cpu"')
            review = 'map_location="cpu": the state dict is copied into the model wherever its parameters are'
        else:
            location = self._fallback()
            review = "map_location falls back to the CPU without CUDA; with CUDA tensors load where they were saved, as before"
        return self.rewrite(original_node, updated_node, _with_location(updated_node, at, location), review=review)


def _imports(body: Sequence[cst.BaseStatement], name: str) -> bool:
    """Whether an import in `body` (or in its if/try/with blocks, not in nested defs) binds `name`."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    if any((a.evaluated_alias or a.evaluated_name.split(".")[0]) == name for a in small.names):
                        return True
        elif any(_imports(block, name) for block in _blocks(statement)):
            return True
    return False


def _blocks(statement: cst.BaseStatement) -> list[Sequence[cst.BaseStatement]]:
    """The statement lists an if/try/with runs in its own scope."""
    suites: list[cst.BaseSuite] = []
    if isinstance(statement, cst.If):
        suites.append(statement.body)
        if isinstance(statement.orelse, cst.If):
            return [_statements(statement.body), [statement.orelse]]
    elif isinstance(statement, cst.Try):
        suites += [statement.body, *(h.body for h in statement.handlers)]
        suites += [statement.finalbody.body] if statement.finalbody is not None else []
    elif isinstance(statement, cst.With):
        suites.append(statement.body)
    orelse = getattr(statement, "orelse", None)
    if isinstance(orelse, cst.Else):
        suites.append(orelse.body)
    return [_statements(s) for s in suites]


def _statements(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    return [cst.SimpleStatementLine(body=suite.body)]  # `if x: import torch`


def _with_location(call: cst.Call, at: int, location: cst.BaseExpression) -> cst.Call:
    """`call` with `map_location=location` inserted as argument number `at`, laid out like its neighbours."""
    args = list(call.args)
    new = keyword_arg("map_location", location)
    if at == len(args) and not isinstance(args[-1].comma, cst.Comma):
        return append_args(call, [new])  # after the last argument, in the call's own layout
    before = args[at - 1]
    if isinstance(before.comma, cst.Comma):
        # Multi-line calls: the new argument takes the comma (and line break) that ended
        # `f`; `f` gets the break-and-indent the other arguments start with.
        new = new.with_changes(comma=before.comma)
        indent = call.whitespace_before_args
        if at == len(args) and isinstance(indent, cst.ParenthesizedWhitespace):
            before = before.with_changes(comma=before.comma.with_changes(whitespace_after=indent))
    else:
        before = before.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        if at < len(args):
            new = new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args[at - 1] = before
    args.insert(at, new)
    return call.with_changes(args=args)
