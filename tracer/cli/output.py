"""What the terminal gets: colour (--color, NO_COLOR, FORCE_COLOR, TERM=dumb) and
progress on stderr for the long commands.

Progress is click's own progress bar (click is already a dependency; rich would
be one more for one bar). It is drawn only when stderr is a terminal and the
command was not given --quiet: piped or redirected, nothing is written. The
stages give no per-file callback, so it says what is being done and the seconds
elapsed, redrawn by a timer thread; the bar is cleared before the result is
printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
COLOR_CHOICES = ("auto", "always", "never")


def color_enabled(choice: str = "auto", stream: IO[str] | None = None) -> bool:
    """--color always|never decide; auto follows NO_COLOR (https://no-color.org), then
    FORCE_COLOR, then TERM=dumb, then whether the stream is a terminal."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def color_option(func: F) -> F:
    return click.option("--color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
                        help="Colour the text output (auto: on a terminal, unless NO_COLOR or TERM=dumb; "
                             "FORCE_COLOR forces it).")(func)


def quiet_option(func: F | None = None, *, help: str = "No progress on stderr.") -> Any:
    """-q/--quiet; ``@quiet_option`` or ``@quiet_option(help=...)`` where it means more."""
    def add(f: F) -> F:
        return click.option("-q", "--quiet", is_flag=True, help=help)(f)
    return add(func) if func is not None else add


def progress_wanted(quiet: bool = False) -> bool:
    if quiet or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class Progress:
    """What a long command's block gets: ``note(message)`` prints a line on stderr
    (above the bar, when one is drawn)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.lock = threading.Lock()
        self.drawn = False

    def note(self, message: str) -> None:
        if self.quiet:
            return
        with self.lock:
            click.echo(("\r\x1b[2K" if self.drawn else "") + message, err=True)


@contextlib.contextmanager
def progress(label: str, quiet: bool = False, interval: float = 0.25) -> Iterator[Progress]:
    """``with progress("tracer: scanning sglang-0.5.23"):`` a bar with the seconds
    elapsed on stderr while the block runs (only on a terminal, never with --quiet)."""
    state = Progress(quiet)
    if not progress_wanted(quiet):
        yield state
        return
    started = time.monotonic()
    stop = threading.Event()
    bar = click.progressbar((_ for _ in ()), label=label, file=sys.stderr, show_eta=False, show_percent=False,
                            show_pos=False, width=16,
                            item_show_func=lambda _: f"{time.monotonic() - started:.0f} s")

    def tick() -> None:
        while not stop.wait(interval):
            with state.lock:
                bar.update(1, current_item=True)
    with state.lock:
        bar.render_progress()
        state.drawn = True
    thread = threading.Thread(target=tick, name="tracer-progress", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join()
        click.echo("\r\x1b[2K\x1b[?25h", nl=False, err=True)  # no line left behind; the cursor back
