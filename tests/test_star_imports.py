"""Names that arrive by a star import or a re-export (issue 15 §3): torch's own star imports
(a checked-in table), and the repository's modules (`from utils import *`, `from .imports
import *`, `from mypkg.torch_utils import Variable`) through the whole-repo facts."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from codemods import api, registry
from codemods.helpers.context import FileContext
from codemods.helpers.facts import collect_facts
from codemods.helpers.names import Imports
from codemods.helpers.scan import Scan

ROOT = Path(__file__).resolve().parents[1]

REPO = {
    "utils.py": """
        import collections
        import numpy as np
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.autograd import Variable
        from helpers import *

        def to_var(x):
            return Variable(x)

        _hidden = torch.zeros(1)
    """,
    "helpers.py": """
        from utils import *  # a cycle: utils star-imports this module too
        from torch.nn import DataParallel as DP

        __all__ = ["DP", "Wrapped"]

        class Wrapped(object):
            pass
    """,
    "train.py": """
        from utils import *


        def step(model, x):
            model = nn.DataParallel(model)
            out = model(Variable(x))
            return F.relu(out), DP, np.float, to_var, _hidden
    """,
    "mypkg/__init__.py": "",
    "mypkg/torch_utils.py": """
        from torch.autograd import Variable
        from torch.nn import DataParallel
    """,
    "mypkg/models/__init__.py": "",
    "mypkg/models/net.py": """
        from ..torch_utils import Variable
        from mypkg import torch_utils
        import mypkg.torch_utils as tu
        from mypkg.torch_utils import DataParallel as Wrap


        def run(model, x):
            return Wrap(model)(Variable(x)), torch_utils.Variable(x), tu.DataParallel(model)
    """,
    "pkg/__init__.py": "",
    "pkg/imports.py": """
        import torch
        from torch.autograd import Variable
    """,
    "pkg/loop.py": """
        from .imports import *


        def loss_of(x):
            return Variable(x, requires_grad=True)
    """,
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in REPO.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def _facts(repo: Path):
    return collect_facts((str(p), p.read_text()) for p in sorted(repo.rglob("*.py")))


def _resolver(repo: Path, name: str):
    """Both sides' resolution of a dotted expression in one file of the repo."""
    path = repo / name
    text, facts = path.read_text(), _facts(repo)
    imports = Imports.of(cst.parse_module(text), FileContext(path=str(path), facts=facts))
    scan = Scan.of(text, facts, str(path))

    def resolve(expr: str) -> tuple[str | None, set[str]]:
        return imports.resolve(cst.parse_expression(expr)), scan.qualified(ast.parse(expr, mode="eval").body)

    return resolve


def test_a_star_import_of_a_repository_module_binds_its_names_transitively(repo: Path) -> None:
    resolve = _resolver(repo, "train.py")
    assert resolve("nn.DataParallel") == ("torch.nn.DataParallel", {"torch.nn.DataParallel"})
    assert resolve("Variable") == ("torch.autograd.Variable", {"torch.autograd.Variable"})
    assert resolve("F.relu")[0] == "torch.nn.functional.relu"
    assert resolve("np.float")[0] == "numpy.float"
    assert resolve("collections.Mapping")[0] == "collections.Mapping"
    assert resolve("DP")[0] == "torch.nn.DataParallel"  # through helpers' __all__, across the cycle
    # The repository's own function and a private name are not torch's.
    assert resolve("to_var") == (None, set()) and resolve("_hidden") == (None, set())


def test_all_limits_what_a_star_import_binds(repo: Path) -> None:
    (repo / "helpers.py").write_text('from torch.nn import DataParallel as DP\n__all__ = ["Wrapped"]\n')
    assert _resolver(repo, "train.py")("DP") == (None, set())


def test_a_relative_star_import_and_re_exports_resolve(repo: Path) -> None:
    assert _resolver(repo, "pkg/loop.py")("Variable")[0] == "torch.autograd.Variable"
    resolve = _resolver(repo, "mypkg/models/net.py")
    for expr, qualified in [
        ("Variable", "torch.autograd.Variable"),
        ("Wrap", "torch.nn.DataParallel"),
        ("torch_utils.Variable", "torch.autograd.Variable"),
        ("tu.DataParallel", "torch.nn.DataParallel"),
    ]:
        assert resolve(expr) == (qualified, {qualified}), expr


def test_a_module_the_repository_does_not_hold_is_not_guessed(repo: Path) -> None:
    (repo / "other.py").write_text("from somewhere_else import *\n\nx = Variable(1)\n")
    assert _resolver(repo, "other.py")("Variable") == (None, set())


def test_torch_star_imports_resolve_without_the_repository() -> None:
    source = "from torch.autograd import *\nfrom torch.nn import *\nimport torch\n\nm = DataParallel(Linear(2, 2))\ny = Variable(x)\n"
    result = api.transform_source(source, [registry.get("TM002")])
    assert "y = x.detach()\n" in result.code  # x is bound elsewhere: it may require grad
    scan = Scan.of(source)
    assert scan.qualified(ast.parse("DataParallel", mode="eval").body) == {"torch.nn.DataParallel"}
    # A look-alike: the module's own Variable shadows the star import.
    own = "from torch.autograd import *\n\n\ndef Variable(x):\n    return [x]\n\n\ny = Variable(1)\n"
    assert api.transform_source(own, [registry.get("TM002")]).code == own


def test_migrate_removes_variable_that_arrived_by_a_star_import(repo: Path) -> None:
    report = api.migrate([str(repo)], api.Options(mode="write", select=("TM002",), cache=False, use_config=False))
    assert report.exit_code in (0, 1)
    assert "out = model(x.detach())" in (repo / "train.py").read_text()
    # utils.py no longer uses Variable, but train.py star-imports it from there: its import stays.
    utils = (repo / "utils.py").read_text()
    assert "return x.detach()\n" in utils and "from torch.autograd import Variable\n" in utils
    # Names that came by a re-export go with the import that brought them, relative or not.
    net = (repo / "mypkg/models/net.py").read_text()
    assert "return Wrap(model)(x.detach()), x.detach(), tu.DataParallel(model)" in net
    assert "from ..torch_utils import Variable" not in net and "from mypkg import torch_utils\n" not in net
    # Where removing the call would leave a star import unused, the output guard keeps the file
    # as it is, with a finding: the file still compiles either way.
    assert "Variable(x, requires_grad=True)" in (repo / "pkg/loop.py").read_text()
    for name in ("pkg/loop.py", "mypkg/models/net.py", "utils.py", "train.py"):
        compile((repo / name).read_text(), name, "exec")



def test_the_star_table_matches_the_installed_torch() -> None:
    pytest.importorskip("torch")
    check = subprocess.run([sys.executable, "scripts/gen_star_exports.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_a_cached_result_goes_stale_when_the_star_imported_module_changes(repo: Path, monkeypatch) -> None:
    """The per-file cache keys on the names a file takes from other modules: after `utils.py`
    stops giving `Variable`, `train.py`'s cached rewrite must not be served again."""
    monkeypatch.setenv("TORCH_MIGRATE_CACHE_DIR", str(repo / ".cache"))
    options = api.Options(mode="diff", select=("TM002",), use_config=False)
    first = api.migrate([str(repo)], options)
    assert any(f.path.endswith("train.py") and f.rewrites for f in first.files)
    utils = repo / "utils.py"
    utils.write_text(utils.read_text().replace("from torch.autograd import Variable", "from mylib import Variable"))
    second = api.migrate([str(repo)], options)
    assert not any(f.path.endswith("train.py") and f.rewrites for f in second.files)
    # An unrelated edit elsewhere leaves train.py's entry valid (a hit, the same result).
    (repo / "mypkg/torch_utils.py").write_text((repo / "mypkg/torch_utils.py").read_text() + "\nX = 1\n")
    third = api.migrate([str(repo)], options)
    assert [f for f in third.files if f.path.endswith("train.py")] == [f for f in second.files if f.path.endswith("train.py")]


def test_star_imported_names_reach_every_name_resolving_codemod(repo: Path) -> None:
    """Not only TM002: `nn.DataParallel` from a star import is TM103's, `F.sigmoid` TM006's."""
    (repo / "infer.py").write_text("from utils import *\n\n\ndef score(x):\n    return F.sigmoid(x), np.ones(1)\n")
    report = api.migrate([str(repo)], api.Options(mode="diff", select=("TM006",), cache=False, use_config=False))
    (infer,) = [f for f in report.files if f.path.endswith("infer.py")]
    assert infer.rewrites == {"TM006": 1}, infer
    assert "+    return torch.sigmoid(x), np.ones(1)" in infer.diff, infer.diff


def test_an_import_another_file_takes_from_this_one_is_never_removed(repo: Path) -> None:
    """`torch_utils.py` stops using Variable itself; `net.py` still imports it from there."""
    (repo / "mypkg/torch_utils.py").write_text(
        "from torch.autograd import Variable\nfrom torch.nn import DataParallel\n\n\ndef wrap(x):\n    return Variable(x)\n"
    )
    (repo / "mypkg/models/net.py").write_text("from mypkg.torch_utils import Variable as V\n\nKEEP = V\n")
    report = api.migrate([str(repo)], api.Options(mode="write", select=("TM002",), cache=False, use_config=False))
    assert report.exit_code in (0, 1)
    text = (repo / "mypkg/torch_utils.py").read_text()
    assert "return x.detach()\n" in text and text.startswith("from torch.autograd import Variable\n")
    (utils,) = [f for f in report.files if f.path.endswith("torch_utils.py")]
    assert utils.rewrites == {"TM002": 1} and not utils.findings


def test_an_import_taken_by_a_file_that_never_names_torch_is_never_removed(tmp_path: Path) -> None:
    """`train.py` says neither torch nor anything a codemod looks for; it imports `Variable` from
    `utils.py`, which no longer uses it itself: `utils.py` keeps the import."""
    _write(tmp_path, {
        "utils.py": "from torch.autograd import Variable\n\n\ndef wrap(x):\n    return Variable(x)\n",
        "train.py": "from utils import Variable\n\nKEEP = Variable\n",
    })  # fmt: skip
    api.migrate([str(tmp_path)], api.Options(mode="write", select=("TM002",), cache=False, use_config=False))
    text = (tmp_path / "utils.py").read_text()
    assert "return x.detach()\n" in text and text.startswith("from torch.autograd import Variable\n")


def test_only_the_names_other_files_take_are_kept(repo: Path) -> None:
    """`from mypkg.torch_utils import wrap` takes `wrap`, not the module's Variable import: that
    one goes once unused; `import mypkg.torch_utils` (any attribute) would keep it."""
    (repo / "mypkg/torch_utils.py").write_text("from torch.autograd import Variable\n\n\ndef wrap(x):\n    return Variable(x)\n")
    (repo / "mypkg/models/net.py").write_text("from mypkg.torch_utils import wrap\n\nKEEP = wrap\n")
    options = api.Options(mode="diff", select=("TM002",), cache=False, use_config=False)
    (utils,) = [f for f in api.migrate([str(repo)], options).files if f.path.endswith("torch_utils.py")]
    assert "-from torch.autograd import Variable" in utils.diff
    (repo / "mypkg/models/net.py").write_text("import mypkg.torch_utils\n\nKEEP = mypkg.torch_utils.wrap\n")
    (utils,) = [f for f in api.migrate([str(repo)], options).files if f.path.endswith("torch_utils.py")]
    assert utils.rewrites == {"TM002": 1} and "-from torch.autograd import Variable" not in utils.diff


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def test_a_renamed_import_that_other_files_take_keeps_its_local_name(tmp_path: Path) -> None:
    """TM008 moves `_LRScheduler` to `LRScheduler`; `train.py` imports `_LRScheduler` from the
    package (and `tools.py` star-imports it through `__all__`): the package keeps that name."""
    _write(tmp_path, {
        "pkg/__init__.py": "from torch.optim.lr_scheduler import _LRScheduler\n__all__ = ['_LRScheduler']\n",
        "train.py": "from pkg import _LRScheduler\n\n\nclass Warmup(_LRScheduler):\n    pass\n",
        "tools.py": "from pkg import *\n\n\nclass Cosine(_LRScheduler):\n    pass\n",
    })  # fmt: skip
    report = api.migrate([str(tmp_path)], api.Options(mode="write", select=("TM008",), cache=False, use_config=False))
    assert (tmp_path / "pkg/__init__.py").read_text().startswith("from torch.optim.lr_scheduler import LRScheduler as _LRScheduler\n")
    assert "class Warmup(_LRScheduler)" in (tmp_path / "train.py").read_text()
    assert "class Cosine(_LRScheduler)" in (tmp_path / "tools.py").read_text()
    assert not [f for r in report.files for f in r.findings if "not applied" in f.message]


def test_names_from_a_star_import_reach_codemods_whose_triggers_read_import_spellings(tmp_path: Path) -> None:
    """TM004's triggers look for `cuda.amp`; `train.py` only says `GradScaler()`, which
    `from utils.imports import *` gives it. The triggers and the statement map read it anyway."""
    _write(tmp_path, {
        "utils/__init__.py": "",
        "utils/imports.py": "import torch\nfrom torch.cuda.amp import GradScaler, autocast\n",
        "train.py": """
            from utils.imports import *

            scaler = GradScaler(enabled=False)
            with autocast(enabled=False):
                pass
        """,
    })  # fmt: skip
    api.migrate([str(tmp_path)], api.Options(mode="write", select=("TM004",), cache=False, use_config=False))
    train = (tmp_path / "train.py").read_text()
    assert 'scaler = torch.amp.GradScaler("cuda", enabled=False)' in train
    assert 'with torch.amp.autocast("cuda", enabled=False):' in train


UTILS = "from torch.autograd import Variable\n\n\ndef wrap(x):\n    return Variable(x)\n"


def _utils_after(tmp_path: Path, files: dict[str, str]):
    """Migrate (TM002) a repository whose utils.py stops using Variable: (its text, its report)."""
    _write(tmp_path, {"utils.py": UTILS, **files})
    report = api.migrate([str(tmp_path)], api.Options(mode="write", select=("TM002",), cache=False, use_config=False))
    (utils,) = [f for f in report.files if f.path.endswith("utils.py")]
    text = (tmp_path / "utils.py").read_text()
    assert "return x.detach()\n" in text
    for path in tmp_path.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    return text, utils


@pytest.mark.parametrize(
    "files",
    [
        {"train.py": "import utils as u\n\nprint(u.wrap(1))\n"},  # reads one attribute
        {"train.py": "import utils\n\nprint(getattr(utils, 'wrap')(1), hasattr(utils, 'x'))\n"},
        {"train.py": "from utils import *\n\nprint(wrap(1))\n"},  # reads by the star what it needs
        {"train.py": "from utils import *\nfrom torch.autograd import Variable\n\nprint(wrap(Variable(1)))\n"},  # its own
        {"pkg/__init__.py": "from utils import *\n", "train.py": "from pkg import wrap\n\nprint(wrap(1))\n"},  # passed on
        {"pkg/__init__.py": "from utils import *\n", "train.py": "import pkg\n\nprint(pkg.wrap(1))\n"},
    ],
    ids=["alias-attribute", "getattr-literal", "star-other-name", "star-own-binding", "star-chain-by-name", "star-chain-attribute"],
)
def test_an_import_no_other_file_reads_is_retired(tmp_path: Path, files: dict[str, str]) -> None:
    """Issue 37 §5: other files import the module, and none of them reads `Variable` from it
    (seq2seq_models.py's `import seq2seq_models as sm`): the unused import goes, without a word."""
    text, utils = _utils_after(tmp_path, files)
    assert "import Variable" not in text, text
    assert not utils.findings


@pytest.mark.parametrize(
    "files",
    [
        {"train.py": "import utils\n\nprint(utils.Variable(1))\n"},
        {"train.py": "from utils import *\n\nprint(Variable(1))\n"},
        {"train.py": "from torch.autograd import Variable\nfrom utils import *\n\nprint(Variable(1))\n"},  # the star's, last
        {"pkg/__init__.py": "from utils import *\n", "train.py": "from pkg import Variable\n\nprint(Variable)\n"},
        {"pkg/__init__.py": "from utils import *\n", "train.py": "from pkg import *\n\nprint(Variable)\n"},
        {"pkg/__init__.py": "from utils import *\n", "train.py": "import pkg.sub\n\nprint(pkg.Variable)\n", "pkg/sub.py": ""},
    ],
    ids=["alias-attribute", "star-read", "star-after-own", "star-chain-by-name", "star-chain-star", "dotted-import"],
)
def test_an_import_another_file_reads_stays_silently(tmp_path: Path, files: dict[str, str]) -> None:
    text, utils = _utils_after(tmp_path, files)
    assert text.startswith("from torch.autograd import Variable\n"), text


@pytest.mark.parametrize(
    "files",
    [
        {"train.py": "import utils\n\nmodel = utils.__dict__['wrap']\n"},
        {"train.py": "import utils\n\nmodel = getattr(utils, NAME)\n"},
        {"train.py": "import utils\n\nregistry = [utils]\n"},
        {"train.py": "from utils import *\n\nmodel = globals()['wrap']\n"},
        {"models/__init__.py": "from utils import *\n", "train.py": "import models\n\nnet = models.__dict__[NAME]()\n"},
    ],
    ids=["dict", "getattr-name", "module-passed-on", "globals", "mixup-cifar10"],
)
def test_an_import_kept_for_a_dynamic_reader_is_reported_on_its_line(tmp_path: Path, files: dict[str, str]) -> None:
    """A file reads the module's names dynamically (mixup-cifar10's `models.__dict__[name]()`):
    the import stays, since that may be `Variable`, and a finding on the import's own line
    says why it stays, instead of leaving an unused import without a word."""
    text, utils = _utils_after(tmp_path, files)
    assert text.startswith("from torch.autograd import Variable\n"), text
    (finding,) = [f for f in utils.findings if "no longer used" in f.message]
    assert (finding.line, finding.code) == (1, "TM002") and "`Variable`" in finding.message
