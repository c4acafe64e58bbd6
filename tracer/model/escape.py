"""Names and values from a scanned tree, made safe for a line of output.

A stranger's tree chooses its file names, class names and source strings: a newline
in a file name would forge a finding line (``x.py:1:1: ok``), an ESC sequence would
drive the terminal, a bidi override would reorder what a reviewer reads. Every
text and workflow-command output passes such values through :func:`printable`:
control, format and separator characters (other than a plain space) become
``\\xNN`` / ``\\uNNNN`` escapes; everything else is kept as it is.
"""

from __future__ import annotations


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object) -> str:
    value = str(text)
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else _escape(c) for c in value)
