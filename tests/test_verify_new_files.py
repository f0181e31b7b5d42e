"""verify and `run --verify` when the migration adds a file: TM103's companion module
`ddp_helpers.py`, imported by the training script it rewrites (engine/companions.py).

The new file has no before side: it is in the diff as a new file, counts no rewrite of its own,
and `run --verify` creates it only where no file of that name has appeared meanwhile.
"""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from codemods.cli import main
from codemods.verify import VerifyOptions, verify
from codemods.verify.apply import apply_verified

from tests.conftest import PROJECTS

HELPERS = PROJECTS.parent.parent / "codemods" / "runtime" / "ddp_helpers.py"


def _copy(tmp_path):
    target = tmp_path / "ddp_train"
    shutil.copytree(PROJECTS / "ddp_train", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_verify_reports_the_new_module_and_run_verify_writes_it(tmp_path) -> None:
    project = _copy(tmp_path)
    result = CliRunner().invoke(main, ["verify", str(project), "--device", "cpu", "--rerun", "0", "--no-culprits", "--format", "json"])
    data = json.loads(result.stdout)
    assert data["exit_code"] == 0, data["message"]
    assert {f["path"]: (f["added"], f["removed"]) for f in data["diffstat"]}["ddp_helpers.py"][1] == 0
    assert all(u["path"] != "ddp_helpers.py" for u in data["coverage"]["unexercised"])
    assert not (project / "ddp_helpers.py").exists()  # verify never writes into the project
    written = CliRunner().invoke(main, ["run", str(project), "--verify", "--device", "cpu", "--rerun", "0"])
    assert written.exit_code == 0, written.output
    assert (project / "ddp_helpers.py").read_bytes() == HELPERS.read_bytes()
    assert "from ddp_helpers import" in (project / "train.py").read_text()


def test_a_file_of_that_name_that_appears_while_verifying_is_never_overwritten(tmp_path) -> None:
    project = _copy(tmp_path)
    options = VerifyOptions(rerun=0, device="cpu", find_culprits=False)
    report = verify(project, options)
    assert report.exit_code == 0, report.message
    (project / "ddp_helpers.py").write_text("# the user's own\n")
    applied = apply_verified(project, report, options)
    assert (project / "ddp_helpers.py").read_text() == "# the user's own\n"
    assert applied.exit_code == 2, applied.message
