"""tracer: a static code-path tracer for LLM inference frameworks."""

import sys as _sys


def _drop_working_folder() -> None:
    """``python -m tracer`` puts the working folder first on ``sys.path``: inside a scanned
    checkout, its ``signal.py`` (or any module named like one tracer imports later) would
    run. This package's ``__init__`` is the first of tracer's code to run (``sys.argv[0]``
    is still ``-m`` while runpy imports it), so the entry goes before any other import.
    It stays when tracer itself was found there (a tracer checkout: its own code).
    What Python imported before this point cannot be helped here; ``python -P -m tracer``
    or the ``tracer`` command avoid the entry altogether."""
    if _sys.argv[:1] != ["-m"] or getattr(_sys.flags, "safe_path", False) or not _sys.path:
        return
    import os

    first = _sys.path[0]
    try:
        cwd = os.getcwd()
    except OSError:  # the working folder was removed: the entry can only be stale
        cwd = first
    if os.path.abspath(first or cwd) != os.path.abspath(cwd):
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.abspath(cwd) == here:
        return  # tracer's own checkout: the entry is what found this package
    del _sys.path[0]


_drop_working_folder()

__version__ = "0.1.0"
