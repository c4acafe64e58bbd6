"""Reading files: every file tracer opens goes through here (regular files only,
opened non-blocking, size-bounded, never through a link leaving its root), and
source bytes are decoded the way Python reads a module, without any parser.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from tracer.model.errors import InputError
from tracer.safeio.read import is_within as _is_within
from tracer.safeio.read import read_or_none


def resolve_relative(module: str, is_package: bool, level: int, name: str) -> str:
    """Absolute target of ``from <.level><name> import ...`` inside ``module``."""
    if level == 0:
        return name
    parts = module.split(".")
    package = parts if is_package else parts[:-1]
    if level - 1 > 0:
        package = package[: len(package) - (level - 1)] if level - 1 <= len(package) else []
    base = ".".join(package)
    if name:
        return f"{base}.{name}" if base else name
    return base


def decode_source(data: bytes) -> str:
    """Bytes -> text the way Python reads a module; InputError when it cannot."""
    if b"\x00" in data:
        raise InputError("file contains NUL bytes", 1)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # detect_encoding also fails on undecodable bytes in the first two lines
        # when there is no cookie at all: say so rather than blame a cookie.
        if b"coding" not in b"\n".join(data.split(b"\n", 2)[:2]):
            try:
                data.decode("utf-8")
                line = 1
            except UnicodeDecodeError as bad:
                line = data[: bad.start].count(b"\n") + 1
            raise InputError("not valid utf-8 (and no coding cookie)", line) from None
        raise InputError(f"bad coding cookie: {exc}", 1) from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        line = data[: getattr(exc, "start", 0)].count(b"\n") + 1
        raise InputError(f"not valid {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}", line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_regular_file(path: str | Path, limit: int, root: str | Path | None = None) -> str | None:
    """:func:`read_regular_bytes` as text (UTF-8, undecodable bytes replaced)."""
    data = read_regular_bytes(path, limit, root)
    return data.decode("utf-8", errors="replace") if data is not None else None


def read_regular_bytes(path: str | Path, limit: int, root: str | Path | None = None) -> bytes | None:
    """At most ``limit`` bytes of a regular file; None for anything else (missing,
    unreadable, a FIFO that would block, a device that never ends, or, with
    ``root``, a file whose real path leaves ``root``: a link to /etc/passwd in a
    stranger's tree must not end up in a report). The rule itself is
    :mod:`tracer.safeio.read`."""
    return read_or_none(path, max(0, limit - 1), root, cut=True)


def is_within(path: Path, root: Path) -> bool:
    return _is_within(path, root)
