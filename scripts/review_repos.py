"""A reviewer's worksheet of what `torch-migrate run` would do to whole repositories.

    python scripts/review_repos.py OUT REPO... [--previous OLD/worksheet.json] [-- EXTRA CLI ARGS]

For each REPO folder this copies it to a temporary folder (the folder given is never touched),
runs this checkout's CLI on the copy, `python -m codemods run --diff --format json --no-cache`,
and turns the JSON report (its `files[].edits`, one per changed region, with their codes and
ranges in the ORIGINAL file, and `files[].findings`) into a worksheet to mark by hand:

- OUT/worksheet.json: {"hunks": [...], "findings": [...], "files": [...], "summary": {...}}.
  A hunk is one or more edits whose statements overlap: repo, file, original lines, codes, the
  original statement(s) and the same lines migrated (all of the hunk's edits applied), `flags`,
  and empty `verdict` (correct | wrong | questionable) and `note` for the reviewer to fill in.
  A finding is code, file, line, column, kind (finding | review), message, the original line's
  text and `flags`.
- OUT/worksheet.md: the same, hunks grouped by code, as a diff per hunk with a check line.

Mechanical flags (counted in `summary.flags`):
- hunk `trailing-whitespace`: an added line ends in spaces or tabs;
- file `does-not-compile`: the migrated file is not valid Python (`original-does-not-compile`
  too when the original was not either, e.g. a Python 2 file);
- finding `blank-line`: the line the finding reports is blank in the original file;
- finding `names-code-not-on-line`: the message quotes code (`...`) of which no name is on the
  reported line (`not-in-statement` too when the whole statement there lacks it).

`--previous` carries verdicts and notes over from an earlier worksheet to hunks and findings that
are identical (same repo, file, codes, original and migrated text; for findings, code, message
and line text), so a review is redone on a later version of the code by marking only what
changed. Runs the CLI of the checkout this script is in (PYTHONPATH set to it).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_BREAK = re.compile(r"\r\n|\r|\n")
_QUOTED = re.compile(r"`([^`]+)`")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def run_cli(repo: Path, extra: list[str]) -> tuple[Path, dict]:
    """(the copy, the JSON report) of the CLI run on a copy of `repo`."""
    copy = Path(tempfile.mkdtemp(prefix="review-")) / repo.name
    shutil.copytree(repo, copy, symlinks=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "codemods", "run", "--diff", "--format", "json", "--no-cache", *extra, str(copy)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode & ~1:
        sys.stderr.write(f"{repo.name}: exit {done.returncode}\n{done.stderr[-2000:]}\n")
    return copy, json.loads(done.stdout)


def line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _BREAK.finditer(text)]


def statement_spans(text: str) -> list[tuple[int, int]]:
    """(first, last) lines of every simple statement and of every compound statement's header."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            spans.append((node.lineno, max(node.lineno, body[0].lineno - 1)))
        else:
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def widen(first: int, last: int, spans: list[tuple[int, int]]) -> tuple[int, int]:
    """The lines first..last widened to the innermost statements holding each of them."""
    low, high = first, last
    for line in range(first, last + 1):
        holding = [s for s in spans if s[0] <= line <= s[1]]
        if holding:
            start, end = min(holding, key=lambda s: s[1] - s[0])
            low, high = min(low, start), max(high, end)
    return low, high


def edit_lines(edit: dict) -> tuple[int, int]:
    """The whole lines an edit replaces: up to its end's line, unless it ends at a line's start
    with a replacement that ends a line too (else the migrated text of the hunk ends mid-line)."""
    start, end = edit["start"], edit["end"]
    ends_line = edit["replacement"] == "" or edit["replacement"].endswith(("\n", "\r"))
    last = end["line"] - 1 if end["column"] == 1 and end["line"] > start["line"] and ends_line else end["line"]
    return start["line"], max(start["line"], last)


def hunks_of(original: str, edits: list[dict]) -> list[dict]:
    """The file's edits grouped by overlapping statements, each with its original and new text."""
    starts = line_starts(original)
    spans = statement_spans(original)
    groups: list[dict] = []
    for edit in sorted(edits, key=lambda e: (e["start"]["line"], e["start"]["column"])):
        first, last = widen(*edit_lines(edit), spans)
        if groups and first <= groups[-1]["last"]:
            group = groups[-1]
            group["last"] = max(group["last"], last)
            group["edits"].append(edit)
        else:
            groups.append({"first": first, "last": last, "edits": [edit]})

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1 if line <= len(starts) else len(original)

    hunks = []
    for group in groups:
        begin = offset(group["first"], 1)
        end = starts[group["last"]] if group["last"] < len(starts) else len(original)
        before = original[begin:end]
        after = before
        for edit in sorted(group["edits"], key=lambda e: (e["start"]["line"], e["start"]["column"]), reverse=True):
            a = offset(edit["start"]["line"], edit["start"]["column"]) - begin
            b = offset(edit["end"]["line"], edit["end"]["column"]) - begin
            after = after[:a] + edit["replacement"] + after[b:]
        codes = []
        for edit in group["edits"]:
            codes += [c for c in edit["codes"] if c not in codes]
        old_lines = set(before.splitlines())
        flags = []
        if any(line != line.rstrip(" \t") and line not in old_lines for line in _BREAK.split(after)):
            flags.append("trailing-whitespace")
        hunks.append({"line": group["first"], "last_line": group["last"], "codes": codes,
                      "before": before, "after": after, "flags": flags})
    return hunks


def apply_all(original: str, edits: list[dict]) -> str:
    starts = line_starts(original)

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1 if line <= len(starts) else len(original)

    out = original
    for edit in sorted(edits, key=lambda e: (e["start"]["line"], e["start"]["column"]), reverse=True):
        a, b = offset(edit["start"]["line"], edit["start"]["column"]), offset(edit["end"]["line"], edit["end"]["column"])
        out = out[:a] + edit["replacement"] + out[b:]
    return out


def compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<migrated>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def finding_flags(message: str, line_text: str, statement: str) -> list[str]:
    if not line_text.strip():
        return ["blank-line"]
    quoted = _QUOTED.findall(message)
    if not quoted:
        return []
    names = {n for q in quoted for n in _NAME.findall(q)} - {"import", "from", "as", "None", "True", "False"}
    if not names or any(re.search(rf"\b{n}\b", line_text) for n in names):
        return []
    flags = ["names-code-not-on-line"]
    if not any(re.search(rf"\b{n}\b", statement) for n in names):
        flags.append("not-in-statement")
    return flags


def review_repo(repo: Path, extra: list[str]) -> dict:
    copy, report = run_cli(repo, extra)
    out = {"hunks": [], "findings": [], "files": []}
    for entry in report["files"]:
        path = Path(entry["path"])
        rel = str(path.relative_to(copy)) if path.is_absolute() else entry["path"]
        if entry.get("error"):
            out["files"].append({"repo": repo.name, "file": rel, "status": "error", "flags": [], "error": entry["error"]})
            continue
        if not path.exists():  # a new file the migration adds (TM103's ddp_helpers.py): no original to review
            out["files"].append({"repo": repo.name, "file": rel, "status": "new file", "flags": []})
            continue
        original = path.read_bytes().decode("utf-8-sig", errors="replace")
        lines = _BREAK.split(original)
        spans = statement_spans(original)
        for hunk in hunks_of(original, entry.get("edits", [])):
            out["hunks"].append({"repo": repo.name, "file": rel, **hunk, "verdict": "", "note": ""})
        for finding in entry.get("findings", []):
            number = finding["line"]
            text = lines[number - 1] if 0 < number <= len(lines) else ""
            first, last = widen(number, number, spans)
            statement = "\n".join(lines[first - 1:last])
            out["findings"].append({
                "repo": repo.name, "file": rel, "line": number, "column": finding.get("column"),
                "code": finding["code"], "kind": finding.get("kind"), "message": finding["message"],
                "line_text": text, "flags": finding_flags(finding["message"], text, statement),
                "verdict": "", "note": ""})
        if entry.get("status") == "changed":
            flags = []
            if not compiles(apply_all(original, entry.get("edits", []))):
                flags.append("does-not-compile")
                if not compiles(original):
                    flags.append("original-does-not-compile")
            out["files"].append({"repo": repo.name, "file": rel, "status": "changed", "flags": flags,
                                 "rewrites": entry.get("rewrites", {})})
    shutil.rmtree(copy.parent, ignore_errors=True)
    return out


def _key(item: dict) -> tuple:
    if "before" in item:
        return (item["repo"], item["file"], tuple(item["codes"]), item["before"], item["after"])
    return (item["repo"], item["file"], item["code"], item["message"], item["line_text"])


def carry_over(sheet: dict, previous: dict) -> int:
    known = {_key(item): item for item in previous.get("hunks", []) + previous.get("findings", []) if item.get("verdict")}
    carried = 0
    for item in sheet["hunks"] + sheet["findings"]:
        old = known.get(_key(item))
        if old:
            item["verdict"], item["note"] = old["verdict"], old.get("note", "")
            carried += 1
    return carried


def summarise(sheet: dict) -> dict:
    per_code: dict[str, dict[str, int]] = {}
    for hunk in sheet["hunks"]:
        counts = per_code.setdefault(hunk["codes"][0], {"hunks": 0, "correct": 0, "wrong": 0, "questionable": 0})
        counts["hunks"] += 1
        if hunk["verdict"] in counts:
            counts[hunk["verdict"]] += 1
    flags: dict[str, int] = {}
    for item in sheet["hunks"] + sheet["findings"] + sheet["files"]:
        for flag in item["flags"]:
            flags[flag] = flags.get(flag, 0) + 1
    return {"hunks": len(sheet["hunks"]), "findings": len(sheet["findings"]), "per_code": per_code, "flags": flags}


def markdown(sheet: dict) -> str:
    rows = ["# Review worksheet", "", "```json", json.dumps(sheet["summary"], indent=1), "```", ""]
    for item in sheet["files"]:
        if item["flags"] or item["status"] == "error":
            rows.append(f"- FILE {item['repo']}:{item['file']} {item['status']} {item['flags']} {item.get('error') or ''}")
    for code in sorted({h["codes"][0] for h in sheet["hunks"]}):
        rows += ["", f"## {code}", ""]
        for number, hunk in enumerate(h for h in sheet["hunks"] if h["codes"][0] == code):
            rows.append(f"### {code}-{number} {hunk['repo']}:{hunk['file']}:{hunk['line']} {','.join(hunk['codes'])} {hunk['flags'] or ''}")
            rows.append(f"verdict: [{hunk['verdict'] or ' '}] {hunk['note']}")
            rows.append("```diff")
            rows += ["-" + line for line in hunk["before"].splitlines()]
            rows += ["+" + line for line in hunk["after"].splitlines()]
            rows.append("```")
    rows += ["", "## Findings", ""]
    for f in sheet["findings"]:
        rows.append(f"- [{f['verdict'] or ' '}] {f['repo']}:{f['file']}:{f['line']} {f['code']} ({f['kind']}) {f['flags'] or ''}"
                    f" — {f['message']}\n  `{f['line_text'].strip()}`")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--previous", type=Path, help="an earlier worksheet.json to carry verdicts from")
    args = parser.parse_args(argv)
    sheet: dict = {"hunks": [], "findings": [], "files": []}
    for repo in args.repos:
        part = review_repo(repo.resolve(), extra)
        for key in sheet:
            sheet[key] += part[key]
    if args.previous:
        print(f"carried {carry_over(sheet, json.loads(args.previous.read_text()))} verdict(s) over", file=sys.stderr)
    sheet["summary"] = summarise(sheet)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "worksheet.json").write_text(json.dumps(sheet, indent=1))
    (args.out / "worksheet.md").write_text(markdown(sheet))
    print(json.dumps(sheet["summary"]["flags"]), f"{sheet['summary']['hunks']} hunks, {sheet['summary']['findings']} findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
