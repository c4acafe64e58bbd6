"""The writing rule: every file tracer writes (reports, pictures, JSON/SARIF output,
baselines, cache entries, sweep pages) is written here.

- inside its output folder: with ``root``, the target must lie inside it, and no
  folder between the root and the file may be a link (a shipped
  ``report/models -> /elsewhere`` must not be written through);
- never through a link: a target that is a link is refused;
- temp file in the same folder, then rename: no reader ever sees half a file, and
  an interrupted write leaves no temp file behind (the temp name is registered so
  that an interrupt handler can remove it);
- the file gets the mode a new file gets under the user's umask (0644 with umask 022),
  as ruff, mypy and coverage write theirs: a report copied to a shared folder or
  served stays readable. The temp file is 0600 until it is complete.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path


def _umask() -> int:
    """The umask, from /proc where it says so (setting it to read it races other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _LOCK:
        value = os.umask(0o022)
        os.umask(value)
    return value


def new_file_mode() -> int:
    """0666 less the umask: what open() would give a new file."""
    return 0o666 & ~_umask()


_PENDING: set[str] = set()  # temp files being written right now (removed by the interrupt handler)
_LOCK = threading.Lock()


class Unwritable(OSError):
    """A write the rule refuses; ``str()`` is one line naming the file and why."""

    def __init__(self, path: str | Path, why: str):
        super().__init__(f"{path}: {why}")
        self.path = str(path)
        self.why = why

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def check_target(path: str | Path, root: str | Path | None = None) -> Path:
    """``path`` if writing it keeps to the rule, else :class:`Unwritable`."""
    target = Path(path)
    if target.is_symlink():
        raise Unwritable(target, "is a symbolic link; tracer does not write through links")
    if root is not None:
        base = Path(os.path.abspath(root))
        absolute = Path(os.path.abspath(target))
        try:
            relative = absolute.relative_to(base)
        except ValueError:
            raise Unwritable(target, f"is outside {root}; not written") from None
        if ".." in relative.parts:
            raise Unwritable(target, f"leaves {root}; not written")
        step = base
        for part in relative.parts[:-1]:
            step = step / part
            if step.is_symlink():
                raise Unwritable(target, f"{step} is a symbolic link; tracer does not write through links")
    check_folders_below_cwd(target)
    return target


def make_folder(path: str | Path) -> Path:
    """Create an output folder (and its parents), never through a link below the working folder."""
    folder = Path(path)
    check_folders_below_cwd(folder / "_")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def check_folders_below_cwd(path: str | Path) -> None:
    """No folder on the way to ``path`` below the working folder is a link: a checkout that
    ships ``results -> /elsewhere`` must not get ``-o results/x.sarif`` written there. (The
    working folder and what lies above it are the user's; a path elsewhere is checked only
    by ``root``.)"""
    try:
        cwd = Path(os.getcwd())
    except OSError:
        return
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(cwd)
    except ValueError:
        return
    step = cwd
    for part in relative.parts[:-1]:
        step = step / part
        if step.is_symlink():
            raise Unwritable(path, f"{step} is a symbolic link; tracer does not write through links")


def write_bytes(path: str | Path, data: bytes, root: str | Path | None = None, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` by temp file + rename, keeping to the writing rule; ``mode``
    (default: 0666 less the umask) is set on the complete file before it is renamed into place."""
    target = check_target(path, root)
    folder = target.parent if str(target.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    if root is not None:
        check_target(target, root)  # a folder made a link meanwhile
    # The name is registered before the file exists: an interrupt between creating the
    # file and registering it (inside tempfile.mkstemp) left a temp file behind.
    tmp = os.path.join(folder, f".{target.name[:80]}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    with _LOCK:
        _PENDING.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, new_file_mode() if mode is None else mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        with _LOCK:
            _PENDING.discard(tmp)
    return target


def remove_pending() -> None:
    """Remove the temp files of writes still under way (an interrupt: the process ends now;
    never blocks on a lock the interrupted thread may hold)."""
    locked = _LOCK.acquire(timeout=0.1)
    try:
        pending = list(_PENDING)
        _PENDING.clear()
    finally:
        if locked:
            _LOCK.release()
    for tmp in pending:
        try:
            os.unlink(tmp)
        except OSError:
            pass
