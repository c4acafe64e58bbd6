"""SIGINT and SIGTERM end every command within a second: exit 130 (SIGINT) or 143
(SIGTERM), one line on stderr, no traceback, no worker left behind, no temp file.

- The main thread's handler kills the worker processes at once (so no pool's
  shutdown waits on them) and raises :class:`Interrupted`, which unwinds through
  the ``finally`` blocks (temporary folders removed); the command group then ends
  the process without running exit handlers that could join dead pools.
- Python runs signal handlers only between bytecodes of the main thread: while it
  sits in native code (libcst's parser) the handler waits. So the signal also
  wakes a watcher thread (``signal.set_wakeup_fd``, written by the C-level
  handler whatever the main thread does); if the process has not ended
  ``GRACE`` seconds later, the watcher kills the children, removes the temp files
  of writes under way and ends the process itself.
- Installed as the first thing ``tracer.cli`` does (before click, libcst and the
  stages are imported); a signal in the interpreter's own start-up before that
  (the first ~50 ms) meets Python's default handling.
- Forked workers inherit the handlers: in a worker a signal ends it quietly (the
  parent decides what happens), and the wakeup fd is dropped so a worker's signal
  never reaches the parent's watcher.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

GRACE = 0.6  # seconds the main thread gets to unwind before the watcher ends the process
_OWNER = 0
_RECEIVED: list[int] = []
_DONE = threading.Event()
_ARMED = threading.Event()  # set while a command runs: the handler unwinds; otherwise it ends at once


def armed(on: bool) -> None:
    """While a command runs an interrupt unwinds it (finally blocks run); before (imports)
    and after (exit) there is nothing to unwind: the process ends at once."""
    if on:
        _ARMED.set()
    else:
        _ARMED.clear()


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def code(self) -> int:
        return 128 + self.signum


def received() -> int | None:
    """The signal that interrupted this process, if one did."""
    return _RECEIVED[0] if _RECEIVED else None


def _children() -> list[int]:
    """Every direct child process (worker pools, git, dot), from /proc; [] elsewhere."""
    me = str(os.getpid())
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read(4096).decode(errors="replace")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and fields[1] == me:
            found.append(int(entry))
    return found


def kill_children(reap: bool = False) -> None:
    """SIGKILL every child. Nothing here imports or takes a lock another thread could hold
    (this runs in a signal handler and in the watcher): children are found in /proc."""
    pids = set(_children())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if reap:  # only when the process ends now: a pool still unwinding waits for its own workers
        _reap(pids)


def _reap(pids: set[int], within: float = 0.2) -> None:
    """Wait (briefly) for killed children, so none is left a zombie for an init that never reaps."""
    deadline = time.monotonic() + within
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # not ours to wait for, or already reaped (multiprocessing did)
            except OSError:
                done = pid
            if done:
                left.discard(pid)
        if left:
            time.sleep(0.005)


def finish(code: int, message: str = "tracer: interrupted", flush: bool = True) -> None:
    """End the process now: children killed, temp files removed, one line, ``code``.
    (The watcher passes ``flush=False``: the main thread may hold stdout's lock.)"""
    _DONE.set()
    kill_children(reap=True)
    writes = sys.modules.get("tracer.safeio.write")  # not imported yet: no write under way
    if writes is not None:
        writes.remove_pending()
    if flush:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say there
            pass
    try:
        os.write(2, (message + "\n").encode())
    except OSError:
        pass
    os._exit(code)


def _quiet(*args: object) -> None:
    """After an interrupt, threads (a pool's manager finding its workers killed) end silently."""


def _mark(signum: int) -> None:
    if not _RECEIVED:
        _RECEIVED.append(signum)
    threading.excepthook = _quiet
    sys.unraisablehook = _quiet


def _handler(signum: int, frame: object) -> None:
    if os.getpid() != _OWNER:
        os._exit(128 + signum)  # a forked worker: quietly; the parent reports
    _mark(signum)
    if not _ARMED.is_set():
        finish(128 + signum)
    kill_children()
    raise Interrupted(signum)


def _watch(read_fd: int) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return
        signum = next((b for b in data if b in (signal.SIGINT, signal.SIGTERM)), 0)
        if not signum:
            continue
        _mark(signum)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and not _DONE.is_set():
            time.sleep(0.02)
        if not _DONE.is_set():
            finish(128 + signum, flush=False)


def _in_child() -> None:
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass


def install() -> None:
    """Called once by the command group, in the main thread, before any command runs."""
    global _OWNER
    if _OWNER == os.getpid() or threading.current_thread() is not threading.main_thread():
        return
    _OWNER = os.getpid()
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    os.register_at_fork(after_in_child=_in_child)
    # the watcher first: a signal from here on always finds it
    threading.Thread(target=_watch, args=(read_fd,), name="tracer-interrupt", daemon=True).start()
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)
