"""The smoke check's probe: run by each side's own interpreter (any torch, Python 3.8+), in its copy.

    python smoke_probe.py PLAN.json RESULTS.jsonl

It imports nothing of torch-migrate. For each check of the plan, in order, it writes a line
`{"start": id}`, then `{"id": ..., "outcome": "passed" | "error", "message": ..., "data": ...}`,
flushed, so that the caller knows which check a crash or a hang happened in and can start it
again after that check. Modules are imported (never run as `__main__`) with `sys.argv` empty of
arguments; each check has `timeout` seconds (SIGALRM). A model is built with the torch RNG
seeded identically on every side; what is recorded is plain JSON (lists of numbers), since the
sides may run different torch versions: its state-dict keys and shapes, a summary of each tensor
(sum, absolute sum, up to SAMPLE evenly spaced values), and on the first derived input that it
accepts, the forward output and the gradients of its sum.
"""

import importlib
import json
import random
import re
import signal
import sys
import traceback

SAMPLE = 64
SEED = 0
# Errors that say the derived input did not fit the model (try the next shape), not that the code is broken.
SHAPE_ERROR = re.compile(
    r"size|shape|dimension|\bdims?\b|mat1|mat2|channel|expected|Expected|must match|out of range|index|unpack|argument",
)


class CheckTimeout(BaseException):  # BaseException: a project's `except Exception` must not swallow it
    pass


def _alarm(signum, frame):
    raise CheckTimeout()


def _message(exc):
    if isinstance(exc, CheckTimeout):
        return "timed out (top-level work: training, downloading, waiting?)"
    if isinstance(exc, SystemExit):
        return "exited with SystemExit({!r}) (parses sys.argv, or stops on purpose?)".format(exc.code)
    text = "{}: {}".format(type(exc).__name__, exc)
    return " ".join(text.split())[:300]


def summary(tensor):
    import torch

    t = tensor.detach().to("cpu")
    flat = t.reshape(-1)
    if t.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if not (flat.is_floating_point() or t.is_complex()):
        flat = flat.double()
    flat = flat.double()
    n = flat.numel()
    picks = list(range(n)) if n <= SAMPLE else [i * (n - 1) // (SAMPLE - 1) for i in range(SAMPLE)]
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype),
        "sum": float(flat.sum()) if n else 0.0,
        "abs": float(flat.abs().sum()) if n else 0.0,
        "sample": [float(flat[i]) for i in picks],
    }


def tensors_in(value, out, prefix="out"):
    """The tensors of a forward's output, by a path name (`out[0]`, `out['logits']`)."""
    import torch

    if isinstance(value, torch.Tensor):
        out.append((prefix, value))
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            tensors_in(item, out, "{}[{}]".format(prefix, i))
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            tensors_in(value[key], out, "{}[{!r}]".format(prefix, key))
    return out


def first_leaf(model):
    for module in model.modules():
        if not list(module.children()):
            return module
    return None


def inputs_for(model):
    """Candidate inputs, by the first layer: a few small shapes, generated under a fixed seed."""
    import torch

    leaf = first_leaf(model)
    if leaf is None:
        return []
    kind = type(leaf).__name__
    shapes = []
    if hasattr(leaf, "in_channels") and "Conv" in kind:
        dims = len(getattr(leaf, "kernel_size", (1, 1)))
        shapes = [(2, leaf.in_channels) + (side,) * dims for side in (32, 64, 16, 224)]
    elif hasattr(leaf, "in_features"):
        shapes = [(2, leaf.in_features), (2, 8, leaf.in_features)]
    elif hasattr(leaf, "num_embeddings"):
        return [("long", (2, 16), leaf.num_embeddings), ("long", (2, 4), leaf.num_embeddings)]
    elif hasattr(leaf, "input_size") and hasattr(leaf, "hidden_size"):
        first = (2, 5) if getattr(leaf, "batch_first", False) else (5, 2)
        shapes = [first + (leaf.input_size,)]
    elif hasattr(leaf, "num_features"):
        shapes = [(2, leaf.num_features), (2, leaf.num_features, 32, 32), (2, leaf.num_features, 16)]
    elif hasattr(leaf, "normalized_shape"):
        shapes = [(2,) + tuple(leaf.normalized_shape), (2, 8) + tuple(leaf.normalized_shape)]
    del torch
    return [("float", shape, None) for shape in shapes]


def make_input(spec, device):
    import torch

    kind, shape, high = spec
    generator = torch.Generator().manual_seed(SEED + 1)
    if kind == "long":
        return torch.randint(0, high, shape, generator=generator).to(device)
    return torch.randn(shape, generator=generator).to(device)


def seed_everything():
    import torch

    random.seed(SEED)
    torch.manual_seed(SEED)
    try:
        import numpy

        numpy.random.seed(SEED)
    except ImportError:
        pass


def run_model(check, device):
    import ast

    import torch

    cls = getattr(importlib.import_module(check["module"]), check["cls"])
    if check.get("site_module"):  # arguments naming the calling module's own classes and constants
        namespace = dict(vars(importlib.import_module(check["site_module"])))
        value = lambda text: eval(compile(text, "<smoke>", "eval"), namespace)  # noqa: E731
    else:
        value = ast.literal_eval
    args = [value(a) for a in check["args"]]
    kwargs = {k: value(v) for k, v in check["kwargs"].items()}
    seed_everything()
    model = cls(*args, **kwargs)
    state = model.state_dict()
    data = {"state": [[k, summary(v)] for k, v in state.items()], "input": None, "forward": None, "grads": None}
    model = model.to(device).eval()
    problems = []
    for spec in inputs_for(model):
        x = make_input(spec, device)
        seed_everything()
        model.zero_grad()
        try:
            out = model(x)
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - the model's own error is the result
            message = _message(exc)
            if not SHAPE_ERROR.search(message) or isinstance(exc, (AttributeError, NameError, ImportError, NotImplementedError)):
                raise
            problems.append(message)
            continue
        found = tensors_in(out, [])
        data["input"] = [spec[0], list(spec[1])]
        data["forward"] = [[name, summary(t)] for name, t in found]
        loss = sum(t.float().sum() for _, t in found if t.requires_grad and (t.is_floating_point() or t.is_complex()))
        if torch.is_tensor(loss) and loss.requires_grad:
            loss.backward()
            data["grads"] = [[n, summary(p.grad) if p.grad is not None else None] for n, p in model.named_parameters()]
        return data
    data["no_input"] = problems[-1] if problems else "no input could be derived from its first layer"
    return data


def run_check(check, device):
    if check["kind"] == "import":
        importlib.import_module(check["module"])
        return None
    return run_model(check, device)


def main(argv):
    plan = json.load(open(argv[1]))
    sys.path[:0] = plan["roots"]
    sys.argv = [argv[0]]
    signal.signal(signal.SIGALRM, _alarm)
    with open(argv[2], "a") as out:
        for check in plan["checks"]:
            out.write(json.dumps({"start": check["id"]}) + "\n")
            out.flush()
            result = {"id": check["id"], "outcome": "passed", "message": "", "data": None}
            signal.setitimer(signal.ITIMER_REAL, plan["timeout"])
            try:
                result["data"] = run_check(check, plan["device"])
            except (Exception, SystemExit, CheckTimeout) as exc:  # noqa: BLE001
                signal.setitimer(signal.ITIMER_REAL, 0)
                result["outcome"], result["message"] = "error", _message(exc)
                if plan.get("traceback"):
                    result["traceback"] = traceback.format_exc()[-2000:]
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            out.write(json.dumps(result) + "\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv)
