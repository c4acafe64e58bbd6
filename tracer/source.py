"""Reading source files the way Python does, without any parser.

Kept apart from index.py so that commands which only read cached summaries
never pay libcst's import time.
"""

from __future__ import annotations

import io
import tokenize


class InputError(Exception):
    """A module that cannot be read or parsed; carries the line when known."""

    def __init__(self, reason: str, line: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.line = line


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
