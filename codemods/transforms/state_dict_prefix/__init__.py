"""TM104 state-dict-prefix: checkpoints without the `module.` prefix of DataParallel/DDP
wrappers, and loads that strip it.

The package, in the order a module goes through it:

- survey.py: the read-only survey of the module (which models are wrapped, whether the
  generated helpers can be added, the hand-written strips), a frozen `Survey`;
- idioms.py, in_place.py (over nodes.py): pure recognisers of the hand-written strip idioms;
- plan.py: pure functions from the survey and a block's statements to `Edit`s and findings;
- transform.py: the transformer, which applies the plan through `rewrite()`.

`StateDictPrefix` itself is defined here, not re-exported: its docstring is the rule's
documentation (`torch-migrate explain TM104`), which the registry reads from this file's
source without importing it.
"""

from codemods.transforms.state_dict_prefix.transform import StateDictPrefixTransformer


class StateDictPrefix(StateDictPrefixTransformer):
    """Save the unwrapped model's state dict; strip a `module.` prefix with torch's own function.

    ## What it does
    `torch.save(model.state_dict(), ...)` where `model` is wrapped by `DataParallel`/DDP (or
    TM103's `ddp_wrap`) in this file becomes `torch.save(unwrap_model(model).state_dict(), ...)`;
    the same inside the arguments of a project's `save_checkpoint(...)`-like function.
    In a repository that wraps models, `model.load_state_dict(torch.load(...))` (or a checkpoint
    loaded with `torch.load` and subscripted) first strips a `module.` prefix with
    `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present` and loads into
    `unwrap_model(model)`. The hand-written stripping idioms (`k[7:]`, `k.replace('module.', '')`,
    `'.'.join(k.split('.')[1:])`, an `OrderedDict` loop, a dict comprehension, a
    `try: load / except: strip and retry`) become that call when they are exactly that.

    ## Why is this bad?
    A wrapped model's state dict has every key prefixed with `module.`; such checkpoints fail to
    load into the plain model (`Missing key(s) in state_dict`). The hand-written fixes cut seven
    characters off every key, so they corrupt a checkpoint saved without the prefix — which is
    what every checkpoint becomes once training moves to DDP with an unwrapped save.

    ## Example
    ```python
    import torch
    import torch.nn as nn
    from collections import OrderedDict

    model = nn.DataParallel(net)
    torch.save(model.state_dict(), path)
    new_state_dict = OrderedDict()
    for k, v in state_dict.items():
        new_state_dict[k[7:]] = v
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn as nn
    from collections import OrderedDict
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    # ... generated helpers, written in full: unwrap_model

    model = nn.DataParallel(net)
    torch.save(unwrap_model(model).state_dict(), path)
    new_state_dict = OrderedDict(state_dict)
    consume_prefix_in_state_dict_if_present(new_state_dict, "module.")
    ```

    ## Fix safety
    Safe. The library call removes `module.` only where a key starts with it, so checkpoints
    with and without the prefix both load; the hand-written idioms gave the same keys whenever
    they worked. Loading into `unwrap_model(model)` works whether or not `model` is wrapped.
    `k.replace('module.', '')` also removed `module.` inside a key (a submodule named `module`);
    the library call does not.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.modules.utils.consume_prefix_in_state_dict_if_present.html
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-torch-nn-dataparallel-models
    """

    # Its sites are on trigger lines, and on the `save`/`state_dict` lines of a wrapped model; its
    # other passes read the wrapper assignments and the hand-written strips (survey.py).
    PRUNE = True


__all__ = ["StateDictPrefix"]
