"""Writing output files: the writing rule of :mod:`tracer.safeio.write` (a temp file in
the same folder renamed into place, so no half-written file is ever seen; never
through a symbolic link; with ``root``, inside that folder and through no link
on the way)."""

from __future__ import annotations

from pathlib import Path

from tracer.model.errors import UsageError
from tracer.safeio.write import Unwritable, write_bytes


def write_bytes_file(path: str | Path, data: bytes, root: str | Path | None = None) -> Path:
    try:
        return write_bytes(path, data, root)
    except Unwritable as exc:
        raise UsageError(str(exc)) from None


def write_text_file(path: str | Path, text: str, root: str | Path | None = None) -> Path:
    return write_bytes_file(path, utf8(text), root)


def utf8(text: str) -> bytes:
    """UTF-8 of ``text``; a file name that is not UTF-8 (its bytes kept by Python as lone
    surrogates) is written as ``\\xNN`` escapes instead of failing the whole report."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace")
        return raw.decode("utf-8", "backslashreplace").encode("utf-8")
