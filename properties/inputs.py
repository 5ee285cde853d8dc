"""Reading the files a user hands to kipcheck (JSON traces, TOML campaign specs, a campaign's
own JSON records): UTF-8 text with a size and a nesting-depth limit, so that a binary file, a
UTF-16 file or a document nested thousands deep gives one message (``InputError``) instead of
a ``UnicodeDecodeError`` or a ``RecursionError`` from the parser.
"""
from __future__ import annotations

import codecs
import json
from pathlib import Path

MAX_BYTES = 64 * 1024 * 1024     # a trace of the largest configuration is well under 1 MiB
MAX_DEPTH = 64                   # the project's own documents nest fewer than 10 levels

_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


class InputError(ValueError):
    """An input file that cannot be read as the text kipcheck expects.  The message is a
    predicate to follow the file's name: ``f"{path}: {e}"``."""


def decode_text(data: bytes, *, max_bytes: int | None = None) -> str:
    """``data`` as UTF-8 text (a UTF-8 byte-order mark is dropped); InputError for anything
    else, naming the encoding when a byte-order mark gives it away."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    if len(data) > max_bytes:
        raise InputError(f"too large ({len(data):,} bytes; the limit is {max_bytes:,})")
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise InputError(f"{name} text; kipcheck reads UTF-8 (convert it, e.g. with "
                             f"iconv -f {name} -t UTF-8)")
    if b"\x00" in data:
        raise InputError("binary, not text (it contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path, *, max_bytes: int | None = None) -> str:
    """The file at ``path`` as UTF-8 text; InputError if it cannot be read or is not text."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError("a directory, not a file")
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(f"too large ({size:,} bytes; the limit is {max_bytes:,})")
        with p.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"cannot read the file: {e.strerror or e}") from None
    return decode_text(data, max_bytes=max_bytes)


def nesting_depth(text: str, *, limit: int) -> int:
    """The deepest nesting of ``[`` and ``{`` outside strings and ``#`` comments, in JSON or
    TOML (both quote strings with ``"``; TOML also with ``'``); stops counting past ``limit``.
    An over-estimate is harmless: it only has to stay below the parsers' recursion limits."""
    depth = deepest = 0
    quote = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def check_depth(text: str, *, limit: int | None = None) -> None:
    limit = MAX_DEPTH if limit is None else limit
    if nesting_depth(text, limit=limit) > limit:
        raise InputError(f"nested more than {limit} levels deep")


def load_json(path, *, max_bytes: int | None = None, max_depth: int | None = None):
    """The JSON document in the file at ``path``; InputError for an unreadable, non-UTF-8, too
    large, too deeply nested or malformed file."""
    return loads_json(read_text(path, max_bytes=max_bytes), max_depth=max_depth)


def loads_json(text: str, *, max_depth: int | None = None):
    check_depth(text, limit=max_depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:                     # unreachable after check_depth; kept as a net
        raise InputError("nested too deeply") from None


def loads_toml(text: str, what: str) -> dict:
    """A TOML document the package ships (``what`` names it in messages); ``InputError`` for
    a malformed one, or when neither tomllib (Python 3.11) nor tomli is there."""
    try:
        import tomllib
    except ImportError:                 # pragma: no cover (Python 3.10)
        try:
            import tomli as tomllib
        except ImportError:
            raise InputError(f"reading {what} needs Python 3.11 (tomllib) or the tomli "
                             f"package") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{what}: {e}") from None
