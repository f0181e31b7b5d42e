"""Run inside the torch 1.13.1 venv (scripts/old_torch.py) by tests/test_target_torch_old.py.

    <old python> tests/old_torch_probe.py symbols REQUEST ANSWER   # request {"keys": [...]}
    <old python> tests/old_torch_probe.py run REQUEST ANSWER       # request {"pairs": [{"id", "before", "after"}]}

REQUEST and ANSWER are JSON files (not stdin/stdout: a snippet or torch's C++ side may write to
the process's own stdout).

One process answers a whole request (importing torch costs 1-2 s there). Standard library and
torch only, no import from this repository: it runs on the old interpreter's site-packages.

`symbols`: for each key of codemods/data/torch_minimums.json, "present", "absent" or
"undecided: <why>" in this torch. A dotted key imports its longest importable module prefix and
takes the rest as attributes; `f(kw)` asks whether the callable accepts the keyword: its
signature for a Python callable (with a trial call where it only has `**kwargs`), the signature
lines of its docstring for a builtin.

`run`: for each pair, in a child forked from this process, exec `before` and `after` in fresh
namespaces (`__name__` "target_old", cwd a fresh temp dir, stdout captured, seeds reset, warnings
ignored, a per-file alarm), and compare the module-level numbers (ints, floats, bools, tensors,
arrays, lists and tuples of them).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import os
import random
import re
import select
import signal
import sys
import tempfile
import time
import traceback
import warnings

import torch

TIMEOUT_S = 5

# -- symbols -----------------------------------------------------------------------------------


def _resolve(dotted: str):
    """("present", the object) or ("absent"|"undecided", why)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                continue  # `name` itself is no module: an attribute of a shorter prefix, perhaps
            return "undecided", f"importing {name} needs {exc.name}, which this venv lacks"
        except Exception as exc:
            return "undecided", f"importing {name} failed: {type(exc).__name__}: {exc}"
        for attr in parts[end:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                return "absent", f"{name} has no attribute {attr}"
            name = f"{name}.{attr}"
        return "present", obj
    return "absent", f"no module {parts[0]}"


def _doc_parameters(func, name: str) -> set[str] | None:
    """The parameter names of the signature lines (`name(a, *, b=None) -> Tensor`) of a
    builtin's `__text_signature__` or docstring; None when it has none."""
    text = getattr(func, "__text_signature__", None)
    lines = [f"{name}{text}"] if text else []
    lines += (getattr(func, "__doc__", None) or "").splitlines()
    found: set[str] | None = None
    head = re.compile(rf"^\s*(?:[\w.]+\.)?{re.escape(name)}\((?P<args>.*)\)")
    for line in lines:
        match = head.match(line)
        if match is None:
            continue
        found = found or set()
        for part in re.split(r",", match.group("args")):
            part = part.strip().lstrip("*")
            word = re.match(r"[A-Za-z_]\w*", part)
            if word:
                found.add(word.group(0))
    return found


def _seq():
    return torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))


# Callables whose Python signature ends in `**kwargs`, which they check themselves: a trial call
# with the keyword tells. Each returns normally, or raises TypeError/ValueError on an unknown one.
TRIALS = {
    "torch.utils.checkpoint.checkpoint_sequential": lambda f, kw: f(
        _seq(), 1, torch.ones(1, 2, requires_grad=True), **{kw: False}
    ),
    "torch.utils.checkpoint.checkpoint": lambda f, kw: f(
        torch.nn.Linear(2, 2), torch.ones(1, 2, requires_grad=True), **{kw: False}
    ),
}


def _accepts(callee: str, func, keyword: str) -> tuple[str, str]:
    """("present"|"absent"|"undecided", how it was decided)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        signature = None
    if signature is not None and not _is_builtin(func):
        params = signature.parameters
        if keyword in params and params[keyword].kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            return "present", "signature"
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return "absent", f"signature {signature}"
        trial = TRIALS.get(callee)
        if trial is None:
            return "undecided", f"{callee}{signature} takes **kwargs and the probe has no trial call for it (add one to TRIALS)"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                trial(func, keyword)
            except (TypeError, ValueError) as exc:
                if keyword in str(exc) or "nexpected keyword" in str(exc):
                    return "absent", f"trial call: {type(exc).__name__}: {exc}"
                return "undecided", f"trial call failed otherwise: {type(exc).__name__}: {exc}"
        return "present", "trial call"
    name = callee.rpartition(".")[2]
    params = _doc_parameters(func, name)
    if params is None:
        return "undecided", f"{callee} is a builtin with neither __text_signature__ nor a `{name}(...)` line in its docstring"
    if keyword in params:
        return "present", "docstring signature"
    return "absent", f"docstring signature has {sorted(params)}"


def _is_builtin(func) -> bool:
    return inspect.isbuiltin(func) or type(func).__name__ in ("builtin_function_or_method", "method_descriptor")


def probe(key: str) -> dict:
    callee, paren, rest = key.partition("(")
    state, obj = _resolve(callee)
    if not paren or state != "present":
        return {"state": state, "how": "import/getattr" if state == "present" else obj, "callee": state}
    keyword = rest.rstrip(")")
    if inspect.isclass(obj):
        obj = obj.__init__ if obj.__init__ is not object.__init__ else obj
    state, how = _accepts(callee, obj, keyword)
    return {"state": state, "how": how, "callee": "present"}


# -- run ---------------------------------------------------------------------------------------


class Timeout(BaseException):
    """Raised by the alarm: not an Exception, so the snippet's own `except Exception` lets it by."""


def _alarm(signum, frame):
    raise Timeout(f"ran past {TIMEOUT_S} s")


def _seed() -> None:
    random.seed(0)
    torch.manual_seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:
        pass


def _execute(source: str, name: str) -> tuple[dict | None, str | None, str]:
    """(namespace, error or None, stdout) of `source` run as a module in a fresh temp dir."""
    namespace = {"__name__": "target_old", "__file__": os.path.join(os.getcwd(), name)}
    out = io.StringIO()
    cwd = os.getcwd()
    argv = sys.argv[:]
    modules = set(sys.modules)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        sys.argv = [name]
        _seed()
        error = None
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(TIMEOUT_S)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                exec(compile(source, name, "exec", dont_inherit=True), namespace)
        except (Exception, Timeout, SystemExit) as exc:
            line = next((f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__)) if f.filename == name), None)
            error = f"{type(exc).__name__}: {exc}" + (f" (line {line})" if line else "")
        finally:
            signal.alarm(0)
            os.chdir(cwd)
            sys.argv = argv
            # `after` runs in the same child as `before`: give it the state `before` started from.
            torch.set_default_tensor_type(torch.FloatTensor)
            torch.set_grad_enabled(True)
            for added in set(sys.modules) - modules:
                # torch's and functorch's modules register native kernels on import: a second
                # import in one process fails, so they stay (as torch and numpy do)
                if not added.startswith(("torch", "numpy", "functorch")):
                    sys.modules.pop(added, None)
    return namespace, error, out.getvalue()


_SCALARS = (bool, int, float)


def _numbers(value, depth: int = 0):
    """`value` as a comparable form (a float tensor, a bool or int, or a list of such), or None
    when it is not made only of numbers."""
    if depth > 3:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("tensor", torch.tensor([value], dtype=torch.float64, device="cpu"))
    if isinstance(value, torch.Tensor):
        if value.is_sparse or value.is_quantized or value.is_complex():
            return None
        return ("tensor", value.detach().cpu().reshape(-1).to(torch.float64))
    try:
        import numpy

        if isinstance(value, numpy.ndarray):
            if value.dtype.kind not in "biuf":
                return None
            return ("tensor", torch.from_numpy(value.astype("float64")).reshape(-1))
        if isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
            return ("tensor", torch.tensor([float(value)], dtype=torch.float64, device="cpu"))
    except ImportError:
        pass
    if isinstance(value, (list, tuple)) and value:
        items = [_numbers(v, depth + 1) for v in value]
        if any(i is None for i in items):
            return None
        return ("list", items)
    return None


def _same(a, b) -> bool:
    # A one-element tensor and the Python number `.item()` made of it are the same number.
    if a[0] == "int" and b[0] == "tensor" or a[0] == "tensor" and b[0] == "int":
        a = a if a[0] == "tensor" else ("tensor", torch.tensor([float(a[1])], dtype=torch.float64, device="cpu"))
        b = b if b[0] == "tensor" else ("tensor", torch.tensor([float(b[1])], dtype=torch.float64, device="cpu"))
    if a[0] != b[0]:
        return False
    if a[0] in ("bool", "int"):
        return a[1] == b[1]
    if a[0] == "list":
        return len(a[1]) == len(b[1]) and all(_same(x, y) for x, y in zip(a[1], b[1]))
    x, y = a[1], b[1]
    return x.shape == y.shape and bool(torch.allclose(x, y, rtol=1e-5, atol=1e-7, equal_nan=True))


def _shown(form) -> str:
    if form[0] == "list":
        return "[" + ", ".join(_shown(f) for f in form[1][:6]) + (", ..." if len(form[1]) > 6 else "") + "]"
    if form[0] == "tensor":
        values = form[1][:6].tolist()
        return f"tensor{values}{'...' if form[1].numel() > 6 else ''}"
    return repr(form[1])


def compare(pair: dict) -> dict:
    before, before_error, before_out = _execute(pair["before"], "before.py")
    result = {"id": pair["id"], "before_error": before_error, "after_error": None, "compared": [], "differ": {}, "missing": []}
    if before_error is not None:
        return result  # the original does not run here: nothing to hold the output to
    before_values = {k: f for k, v in before.items() if not k.startswith("__") and (f := _numbers(v)) is not None}
    after, after_error, after_out = _execute(pair["after"], "after.py")
    result["after_error"] = after_error
    if after_error is not None:
        return result
    for name, form in sorted(before_values.items()):
        if name not in after:
            result["missing"].append(name)
            continue
        other = _numbers(after[name])
        result["compared"].append(name)
        if other is None or not _same(form, other):
            result["differ"][name] = {"before": _shown(form), "after": _shown(other) if other else repr(after[name])[:200]}
    result["stdout_same"] = before_out == after_out
    return result


def isolated(pair: dict) -> dict:
    """`compare(pair)` in a forked child: whatever a snippet does to torch's global state (the
    default tensor type, monkeypatches, modules it defines) dies with the child. The parent only
    imports torch and never computes, so the fork is safe and costs milliseconds."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: run, write the result, leave without cleanup handlers
        os.close(read)
        try:
            data = json.dumps(compare(pair)).encode()
        except BaseException as exc:  # a bug of the probe's own, said as such
            data = json.dumps({"id": pair["id"], "probe_error": f"{type(exc).__name__}: {exc}"}).encode()
        with os.fdopen(write, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(write)
    chunks, deadline = [], time.monotonic() + 3 * TIMEOUT_S  # past both alarms: stuck in C code
    with os.fdopen(read, "rb") as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(child, signal.SIGKILL)
                break
            chunk = os.read(pipe.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(child, 0)
    if not chunks:
        return {"id": pair["id"], "probe_error": f"the child ended with status {status} and no result (killed after {3 * TIMEOUT_S} s?)"}
    return json.loads(b"".join(chunks))


def main() -> int:
    command, request_path, answer_path = sys.argv[1:4]
    with open(request_path) as f:
        request = json.load(f)
    if command == "symbols":
        answer = {"torch": torch.__version__, "symbols": {key: probe(key) for key in request["keys"]}}
    elif command == "run":
        answer = {"torch": torch.__version__, "pairs": [isolated(pair) for pair in request["pairs"]]}
    else:
        raise SystemExit(f"unknown command {command!r}")
    with open(answer_path, "w") as f:
        json.dump(answer, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
