"""Which Python a file's syntax needs, when the running one cannot parse it.

tracer parses with the ``ast`` of the Python it runs on, so a release written for a
newer Python (PEP 695 generics, ``type X = ...``) fails to parse on an older one.
That is an input error of the file, never a silent skip: this module names the
construct and the Python it needs, so the message says how to scan the file.
"""

from __future__ import annotations

import re
import sys

# (pattern on the line the parser stopped at, the Python that added it, what it is)
NEWER = (
    (re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*(\[.*\])?\s*="), (3, 12), "a `type` alias statement (PEP 695)"),
    (re.compile(r"^\s*(async\s+)?def\s+[A-Za-z_]\w*\s*\["), (3, 12), "a generic function (PEP 695)"),
    (re.compile(r"^\s*class\s+[A-Za-z_]\w*\s*\["), (3, 12), "a generic class (PEP 695)"),
    (re.compile(r"^\s*except\s*\*"), (3, 11), "an `except*` clause (PEP 654)"),
    (re.compile(r"^\s*except\s+[^():]+,[^:]*:\s*(#.*)?$"), (3, 14), "an `except` of several types without parentheses (PEP 758)"),
    (re.compile(r"(?<![\w'\"])(?:[tT]|[rR][tT]|[tT][rR])['\"]"), (3, 14), "a template string (PEP 750)"),
)


def needs_newer(text: str, lineno: int | None, running: tuple[int, int] = sys.version_info[:2]) -> str:
    """``"; a generic class (PEP 695) needs Python 3.12 or newer (tracer runs on 3.11)"`` when the
    line the parser stopped at (or the one before) uses syntax newer than ``running``, else ""."""
    lines = text.splitlines()
    for number in (lineno, (lineno or 0) - 1):
        if not number or not 0 < number <= len(lines):
            continue
        for pattern, version, what in NEWER:
            if version > running and pattern.search(lines[number - 1]):
                return (f"; {what} needs Python {version[0]}.{version[1]} or newer (tracer runs on "
                        f"{running[0]}.{running[1]}: run it with a newer Python to scan this file)")
    return ""
