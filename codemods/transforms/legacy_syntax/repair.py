"""TM000's text stage: repair `async` used as a name, which no Python since 3.7 can parse.

PyTorch 0.3 spelled the asynchronous-copy flag `async` (`x.cuda(async=True)`), and code of that
era used the word freely (`def f(x, async=False)`, `self.async = async`). Such a file is a syntax
error today, so no codemod can run on it. This module works on tokens, before any parse:

- `async=` passed to one of the tensor methods torch renamed (`cuda`, `to`, `type`, `copy_`)
  becomes `non_blocking=`, torch's own new name for the same flag; so does `async=` passed to a
  function of this file that forwards its `**kwargs` into one of those methods (directly or
  through another such function), since that is where the keyword ends up;
- every other use of `async` as a name (parameters, variables, keywords, attributes) becomes
  `async_`, the same way in every file this stage repairs, so that a parameter renamed in one file
  and the keyword passed to it in another still agree.

Each repair is returned with its line and the reason a reviewer may want to look at it. Strings
that spell the old name (`kwargs["async"]`, argparse's `"--async"`) are never edited; they come
back as findings, since only a person can tell whether they name the renamed thing. The stage is
pure: text in, text and repairs out.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

NEW_NAME = "async_"
# Tensor methods whose `async` flag torch renamed to `non_blocking` in 0.4.
RENAMED_BY_TORCH = frozenset({"cuda", "to", "type", "copy_"})
# `async` followed by one of these is the real keyword (`async def`, `async for`, `async with`).
_KEYWORD_USES = frozenset({"def", "for", "with"})
_ROLE_WORDS = {"keyword": "a keyword argument", "parameter": "a parameter", "attribute": "an attribute", "name": "a name"}
_SKIP = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})


@dataclass(frozen=True)
class Repair:
    line: int
    column: int
    message: str
    kind: str = "review"  # "review": rewritten; "finding": left as is, a person must decide
    suggestion: str | None = None


@dataclass(frozen=True)
class Repaired:
    text: str
    repairs: tuple[Repair, ...]

    @property
    def edits(self) -> int:
        return sum(r.kind == "review" for r in self.repairs)


def mentions_async(text: str) -> bool:
    return "async" in text


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None


def _significant(tokens: list[tokenize.TokenInfo]) -> list[tokenize.TokenInfo]:
    return [t for t in tokens if t.type not in _SKIP and t.type != tokenize.ENDMARKER]


def _string_value(token: str) -> object:
    try:
        return ast.literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


@dataclass
class _Use:
    index: int  # into the significant tokens
    role: str  # "non_blocking" | "keyword" | "parameter" | "attribute" | "name"
    callee: str | None = None
    receiver: str | None = None  # the token before `.callee(`


def _openers(toks: list[tokenize.TokenInfo]) -> dict[int, int]:
    """Index of each token -> index of the bracket that directly encloses it (absent at depth 0)."""
    enclosing: dict[int, int] = {}
    stack: list[int] = []
    for i, tok in enumerate(toks):
        if tok.type == tokenize.OP and tok.string in ")]}":
            if stack:
                stack.pop()
        if stack:
            enclosing[i] = stack[-1]
        if tok.type == tokenize.OP and tok.string in "([{":
            stack.append(i)
    return enclosing


def _statement_starts(toks: list[tokenize.TokenInfo], all_tokens: list[tokenize.TokenInfo]) -> set[int]:
    """Indices (into `toks`) of the first token of each logical line."""
    starts: set[int] = set()
    new_line = True
    lookup = {id(t): i for i, t in enumerate(toks)}
    for tok in all_tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            new_line = True
            continue
        if tok.type in _SKIP:
            continue
        if new_line:
            starts.add(lookup[id(tok)])
            new_line = False
        if tok.type == tokenize.OP and tok.string == ";":
            new_line = True
    return starts


def _classify(toks: list[tokenize.TokenInfo], all_tokens: list[tokenize.TokenInfo]) -> list[_Use] | None:
    """Every name use of `async`, with its role; None when one cannot be repaired (imports)."""
    enclosing = _openers(toks)
    starts = _statement_starts(toks, all_tokens)
    uses: list[_Use] = []
    for i, tok in enumerate(toks):
        if tok.type != tokenize.NAME or tok.string != "async":
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        prev = toks[i - 1] if i > 0 else None
        if nxt is not None and nxt.type == tokenize.NAME and nxt.string in _KEYWORD_USES and nxt.start[0] == tok.end[0]:
            continue
        # A module or name imported as `async` cannot be spelled any other way in an import.
        start = max((s for s in starts if s <= i), default=0)
        if toks[start].string in ("import", "from"):
            return None
        if prev is not None and prev.type == tokenize.OP and prev.string == ".":
            uses.append(_Use(i, "attribute"))
            continue
        is_keyword = nxt is not None and nxt.type == tokenize.OP and nxt.string == "=" and i in enclosing
        opener = enclosing.get(i)
        if is_keyword and toks[opener].string == "(" and opener > 0:
            before = toks[opener - 1]
            if opener > 1 and toks[opener - 2].string == "def":
                uses.append(_Use(i, "parameter", before.string))
                continue
            if before.type == tokenize.NAME or before.string in (")", "]"):
                dotted = opener > 1 and toks[opener - 2].string == "."
                callee = before.string if before.type == tokenize.NAME else None
                role = "non_blocking" if dotted and callee in RENAMED_BY_TORCH else "keyword"
                receiver = toks[opener - 3].string if dotted and opener > 2 else None
                uses.append(_Use(i, role, callee, receiver))
                continue
        if opener is not None and toks[opener].string == "(" and opener > 1 and toks[opener - 2].string == "def":
            uses.append(_Use(i, "parameter", toks[opener - 1].string))
            continue
        uses.append(_Use(i, "name"))
    return uses


@dataclass
class _Def:
    line: int
    params: frozenset[str]  # the plain parameter names
    keywords: str | None  # the `**kwargs` name
    forwards_to: set[str]  # callees its `**kwargs` are passed to; `.cuda` etc. for torch's methods


def _closer(toks: list[tokenize.TokenInfo], opener: int) -> int:
    depth = 0
    for k in range(opener, len(toks)):
        if toks[k].type == tokenize.OP and toks[k].string in "([{":
            depth += 1
        elif toks[k].type == tokenize.OP and toks[k].string in ")]}":
            depth -= 1
            if depth == 0:
                return k
    return len(toks) - 1


def _definitions(
    toks: list[tokenize.TokenInfo], starts: set[int], enclosing: dict[int, int]
) -> dict[str, list[_Def]]:
    """Every `def` of the file by name, with what its `**kwargs` are handed to in its body."""
    defs: dict[str, list[_Def]] = {}
    ordered = sorted(starts)
    for i, tok in enumerate(toks):
        if not (tok.type == tokenize.NAME and tok.string == "def" and i + 2 < len(toks) and toks[i + 2].string == "("):
            continue
        opener, closer = i + 2, _closer(toks, i + 2)
        params, keywords = set(), None
        for k in range(opener + 1, closer):
            if enclosing.get(k) != opener or toks[k].type != tokenize.NAME:
                continue
            before = toks[k - 1].string
            if before == "**":
                keywords = toks[k].string
            elif before in ("(", ",", "*"):
                params.add(toks[k].string)
        column = toks[max((s for s in ordered if s <= i), default=0)].start[1]
        end = next((s for s in ordered if s > closer and toks[s].start[1] <= column), len(toks))
        forwards: set[str] = set()
        if keywords is not None:
            for k in range(closer + 1, end - 1):
                if toks[k].string != "**" or toks[k + 1].string != keywords or k not in enclosing:
                    continue
                call = enclosing[k]
                if toks[call].string != "(" or call < 1 or toks[call - 1].type != tokenize.NAME:
                    continue
                dotted = call > 1 and toks[call - 2].string == "."
                callee = toks[call - 1].string
                forwards.add(f".{callee}" if dotted and callee in RENAMED_BY_TORCH else callee)
        defs.setdefault(toks[i + 1].string, []).append(_Def(tok.start[0], frozenset(params), keywords, forwards))
    return defs


def _forwarders(defs: dict[str, list[_Def]]) -> dict[str, int]:
    """Functions (name -> line of the first definition) every definition of which passes its
    `**kwargs` on into `.cuda()`/`.to()`/`.type()`/`.copy_()`, directly or through one another."""
    found: dict[str, int] = {}
    targets = {f".{name}" for name in RENAMED_BY_TORCH}
    changed = True
    while changed:
        changed = False
        for name, variants in defs.items():
            if name in found or any("async" in d.params for d in variants):
                continue
            if all(d.forwards_to & (targets | found.keys()) for d in variants):
                found[name] = variants[0].line
                changed = True
    return found


def forwarders(text: str) -> frozenset[str]:
    """Names of the functions `text` defines that forward their `**kwargs` into `.cuda()`/`.to()`
    (what another file's `name(..., async=...)` needs to know); empty when it does not tokenize."""
    all_tokens = _tokens(text)
    if all_tokens is None:
        return frozenset()
    toks = _significant(all_tokens)
    return frozenset(_forwarders(_definitions(toks, _statement_starts(toks, all_tokens), _openers(toks))))


def _keyword_note(callee: str | None, defs: dict[str, list[_Def]]) -> str:
    """What a reviewer must check about `callee(async_=...)`, true of this file's definitions."""
    head = f"`async=` -> `{NEW_NAME}=`: "
    if callee is None or callee not in defs:
        return head + (
            f"`{callee or 'this callee'}` is not defined in this file; check that its definition names"
            f" the parameter `{NEW_NAME}` too"
        )
    where = ", ".join(str(d.line) for d in defs[callee])
    if any(d.keywords for d in defs[callee]):
        return head + (
            f"`{callee}` (line {where}) takes it through **kwargs; check that where they end up"
            f" expects `{NEW_NAME}`"
        )
    return head + f"`{callee}` (line {where}) has no `async` parameter: this call raised TypeError before too"


def repair(text: str, forwarding: frozenset[str] = frozenset()) -> Repaired | None:
    """`text` with every `async`-as-a-name repaired, or None when there is nothing this stage can
    repair (no such use, a collision with an existing `async_`, an import of a module named
    `async`, or text the tokenizer rejects). `forwarding`: functions other files define that pass
    their `**kwargs` into `.cuda()`/`.to()` (see `forwarders`), for calls this file does not define."""
    if not mentions_async(text):
        return None
    all_tokens = _tokens(text)
    if all_tokens is None:
        return None
    toks = _significant(all_tokens)
    if any(t.type == tokenize.NAME and t.string == NEW_NAME for t in toks):
        return None  # renaming would merge two names
    uses = _classify(toks, all_tokens)
    if not uses:
        return None

    with_param = {u.callee for u in uses if u.role == "parameter"}
    defs = _definitions(toks, _statement_starts(toks, all_tokens), _openers(toks))
    forwarded = _forwarders(defs)
    stored = {
        u.index
        for u in uses
        if u.role == "attribute" and u.index + 1 < len(toks) and _is_store(toks[u.index + 1])
    }
    edits: list[tuple[int, int, int, str]] = []
    repairs: list[Repair] = []
    for use in uses:
        tok = toks[use.index]
        (row, col) = tok.start
        role = use.role
        if role == "non_blocking" and use.callee in with_param and use.receiver in ("self", "cls"):
            role = "keyword"  # `self.cuda(async=...)` calls this file's own `def cuda(..., async=...)`
        if role == "non_blocking":
            edits.append((row, col, tok.end[1], "non_blocking"))
            repairs.append(Repair(row, col, f"`.{use.callee}(async=...)` -> `non_blocking=` (torch's own rename)"))
            continue
        via = forwarded.get(use.callee) if role == "keyword" else None
        if role == "keyword" and via is None and use.callee not in defs and use.callee in forwarding:
            via = 0
        if via is not None:
            edits.append((row, col, tok.end[1], "non_blocking"))
            where = f" (line {via})" if via else " (in another file)"
            repairs.append(
                Repair(
                    row,
                    col,
                    f"`{use.callee}(async=...)` -> `non_blocking=`: `{use.callee}`{where} passes its **kwargs"
                    " on to `.cuda()`/`.to()`, which take `non_blocking`",
                )
            )
            continue
        edits.append((row, col, tok.end[1], NEW_NAME))
        if role == "keyword" and use.callee not in with_param:
            message = _keyword_note(use.callee, defs)
            onward = sorted({t for d in defs.get(use.callee, ()) for t in d.forwards_to})
            if onward:
                repairs.append(
                    Repair(
                        row,
                        col,
                        f"`{use.callee}` passes its **kwargs on to {', '.join(f'`{t}()`' for t in onward)}: if"
                        " `async` reaches a tensor's `.cuda()`/`.to()` there, it must be `non_blocking=`",
                        kind="finding",
                        suggestion="non_blocking=",
                    )
                )
        elif role == "attribute" and not stored:
            message = (
                f"`.async` -> `.{NEW_NAME}`: the attribute is never set in this file; check that where it is "
                f"set it is named `{NEW_NAME}` too (argparse: `dest=\"{NEW_NAME}\"`)"
            )
        else:
            message = f"`async` used as {_ROLE_WORDS[role]} -> `{NEW_NAME}`"
        repairs.append(Repair(row, col, message))

    for tok in toks:
        if tok.type == tokenize.STRING and _string_value(tok.string) in ("async", "--async"):
            repairs.append(
                Repair(
                    tok.start[0],
                    tok.start[1],
                    f"the string {tok.string} names `async`, which this file now spells `{NEW_NAME}`;"
                    " update it if it refers to the renamed name",
                    kind="finding",
                    suggestion=f'dest="{NEW_NAME}"' if _string_value(tok.string) == "--async" else None,
                )
            )
    return Repaired(_apply(text, edits), tuple(sorted(repairs, key=lambda r: (r.line, r.column))))


def _is_store(tok: tokenize.TokenInfo) -> bool:
    return tok.type == tokenize.OP and (tok.string == "=" or (tok.string.endswith("=") and tok.string not in ("==", "!=", "<=", ">=")))


def _apply(text: str, edits: list[tuple[int, int, int, str]]) -> str:
    lines = io.StringIO(text).readlines()
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return "".join(lines)
