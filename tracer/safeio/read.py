"""The reading rule: every file tracer opens (sources, cache entries, lint records,
rules packs, [tool.tracer], baselines, HF configs, safetensors headers, scan JSON)
is read here.

- regular files only: a FIFO, a socket, a device (``/dev/zero``), a folder are refused;
- opened with O_NONBLOCK (a FIFO never blocks the open) and O_NOCTTY;
- size-bounded: at most ``limit`` bytes are ever read; a bigger file is refused
  (``read_bytes``) or cut (``read_or_none(..., cut=True)``, for sources whose size
  the caller checks itself);
- inside its root: with ``root``, a path whose real path leaves the root (a link
  to ``/etc/shadow``) is refused, and the real path is opened with O_NOFOLLOW.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


class Unreadable(OSError):
    """A file the reading rule refuses; ``str()`` is one line naming the file and why."""

    def __init__(self, path: str | Path, why: str):
        super().__init__(f"{path}: {why}")
        self.path = str(path)
        self.why = why

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def is_within(path: str | Path, root: str | Path) -> bool:
    """Does ``path``'s real path (links followed) lie inside ``root``'s?"""
    return _real_within(os.path.realpath(path), root)


def _real_within(real: str, root: str | Path) -> bool:
    """Does the real path ``real`` lie inside ``root``'s real path?"""
    base = os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _size_words(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{max(1, limit // 1024)} KiB"


def read_bytes(path: str | Path, limit: int, root: str | Path | None = None, cut: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; :class:`Unreadable` otherwise.

    With ``cut``, a bigger file gives its first ``limit + 1`` bytes instead (the caller
    sees it is too big and says so itself)."""
    target = os.fspath(path)
    if root is not None:
        real = os.path.realpath(target)
        if not _real_within(real, root):
            raise Unreadable(path, f"leaves {root} (a link pointing outside); not read")
        return _read_real(path, real, limit, cut)
    return _read(path, target, _FLAGS, limit, cut)


def _read_real(path: str | Path, real: str, limit: int, cut: bool) -> bytes:
    """The file at its real path (checked inside its root), opened never through a link."""
    return _read(path, real, _FLAGS | getattr(os, "O_NOFOLLOW", 0), limit, cut)


def _read(path: str | Path, target: str, flags: int, limit: int, cut: bool) -> bytes:
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise Unreadable(path, "no such file") from None
    except OSError as exc:
        raise Unreadable(path, f"cannot open: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((word for test, word in _KINDS if test(mode)), "not a regular file")
            raise Unreadable(path, f"is {kind}, not a regular file; not read")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except BlockingIOError:
        raise Unreadable(path, "would block; not read") from None
    except Unreadable:
        raise
    except OSError as exc:
        raise Unreadable(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit and not cut:
        raise Unreadable(path, f"larger than {_size_words(limit)}; not read")
    return data


def read_or_none(path: str | Path, limit: int, root: str | Path | None = None, cut: bool = False) -> bytes | None:
    """:func:`read_bytes`, with None for a refused or missing file."""
    try:
        return read_bytes(path, limit, root, cut)
    except Unreadable:
        return None


class TreeReader:
    """Many files of one tree read by the rule above with ``root``: the root's real path found once
    and each folder's once (a file's real path is its folder's and its name, unless the file is
    itself a link: then found whole), not a realpath walk of every component for every file
    (2,141 files of sglang/srt: ~0.2 s of a warm `graph --all`). One reader per pass over a tree:
    a folder made a link while it lives would be seen by its real path of before."""

    def __init__(self, root: str | Path):
        self.root = root
        self.base = os.path.realpath(root)
        self._folders: dict[str, str] = {}

    def real_path(self, path: str | Path) -> str:
        target = os.fspath(path)
        head, tail = os.path.split(target)
        if tail in ("", ".", ".."):
            return os.path.realpath(target)
        folder = self._folders.get(head)
        if folder is None:
            folder = self._folders[head] = os.path.realpath(head)
        try:
            if stat.S_ISLNK(os.lstat(target).st_mode):
                return os.path.realpath(target)
        except OSError:  # missing: its real path is its folder's and its name, as realpath says
            pass
        return os.path.join(folder, tail)

    def read_bytes(self, path: str | Path, limit: int, cut: bool = False) -> bytes:
        """:func:`read_bytes` of ``path`` with this reader's root."""
        real = self.real_path(path)
        if not (real == self.base or real.startswith(self.base.rstrip(os.sep) + os.sep)):
            raise Unreadable(path, f"leaves {self.root} (a link pointing outside); not read")
        return _read_real(path, real, limit, cut)

    def read_or_none(self, path: str | Path, limit: int, cut: bool = False) -> bytes | None:
        try:
            return self.read_bytes(path, limit, cut)
        except Unreadable:
            return None


MAX_JSON_DIGITS = 4000  # Python refuses to convert longer integers (sys.get_int_max_str_digits: 4300)


class _LongInteger(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise _LongInteger(len(text.lstrip("-")))
    return int(text)


def load_json(data: str | bytes, path: str | Path) -> Any:
    """JSON from a file tracer read, or :class:`Unreadable` with one line saying why: not
    UTF-8, not JSON (line and column), nesting deeper than the reader follows, or an integer
    of more digits than Python converts (a 5,000-digit layer count)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, parse_int=_parse_int)
    except UnicodeDecodeError as exc:
        raise Unreadable(path, f"is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise Unreadable(path, "nests deeper than tracer reads JSON (about 1,000 levels)") from None
    except _LongInteger as exc:
        raise Unreadable(path, f"holds an integer of {exc.args[0]:,} digits (at most {MAX_JSON_DIGITS:,} are read)") from None
    except json.JSONDecodeError as exc:
        raise Unreadable(path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:  # e.g. a float Python cannot hold
        raise Unreadable(path, f"is not valid JSON ({exc})") from None
