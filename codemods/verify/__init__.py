"""Differential verification: run the project's own tests (or a probe) before and after migrating.

    from codemods.verify import verify, VerifyOptions
    report = verify("path/to/repo", VerifyOptions(tests="python -m pytest -x"))
"""

from codemods.verify.core import verify
from codemods.verify.model import ProbeResult, SideRun, VerifyOptions, VerifyReport
from codemods.verify.apply import apply_verified

__all__ = ["verify", "apply_verified", "VerifyOptions", "VerifyReport", "ProbeResult", "SideRun"]
