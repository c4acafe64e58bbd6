"""GitHub Actions workflow commands (`::error file=...,line=...::message`)."""

from __future__ import annotations

from tracer.model.escape import printable
from tracer.model.results import ScanResult

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """The message part of a workflow command, escaped as GitHub documents (%, CR, LF);
    any other control character (ESC, NUL, a bidi override) as a visible escape."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A property value (file=..., title=...), escaped as GitHub documents."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(scan: ScanResult) -> str:
    out = []
    for f in scan.findings:
        message = escape_data(f"{f.message} (hint: {f.hint})")
        out.append(f"::{LEVEL[f.severity]} file={escape_property(f.file)},line={f.line},col={f.col + 1},"
                   f"title={escape_property('tracer ' + f.slug)}::{message}")
    return "\n".join(out) + ("\n" if out else "")
