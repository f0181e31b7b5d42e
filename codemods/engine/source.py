"""Bytes <-> text for Python sources, keeping BOM, declared encoding and line endings; reading
them within the run's size limit."""

from __future__ import annotations

import codecs
import io
import os
import tokenize
from dataclasses import dataclass
from typing import BinaryIO


class SourceError(ValueError):
    """A file that cannot be turned into text; `line` is 1-based (0 when unknown)."""

    def __init__(self, reason: str, line: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


class TooLarge(SourceError):
    """A file over the run's size limit: refused before it is read, parsed or hashed."""

    def __init__(self, size: int | None, limit: int) -> None:
        how = f"{size:,} bytes" if size is not None else "it grew past it while being read"
        super().__init__(f"larger than the {limit:,}-byte limit ({how}); skipped")


def read_limited(path: str | os.PathLike, limit: int) -> bytes:
    """A file's bytes, or `TooLarge` when it holds more than `limit`."""
    with open(path, "rb") as handle:
        return read_open(handle, limit)


def read_open(handle: BinaryIO, limit: int) -> bytes:
    """An open file's bytes, or `TooLarge` when it holds more than `limit`.

    The size is asked first, so a huge file costs nothing; and the read stops one byte past the
    limit, so a file that grows after that stands refused without being read whole either."""
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        raise TooLarge(size, limit)
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(None, limit)
    return data


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # as declared (or utf-8)
    bom: bool

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def decode(data: bytes) -> Decoded:
    """Decode like CPython does (BOM, PEP 263 cookie, else UTF-8); newlines are left as they are."""
    if b"\0" in data:
        raise SourceError("contains NUL bytes (binary or corrupt file)", data[: data.index(b"\0")].count(b"\n") + 1)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"bad encoding declaration: {exc.msg if hasattr(exc, 'msg') else exc}", 1) from None
    bom = encoding == "utf-8-sig"
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    name = "utf-8" if bom else encoding
    try:
        text = body.decode(name)
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise SourceError(f"cannot decode as {name}: invalid byte {body[exc.start:exc.start + 1]!r}", line) from None
    except LookupError:
        raise SourceError(f"unknown encoding {name!r}", 1) from None
    return Decoded(text=text, encoding=name, bom=bom)
