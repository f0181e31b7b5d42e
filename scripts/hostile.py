#!/usr/bin/env python
"""The hostile corpus: thousands of mutated legacy files and hostile notebooks, run through the CLI.

    python scripts/hostile.py                      # 3,000 files + 185 notebooks, seeded, then the checks
    python scripts/hostile.py --files 300 --notebooks 60 --seed 7 --jobs 2
    python scripts/hostile.py --keep DIR            # generate into DIR and keep it (reproducers)

Inputs are mutations of real files (the corpus of scripts/corpus.py when it is cached, else the
bundled fixtures and this package's sources): truncated, NUL and invalid UTF-8 injected, tabs and
spaces swapped, line endings stripped, doubled, CRLF, CR or mixed, Python 2 constructs, BOMs and
coding cookies; and valid code that is hard to rewrite: each codemod's legacy idiom inside a
`match` case, an f-string (nested too), blocks nested up to CPython's limit, modern syntax, CRLF
files that get generated helpers. Notebooks: malformed JSON, other nbformat versions, `source`
as a string or a list (of non-strings too), missing keys, huge outputs, raw and markdown cells,
magics, CRLF, BOM.

The checks, over two runs of `python -m codemods run` (write, then --check):
no traceback; no internal error (and no crash) on a file that compiles with `compile()`, or on a
well-formed notebook whose code compiles; every rewritten file compiles; every file not
rewritten is byte-for-byte as it was; the second run changes nothing. Exit 1 on any failure,
each listed with the input that shows it. tests/test_hostile.py imports this module (its
generator for the API run, and `check` on a CI-sized corpus).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import runpy
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261129
LEGACY_TAIL = "\n\nimport torch.nn as nn\ncriterion = nn.MSELoss(size_average=False)\n"

# One legacy idiom per family of codemods, each a valid module on its own.
LEGACY = {
    "loss": "import torch.nn as nn\nimport torch.nn.functional as F\nc = nn.MSELoss(size_average=False)\nl = F.nll_loss(x, y, reduce=False)\n",
    "variable": "import torch\nfrom torch.autograd import Variable\nv = Variable(torch.zeros(2), requires_grad=True)\ns = v.sum().data[0]\n",
    "cuda": "import torch\nx = torch.zeros(2).cuda()\nt = torch.cuda.FloatTensor(3)\nx.cuda()\n",
    "amp": "import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n",
    "deprecated": "import torch\nimport torch.nn.functional as F\ny = F.upsample(x, scale_factor=2)\nr = torch.range(0, 4)\ng = torch.nn.utils.clip_grad_norm(p, 1.0)\n",
    "load": "import torch\nstate = torch.load('model.pt')\nmodel.load_state_dict(torch.load('w.pt'))\n",
    "torchvision": "import torchvision.models as models\nm = models.resnet18(pretrained=True)\n",
    "ddp": (
        "import argparse\nimport torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n\n"
        "def main():\n    parser = argparse.ArgumentParser()\n    args = parser.parse_args()\n"
        "    model = nn.DataParallel(nn.Linear(2, 2))\n    loader = DataLoader(data, batch_size=4, shuffle=True)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for epoch in range(2):\n        for x in loader:\n"
        "            loss = model(x).sum()\n            loss.backward()\n            opt.step()\n"
        "    torch.save(model.module.state_dict(), 'ckpt.pt')\n\nif __name__ == '__main__':\n    main()\n"
    ),
    "h5py": (
        "import h5py\nfrom torch.utils.data import Dataset\n\nclass Data(Dataset):\n"
        "    def __init__(self, path):\n        self.f = h5py.File(path, 'r')\n        self.n = len(self.f['x'])\n\n"
        "    def __len__(self):\n        return self.n\n\n    def __getitem__(self, i):\n        return self.f['x'][i]\n"
    ),
    "six": "from torch._six import string_classes\nok = isinstance(s, string_classes)\n",
    "compat": "import collections\nimport numpy as np\nok = isinstance(m, collections.Mapping)\nz = np.float(1)\n",
}
# Calls of those idioms, for the expressions of f-strings.
CALLS = ["nn.MSELoss(size_average=False)", "F.nll_loss(x, y, reduce=False)", "torch.zeros(2).cuda()",
         "torch.load('m.pt')", "F.upsample(x, scale_factor=2)", "models.resnet18(pretrained=True)"]  # fmt: skip
IMPORTS = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport torchvision.models as models\n"
MODERN = [
    "if (n := len(a)) > 3:\n    pass\n",
    "def f(a, /, b, *, c):\n    return a\n",
    "async def g(xs):\n    async for x in xs:\n        await x\n    return [y async for y in xs]\n",
    "try:\n    pass\nexcept* ValueError:\n    pass\n",
    "with (open('a') as a, open('b') as b):\n    pass\n",
    "first, *rest = [1, 2, 3]\n",
    "def h[T](x: T) -> T:\n    return x\n",  # 3.12: compiles or not, either is fine
    "type Alias = list[int]\n",
    "lam = lambda x=1, *a, **k: (x, a, k)\n",
    "print(f'{value!r:>{width}}', *args, sep='')\n",
    "@(lambda f: f)\ndef d():\n    global G\n    G = {k: v for k, v in {}.items()}\n",
]


def _indented(text: str, depth: int) -> str:
    return "".join("    " * depth + line if line.strip() else line for line in text.splitlines(keepends=True))


def _nest(text: str, depth: int, rng: random.Random) -> str:
    """`text` inside `depth` nested if/def/class blocks."""
    headers = []
    for i in range(depth):
        headers.append("    " * i + rng.choice([f"if c{i}:", f"def f{i}():", f"class C{i}:"]) + "\n")
    return "".join(headers) + _indented(text, depth)


def _in_match(text: str) -> str:
    return "match mode:\n    case 'train' | 'eval':\n" + _indented(text, 2) + "    case _:\n        pass\n"


def _fstrings(rng: random.Random) -> str:
    call = rng.choice(CALLS)
    forms = [f'print(f"{{{call}}}")', f"print(f'{{{call}}}')", f'print(f"""{{{call}}}""")',
             f"print(f'{{f\"{{{call}}}\"}}')", f"print(f'''{{f\"{{{call}}}\"}}''')", f'print(f"{{f\'{{{call}}}\'}}")']  # fmt: skip
    return IMPORTS + "x = y = None\n" + "".join(rng.choice(forms) + "\n" for _ in range(3))


def _py2(data: bytes, rng: random.Random) -> bytes:
    constructs = [
        b"print 'loss', loss.data[0]\n", b"exec 'x = 1'\n", b"x = `y`\n", b"try:\n    pass\nexcept Exception, e:\n    raise\n",
        b"mode = 0777\n", b"s = ur'raw'\n", b"if a <> b:\n    pass\n", b"y = t.cuda(async=True)\n",
        b"def f(x, async=False):\n    return x\n", b"raise ValueError, 'old'\n", b"long_int = 10L\n",
    ]  # fmt: skip
    lines = data.splitlines(keepends=True)
    at = rng.randrange(len(lines) + 1)
    while at < len(lines) and lines[at][:1] in (b" ", b"\t"):  # top level: the construct is the problem
        at += 1
    return b"".join(lines[:at]) + rng.choice(constructs) + b"".join(lines[at:])


def mutations(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    """(kind, bytes) of each mutation of one base file: broken ones and hard valid ones."""
    n = len(data)
    lines = data.splitlines(keepends=True)
    legacy = LEGACY[rng.choice(sorted(LEGACY))]
    crlf = lambda b: b.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")  # noqa: E731
    return [
        ("truncate", data[: rng.randrange(n)]),
        ("truncate", data[: rng.randrange(n)]),
        ("nul", (lambda i: data[:i] + b"\0" + data[i:])(rng.randrange(n))),
        ("bad-utf8", (lambda i: data[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]) + data[i:])(rng.randrange(n))),
        ("spaces-to-tab", b"".join(l.replace(b"    ", b"\t", 1) if rng.random() < 0.3 else l for l in lines)),
        ("tabs-to-spaces", data.replace(b"\t", b"  ")),
        ("strip-eol", (lambda i: b"".join(l.rstrip(b"\r\n") if j == i else l for j, l in enumerate(lines)))(rng.randrange(len(lines)))),
        ("double-eol", (lambda i: b"".join(l + b"\n" if j == i else l for j, l in enumerate(lines)))(rng.randrange(len(lines)))),
        ("crlf", crlf(data)),
        ("cr-only", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")),
        ("mixed-eol", b"".join(l.rstrip(b"\n") + rng.choice([b"\n", b"\r\n"]) if l.endswith(b"\n") else l for l in lines)),
        ("no-final-eol", data.rstrip(b"\r\n")),
        ("py2", _py2(data, rng)),
        ("bom", b"\xef\xbb\xbf" + data),
        ("latin1-cookie", b"# -*- coding: latin-1 -*-\n" + data.replace(b"\xc3", b"")),
        ("bogus-cookie", b"# -*- coding: no-such-codec -*-\n" + data),
        ("trailing-ws", b"".join(l.rstrip(b"\r\n") + b"   \t\n" if rng.random() < 0.2 else l for l in lines)),
        ("match", _in_match(legacy).encode()),
        ("match-tail", data + b"\n" + _in_match(legacy).encode()),
        ("fstring", _fstrings(rng).encode()),
        ("deep", _nest(legacy, rng.randrange(20, 96), rng).encode()),
        ("modern", data + b"\n" + rng.choice(MODERN).encode() + legacy.encode()),
        ("crlf-legacy", crlf(data + b"\n" + legacy.encode())),
        ("bom-crlf-legacy", b"\xef\xbb\xbf" + crlf(legacy.encode() + data)),
    ]  # fmt: skip


def bases(seed: int = SEED, count: int = 80) -> tuple[str, list[bytes]]:
    """Small real files to mutate: the corpus when it is cached, else our fixtures and sources.
    Files the pipeline really parses first, then others with a legacy line appended so that they
    reach the parser and the codemods as well."""
    from codemods import registry

    origin = "corpus"
    try:
        corpus = runpy.run_path(str(ROOT / "scripts" / "corpus.py"))
        dirs = corpus["ensure"](log=lambda *_: None)
        paths = [p for root in dirs.values() for p in corpus["python_files"](root)]
    except BaseException:  # pytest's skip/fail are BaseExceptions; no corpus is fine here
        origin = "fixtures and package sources"
        paths = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "codemods").rglob("*.py"))
    specs = registry.select()
    rng = random.Random(seed)
    rng.shuffle(paths)
    firing, other = [], []
    for path in paths:
        data = path.read_bytes()
        if 200 < len(data) < 6000:
            text = data.decode("utf-8", "replace")
            (firing if any(s.fires_on(text) for s in specs) else other).append(data)
    half = firing[: count // 2]
    return origin, half + [t + LEGACY_TAIL.encode() for t in other[: max(0, count - len(half))]]


def compiles(data: bytes) -> bool:
    """Whether CPython compiles this file's bytes (its BOM and coding cookie honoured)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<hostile>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False


def generate_files(root: Path, count: int, seed: int = SEED) -> tuple[str, dict[Path, str]]:
    """`count` mutated files under `root` (20 folders): where the bases came from, and each
    path's mutation kind."""
    origin, found = bases(seed, max(40, count // 20))
    if len(found) < 20:
        raise SystemExit(f"too few base files from the {origin}")
    rng = random.Random(seed)
    kinds: dict[Path, str] = {}
    i = 0
    while len(kinds) < count:
        for kind, mutated in mutations(found[i % len(found)], rng):
            if len(kinds) == count:
                break
            path = root / f"d{i % 20:02d}" / f"m{len(kinds):05d}_{kind}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(mutated)
            kinds[path] = kind
        i += 1
    return origin, kinds


def _notebook(cells: list, **keys) -> dict:
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5, **keys}


def _cell(source, kind: str = "code", outputs: list | None = None) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=outputs or [])
    return cell


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _notebook_kinds(rng: random.Random) -> dict[str, object]:
    """One hostile notebook of each kind: kind -> its JSON value (or its bytes)."""
    legacy = LEGACY[rng.choice(sorted(LEGACY))]
    magics = "%matplotlib inline\n!pip install -q torch\nfiles = !ls\nnn.L1Loss?\n"
    good = _notebook([_cell(_lines(legacy))])
    huge = [{"output_type": "stream", "name": "stdout", "text": ["x" * 100 + "\n"] * 8000}]
    return {
        "list-source": good,
        "string-source": _notebook([_cell(legacy)]),
        "split-cells": _notebook([_cell(_lines(line)) for line in _lines(legacy)]),
        "magics": _notebook([_cell(_lines(magics + legacy))]),
        "cell-magic": _notebook([_cell("%%time\n" + legacy), _cell("%%bash\necho size_average=False\n")]),
        "raw-markdown": _notebook([_cell(legacy, "raw"), _cell(legacy, "markdown"), _cell(_lines(legacy))]),
        "huge-output": _notebook([_cell(_lines(legacy), outputs=huge)]),
        "no-final-newline": _notebook([_cell(legacy.rstrip("\n"))]),
        "empty-cells": _notebook([_cell([]), _cell(""), _cell(_lines(legacy))]),
        "no-cells": _notebook([]),
        "minor-0": _notebook([_cell(legacy)], nbformat_minor=0),
        "syntax-error": _notebook([_cell("def broken(:\n" + legacy)]),
        "bad-json": json.dumps(good)[: rng.randrange(1, 200)],
        "empty-file": "",
        "nbformat-3": {"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [{"cell_type": "code", "input": legacy}]}]},
        "nbformat-5": _notebook([_cell(legacy)], nbformat=5),
        "nbformat-text": _notebook([_cell(legacy)], nbformat="4"),
        "nbformat-null": _notebook([_cell(legacy)], nbformat=None),
        "no-nbformat": {"cells": [_cell(legacy)], "metadata": {}},
        "source-ints": _notebook([_cell([*_lines(legacy), 1, 2.5])]),
        "source-null-entry": _notebook([_cell([None, *_lines(legacy)])]),
        "source-nested-list": _notebook([_cell([_lines(legacy)])]),
        "source-null": _notebook([_cell(None)]),
        "source-object": _notebook([_cell({"text": legacy})]),
        "source-missing": _notebook([{"cell_type": "code", "metadata": {}, "outputs": []}, _cell(legacy)]),
        "cell-type-missing": _notebook([{"source": legacy}, _cell(legacy)]),
        "cell-not-object": _notebook([legacy, _cell(legacy)]),
        "cells-object": _notebook({"0": _cell(legacy)}),
        "top-list": [_cell(legacy)],
        "top-string": json.dumps(legacy),
        "python-text": legacy,
    }


def _notebook_bytes(value: object, rng: random.Random) -> tuple[str, bytes]:
    """The notebook serialised as some tool might have written it: indent, CRLF, BOM."""
    text = value if isinstance(value, str) else json.dumps(value, indent=rng.choice([1, 1, 2, 4, None]), ensure_ascii=rng.random() < 0.2)
    text += "\n" if rng.random() < 0.8 else ""
    layout = rng.choice(["lf", "lf", "lf", "crlf", "bom", "bom-crlf"])
    if "crlf" in layout:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    return layout, (b"\xef\xbb\xbf" + data if layout.startswith("bom") else data)


def generate_notebooks(root: Path, count: int, seed: int = SEED) -> dict[Path, str]:
    """`count` hostile notebooks under `root`, every kind in turn: path -> kind and layout."""
    rng = random.Random(seed + 1)
    root.mkdir(parents=True, exist_ok=True)
    kinds: dict[Path, str] = {}
    while len(kinds) < count:
        for kind, value in _notebook_kinds(rng).items():
            if len(kinds) == count:
                break
            layout, data = _notebook_bytes(value, rng)
            path = root / f"n{len(kinds):04d}_{kind}.ipynb"
            path.write_bytes(data)
            kinds[path] = f"{kind}, {layout}"
    return kinds


def well_formed(data: bytes) -> bool:
    """Whether a notebook is valid nbformat 4 as far as the migration reads it (code cells'
    `source` text or lists of text) and each of its code cells, IPython lines left out, compiles."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(notebook, dict) or type(notebook.get("nbformat")) is not int or notebook["nbformat"] != 4:
        return False
    cells = notebook.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        return False
    code = []
    for cell in cells:
        source = cell.get("source", "")
        if cell.get("cell_type") != "code":
            continue
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            return False
        if not source.lstrip().startswith("%%") or source.lstrip().startswith("%%time"):
            lines = source.splitlines()
            code.append("\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")) and not line.rstrip().endswith("?") and "= !" not in line))
    return all(compiles(cell.encode()) for cell in code)  # Jupyter compiles each cell on its own


@dataclass
class Outcome:
    """What the two runs did, and every check that failed (each naming its input)."""

    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    reported: dict[str, list[str]] = field(default_factory=dict)  # why valid inputs were left as they are: their paths


def _cli(args: list[str], jobs: int) -> tuple[dict, str]:
    command = [sys.executable, "-m", "codemods", "run", *args, "--no-config", "--no-cache", "--format", "json", "-j", str(jobs)]
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", cwd=ROOT)
    output = done.stdout + done.stderr
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {"files": []}
        output += f"\n(no JSON report; exit {done.returncode})"
    return report, output


def check(root: Path, kinds: dict[Path, str], jobs: int = 2) -> Outcome:
    """Run the CLI twice over `root` and check every input (see the module's docstring)."""
    before = {path: path.read_bytes() for path in kinds}
    valid = {path: (well_formed(data) if path.suffix == ".ipynb" else compiles(data)) for path, data in before.items()}
    outcome = Outcome()
    counts, failures = outcome.counts, outcome.failures
    first, output = _cli([str(root)], jobs)
    if "Traceback" in output:
        failures.append(f"traceback in the first run:\n{output[-3000:]}")
    results = {Path(f["path"]).resolve(): f for f in first["files"]}
    for path, data in before.items():
        result = results.get(path.resolve(), {"status": "unchanged"})  # the report lists files with news
        kind, after = kinds[path], path.read_bytes()
        counts["valid" if valid[path] else "invalid"] = counts.get("valid" if valid[path] else "invalid", 0) + 1
        status = result["status"]
        counts[status] = counts.get(status, 0) + 1
        reason = (result.get("error") or {}).get("reason", "")
        if status == "error" and valid[path]:
            outcome.reported.setdefault(reason.split(" (")[0].split(":")[0][:70], []).append(f"{path} ({kind})")
            if reason.startswith("internal error") or "crashed" in reason or not reason.strip():
                failures.append(f"{path} ({kind}): valid input, but: {reason or 'no reason'}")
        if status == "changed":
            if path.suffix == ".py" and not compiles(after):
                failures.append(f"{path} ({kind}): rewritten into code that does not compile")
            if path.suffix == ".ipynb" and not well_formed(after):
                failures.append(f"{path} ({kind}): rewritten into a notebook that is not well formed")
        elif after != data:
            failures.append(f"{path} ({kind}): {status}, but its bytes changed")
    second, output = _cli([str(root), "--check"], jobs)
    if "Traceback" in output:
        failures.append(f"traceback in the second run:\n{output[-3000:]}")
    again = [f for f in second["files"] if f["status"] == "changed"]
    counts["changed again"] = len(again)
    failures += [f"{f['path']}: not idempotent (the second run changes it again: {f['rewrites']})" for f in again]
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--notebooks", type=int, default=185)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    origin, kinds = generate_files(root / "files", args.files, args.seed)
    kinds.update(generate_notebooks(root / "notebooks", args.notebooks, args.seed))
    outcome = check(root, kinds, args.jobs)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(outcome.counts.items()))
    print(f"hostile corpus (seed {args.seed}, mutations of the {origin}): {args.files} files, {args.notebooks} notebooks: {counts}")
    for reason, paths in sorted(outcome.reported.items(), key=lambda item: -len(item[1])):
        print(f"  valid input left as it is, {len(paths)}x: {reason} (e.g. {paths[0]})")
    for failure in outcome.failures:
        print(f"FAIL {failure}")
    if outcome.failures:
        print(f"{len(outcome.failures)} failure(s); the inputs are kept in {root}")
        return 1
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
