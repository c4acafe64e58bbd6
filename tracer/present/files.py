"""Writing output files: a temp file in the same folder renamed into place (no
half-written file is ever seen), never through a symbolic link."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tracer.model.errors import UsageError


def write_bytes_file(path: str | Path, data: bytes) -> Path:
    target = Path(path)
    if target.is_symlink():
        raise UsageError(f"{target}: is a symbolic link; tracer does not write through links")
    folder = target.parent if str(target.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def write_text_file(path: str | Path, text: str) -> Path:
    return write_bytes_file(path, text.encode("utf-8"))
