"""The torch probe: what an interpreter, and the torch it imports, say about themselves.

One probe for both askers: `doctor` calls `describe()` in this interpreter; `verify` runs this
module's source in the target interpreter (`python -c SOURCE [cpu]`, from a neutral folder) and
reads the line it prints. Because of the second use this module imports nothing from `codemods`
and stays plain Python that any interpreter with an old torch runs (no annotations, no f-strings).
"""

import importlib.util
import json
import sys

MARKER = "TORCH_MIGRATE_DEVICE "  # the line of the script's output that carries the answer


def describe(quick=False):
    """The interpreter and its torch as a plain dict (JSON-ready).

    `quick`: GPUs are hidden, so only torch's version matters, and importing torch costs
    seconds: the version is read from the installed package's metadata instead (a torch that is
    installed but does not import then shows as the tests' errors). `error` is "Type: message"
    of the first failure; `imported` says whether `import torch` got that far (a failure after
    it is in the CUDA calls).
    """
    info = {
        "python": sys.version.split()[0], "executable": sys.executable, "torch": None,
        "cuda_available": False, "cuda_version": None, "devices": [], "error": None, "imported": False,
        "pytest": importlib.util.find_spec("pytest") is not None,
    }  # fmt: skip
    try:
        if quick:
            from importlib import metadata  # not `import importlib.metadata`: that makes `importlib` local

            if importlib.util.find_spec("torch") is not None:
                info["torch"] = metadata.version("torch")
        else:
            import torch

            info["imported"] = True
            info["torch"] = str(torch.__version__)
            info["cuda_version"] = torch.version.cuda
            info["cuda_available"] = bool(torch.cuda.is_available())
            if info["cuda_available"]:
                info["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception as exc:  # ImportError, or a broken install raising anything
        info["error"] = "%s: %s" % (type(exc).__name__, exc)
    return info


def source():
    """This module's text, for `python -c` in another interpreter."""
    from importlib.resources import files

    return files("codemods").joinpath("torch_probe.py").read_text(encoding="utf-8")


if __name__ == "__main__":
    print(MARKER + json.dumps(describe(quick=sys.argv[1:] == ["cpu"])))
