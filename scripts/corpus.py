#!/usr/bin/env python
"""Real code nobody here wrote: a pinned list of old PyTorch projects from PyPI, cached locally.

    python scripts/corpus.py                    # download (pip download --no-deps) + unpack; no-op when warm
    python scripts/corpus.py --dir DIR          # choose the cache (default: $TORCH_MIGRATE_CORPUS_DIR,
                                                #   else the user cache dir, ~/.cache/torch-migrate/corpus)
    python scripts/corpus.py --list             # where each project is, files and lines
    python scripts/corpus.py --update-expected  # re-run the pipeline, rewrite tests/data/corpus_expected.json

Every archive's sha256 is pinned below and checked after download and before unpacking, so the
corpus is the same bytes on every machine. Archives are unpacked without running any of their code
(sdists are only read as tar/zip; `pip download` of an sdist may run its setup.py to read metadata,
which is why the pinned hashes matter).

`tests/test_real_corpus.py` runs the whole pipeline over the unpacked projects and compares the
per-project summary (`summarise()` below) with `tests/data/corpus_expected.json`. When a codemod
changes on purpose, regenerate that file with `--update-expected`, read the diff, commit it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ROOT / "tests" / "data" / "corpus_expected.json"
ENV_DIR = "TORCH_MIGRATE_CORPUS_DIR"


@dataclass(frozen=True)
class Entry:
    name: str
    version: str
    kind: str  # "sdist" (has the tests, mostly) or "wheel" (no sdist, or the sdist does not build)
    filename: str
    sha256: str
    why: str  # which idioms it holds

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


CORPUS: tuple[Entry, ...] = (
    Entry("fastai", "1.0.61", "sdist", "fastai-1.0.61.tar.gz",
          "798b7602849cd6ed8791e6871dd4d15f72bf69ae9de7987e730bb65e7a2f938b",
          "DataParallel, hand-written module. stripping (torch_core.py), bare .cuda()"),
    Entry("pytorch3dunet", "1.9.6", "sdist", "pytorch3dunet-1.9.6.tar.gz",
          "d3124ebd334815105e76d2cc3e1ee6fb5e1ebe2984a30dc5ca92b25bba690872",
          "h5py datasets already opened correctly (must not change), torch.load"),
    Entry("deeprobust", "0.2.1", "sdist", "deeprobust-0.2.1.tar.gz",
          "d0aa7f439c7231275dddbf61ea2c9da8ca6c67e270fb4a1771f1ffd394a18e55",
          "size_average=False on F.cross_entropy / nn.KLDivLoss, Variable"),
    Entry("pyro-ppl", "0.1.2", "sdist", "pyro-ppl-0.1.2.tar.gz",
          "8fd95ccc49f45ed622dde4812e19e1a9e1fec6ccb4597342678157065daeedfb",
          "0.3-era: .data[0], Variable"),
    Entry("inferno-pytorch", "0.1.7", "sdist", "inferno-pytorch-0.1.7.tar.gz",
          "4ff7667e90be50b19d3c215c6f40666d9d527299d8f3d1cc739d99434894cc31",
          "Variable/volatile, .cuda(), torch._six"),
    Entry("simpletransformers", "0.48.14", "sdist", "simpletransformers-0.48.14.tar.gz",
          "9eb625c2dd852d00fbfe4f7097673f65f3e984d39e5a153d325e26e6f95b61b4",
          "torch.cuda.amp GradScaler/autocast"),
    Entry("pytorch-ignite", "0.1.0", "sdist", "pytorch-ignite-0.1.0.tar.gz",
          "afc63936aceffc1634c72d8f3cdea748df330fbdd2b3a1b75f393a9258914141",
          "nn.NLLLoss(reduce=False) in tests, async=True"),
    Entry("allennlp", "0.9.0", "sdist", "allennlp-0.9.0.tar.gz",
          "f70a2d83146630bcc213ed64ff868e3fed8519480fb495dee14a8a5b19c2ff90",
          "large, typed code base: mostly look-alikes that must not change"),
    Entry("transformers", "3.5.1", "sdist", "transformers-3.5.1.tar.gz",
          "0d637c6cecc13b12f33f9e79bf5757c85f433c851e3ae7845ff20b6c49f41441",
          "torch.load, DataParallel, amp, checkpoint; the biggest package"),
    Entry("torchsummary", "1.5.1", "sdist", "torchsummary-1.5.1.tar.gz",
          "981bf689e22e0cf7f95c746002f20a24ad26aa6b9d861134a14bc6ce92230590",
          "dtype = torch.cuda.FloatTensor, .type(dtype)"),
    Entry("cogdl", "0.1.2", "sdist", "cogdl-0.1.2.tar.gz",
          "5e9c3418d8e18095c7b359d1c251087f7255641ceab59d737887e60fc77a0a8d",
          "mixed tabs and spaces CPython accepts and libcst rejects (dngr.py)"),
    Entry("robustness", "1.2.1.post2", "sdist", "robustness-1.2.1.post2.tar.gz",
          "425d8f2ba204aa7888396458fee013a814595991114d02a16e066863766444c6",
          "{k[len('module.'):]: v ...} state-dict prefix stripping, DataParallel"),
    Entry("fairseq", "0.6.2", "sdist", "fairseq-0.6.2.tar.gz",
          "4ef01eb5f4e1731e16ac3ea06122ca1526f768ab46a218a20fd972687f46cbd7",
          "F.cross_entropy(..., size_average=False, ignore_index=...)"),
    Entry("OpenNMT-py", "1.2.0", "sdist", "OpenNMT-py-1.2.0.tar.gz",
          "09564baa6ead39943cf3eee5e87f2b0d47ac84b239bf313abf0de80a26bf6cce",
          "torch.cuda.amp in onmt/trainer.py"),
    Entry("pytext-nlp", "0.3.3", "wheel", "pytext_nlp-0.3.3-py3-none-any.whl",
          "4f7614cc5016048ac246d990c8844667de9eda145006debf8ff6d0a32dff6dd7",
          "return torch.cuda.FloatTensor(*args) (utils/cuda.py)"),
    Entry("monai", "0.5.3", "wheel", "monai-0.5.3-202106011449-py3-none-any.whl",
          "ec74f8ca6ca22fb64e57480940d936c27235d342728c844a89359a4ec3e5b38b",
          "torch.cuda.amp.GradScaler() (engines/trainer.py)"),
)  # fmt: skip

BY_NAME = {e.name: e for e in CORPUS}


class CorpusError(RuntimeError):
    pass


def default_dir() -> Path:
    """$TORCH_MIGRATE_CORPUS_DIR, else <user cache dir>/torch-migrate/corpus."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "torch-migrate" / "corpus"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(entry: Entry, dest: Path) -> Path:
    """`pip download --no-deps` into a temp dir; returns the archive, its hash not yet checked."""
    binary = ["--no-binary", ":all:"] if entry.kind == "sdist" else ["--only-binary", ":all:"]
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", *binary]
    spec = f"{entry.name}=={entry.version}"
    with tempfile.TemporaryDirectory(prefix="tm-corpus-") as tmp:
        # Old setup.py files often fail in pip's isolated build env; the current env's setuptools works.
        attempts = [[*base, "--no-build-isolation", spec, "-d", tmp], [*base, spec, "-d", tmp]]
        errors = []
        for command in attempts:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
            got = Path(tmp) / entry.filename
            if proc.returncode == 0 and got.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                part = dest.with_suffix(dest.suffix + ".part")
                shutil.copyfile(got, part)
                os.replace(part, dest)
                return dest
            errors.append((proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"])
        raise CorpusError(f"pip download {spec} failed: {errors[-1][0]}")


def _safe_members(names: list[str], top: Path) -> None:
    for name in names:
        target = (top / name).resolve()
        if target != top and top not in target.parents:
            raise CorpusError(f"archive member escapes the target directory: {name!r}")


def _unpack(archive: Path, target: Path) -> None:
    """Unpack into `target` (the sdist's single top-level folder is stripped)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        if archive.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as zf:
                _safe_members(zf.namelist(), tmp.resolve())
                zf.extractall(tmp)
        else:
            with tarfile.open(archive) as tf:
                members = [m for m in tf.getmembers() if m.isfile() or m.isdir()]  # no links, no devices
                _safe_members([m.name for m in members], tmp.resolve())
                tf.extractall(tmp, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        entries = list(tmp.iterdir())
        source = entries[0] if len(entries) == 1 and entries[0].is_dir() and not archive.name.endswith(".whl") else tmp
        for path in source.rglob("*"):  # writable, so a test copy can be rewritten and cleaned up
            path.chmod(path.stat().st_mode | 0o600 | (0o100 if path.is_dir() else 0))
        if target.exists():
            shutil.rmtree(target)
        os.replace(source, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure(names: list[str] | None = None, directory: Path | None = None, log=print) -> dict[str, Path]:
    """Download, verify and unpack each entry (all by default); returns name -> unpacked dir.

    A no-op for entries already unpacked from an archive with the pinned hash.
    """
    directory = (directory or default_dir()).expanduser()
    entries = [BY_NAME[n] for n in names] if names else list(CORPUS)
    out: dict[str, Path] = {}
    for entry in entries:
        target = directory / "src" / entry.key
        stamp = target / ".torch-migrate-corpus"
        if stamp.exists() and stamp.read_text().strip() == entry.sha256:
            out[entry.name] = target
            continue
        archive = directory / "archives" / entry.filename
        if not archive.exists() or sha256(archive) != entry.sha256:
            log(f"downloading {entry.name}=={entry.version} ({entry.kind})")
            _download(entry, archive)
        actual = sha256(archive)
        if actual != entry.sha256:
            archive.unlink()
            raise CorpusError(f"{entry.filename}: sha256 {actual} does not match the pinned {entry.sha256}")
        log(f"unpacking {entry.filename}")
        target.parent.mkdir(parents=True, exist_ok=True)
        _unpack(archive, target)
        stamp.write_text(entry.sha256 + "\n")
        out[entry.name] = target
    return out


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def count_lines(paths: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in paths)


# -- the expectation the real-corpus test checks ------------------------------------------------


def summarise(files, root: Path, outputs: bool = False) -> dict:
    """What a run did to one project, in a form a reviewer can read in a diff.

    Per-codemod rewrite and finding counts, how many files changed, and every file that could
    not be processed with its reason (the "known unparseable" list). With `outputs` (a write run,
    on a copy), also a digest of every file's output and findings, so that a change of any byte
    of either shows: the counts alone can stay the same while a rewrite or a message changes.
    """
    rewrites: Counter[str] = Counter()
    findings: Counter[str] = Counter()
    reviews: Counter[str] = Counter()
    errors: dict[str, str] = {}
    changed = 0
    for f in files:
        rewrites.update(f.rewrites)
        findings.update(x.code for x in f.findings if x.kind == "finding")
        reviews.update(x.code for x in f.findings if x.kind == "review")
        changed += f.changed
        if f.problem is not None:
            errors[relative(f.path, root)] = f.problem.reason + (f" [{f.problem.code}]" if f.problem.code else "")
    summary = {
        "files": len(files),
        "changed_files": changed,
        "rewrites": dict(sorted(rewrites.items())),
        "findings": dict(sorted(findings.items())),
        "reviews": dict(sorted(reviews.items())),
        "errors": dict(sorted(errors.items())),
    }
    if outputs:
        summary["outputs"] = outputs_digest(files, root)
    return summary


def outputs_digest(files, root: Path) -> str:
    """sha256 of each file's path (relative to `root`), status, written bytes when it changed,
    findings (line, column, code, kind, message, suggestion) and problem, in path order."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: relative(f.path, root)):
        written = hashlib.sha256(Path(f.path).read_bytes()).hexdigest() if f.changed else ""
        found = [(x.line, x.column, x.code, x.kind, x.message, x.suggestion) for x in f.findings]
        problem = (f.problem.line, f.problem.reason, f.problem.code) if f.problem is not None else None
        record = [relative(f.path, root), f.status.value, written, found, problem]
        digest.update(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def copy_python_files(dirs: dict[str, Path], target: Path) -> dict[str, Path]:
    """A scratch copy holding only each project's .py files (what the pipeline reads)."""

    def ignore(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if not n.endswith(".py") and not os.path.isdir(os.path.join(directory, n))]

    copies = {}
    for name, source in dirs.items():
        copies[name] = target / name
        shutil.copytree(source, copies[name], ignore=ignore, symlinks=True)
    return copies


def relative(display: str, root: Path) -> str:
    return Path(display).resolve().relative_to(root.resolve()).as_posix()


MODES = {"default": False, "unsafe": True}


def run_corpus(dirs: dict[str, Path], unsafe: bool, mode: str = "diff", jobs: int | None = None, cache: bool = False):
    """The whole pipeline (default, or with --unsafe) over every project, config ignored.

    One run per project, as a user migrates a repository: the whole-repo facts (which classes
    define their own `cuda`, which models are wrapped) are each project's own. Returns
    (report, {name: summary}), the report holding every project's files.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from codemods import api
    from codemods.results import Report

    options = api.Options(mode=mode, unsafe=unsafe, jobs=jobs, use_config=False, cache=cache)
    reports = [api.migrate([root], options) for _, root in sorted(dirs.items())]
    report = Report(files=[f for r in reports for f in r.files], mode=mode, codes=reports[0].codes if reports else ())
    by_project: dict[str, list] = {name: [] for name in dirs}
    roots = [(name, root.resolve()) for name, root in dirs.items()]
    for f in report.files:
        path = Path(f.path).resolve()
        name = next(n for n, root in roots if root in path.parents)
        by_project[name].append(f)
    outputs = mode == "write"  # the digest reads the written files
    return report, {name: summarise(files, dirs[name], outputs) for name, files in sorted(by_project.items())}


def expected_summary(dirs: dict[str, Path], jobs: int | None = None, log=print) -> dict:
    """Each mode's summary, as tests/test_real_corpus.py makes it: a write run on a copy."""
    out: dict = {}
    for label, unsafe in MODES.items():
        log(f"running the {label} pipeline over a copy of the corpus")
        with tempfile.TemporaryDirectory(prefix="tm-corpus-") as scratch:
            _, summary = run_corpus(copy_python_files(dirs, Path(scratch)), unsafe, mode="write", jobs=jobs, cache=True)
        for name, entry in summary.items():
            out.setdefault(name, {})[label] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help=f"corpus cache (default: ${ENV_DIR} or {default_dir()})")
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), help="just these projects")
    parser.add_argument("--list", action="store_true", help="print each project's path, files and lines")
    parser.add_argument("--update-expected", action="store_true", help=f"rewrite {EXPECTED.relative_to(ROOT)}")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        dirs = ensure(args.only, args.dir)
    except CorpusError as exc:
        print(f"corpus: {exc}", file=sys.stderr)
        return 2
    if args.list:
        total = 0
        for name, root in dirs.items():
            files = python_files(root)
            lines = count_lines(files)
            total += lines
            print(f"{name:<20} {len(files):>5} files {lines:>8} lines  {root}")
        print(f"{'total':<20} {'':>5}       {total:>8} lines")
    if args.update_expected:
        if args.only:
            parser.error("--update-expected covers the whole corpus; drop --only")
        summary = expected_summary(dirs, args.jobs)
        EXPECTED.parent.mkdir(parents=True, exist_ok=True)
        EXPECTED.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        print(f"wrote {EXPECTED.relative_to(ROOT)}; review the diff before committing it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
