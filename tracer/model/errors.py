"""The two kinds of expected failure; neither is ever shown as a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """Bad command-line input or configuration: reported in one line, exit status 2."""


class InputError(Exception):
    """A file that cannot be read or parsed; carries the line when known."""

    def __init__(self, reason: str, line: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.line = line


class BodyUnreadable(Exception):
    """A function body the outline's skeleton left out does not parse: its module is an input
    error after all, and whatever was traced from its outline must be traced again without it
    (see ``Project.restartable``)."""

    def __init__(self, module: str):
        super().__init__(module)
        self.module = module
