"""The lint documents as JSON: the result `tracer lint --format json` prints, the records the
lint cache keeps (a base revision's scan record, a cached result; compact), and the baseline
file `tracer baseline` writes and lint reads. The lint stage passes these as plain values;
only this module reads or writes their JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from tracer.model.errors import UsageError

BASELINE_VERSION = 2
BASELINE_COMMENT = ("Accepted findings: tracer lint reports only findings not listed here. "
                    "Keyed on slug, protocol, entry, anchor (file and enclosing def) and a fingerprint of the "
                    "normalised statement; "
                    "file and line are for readers.")


class BaselineEntry(NamedTuple):
    """One accepted finding as the baseline file lists it: its identity (what lint matches on)
    and, for readers, where it was and what it said."""

    slug: str
    protocol: str
    entry: str
    anchor: str
    fingerprint: str
    file: str
    line: int
    message: str


def lint_result_text(result: dict[str, Any]) -> str:
    """`tracer lint --format json`."""
    return json.dumps(result, indent=2) + "\n"


def record_bytes(record: dict[str, Any]) -> bytes:
    """A lint cache record (the base's scan record, a cached result), compact."""
    return json.dumps(record, separators=(",", ":")).encode()


def record_from_bytes(payload: bytes | None) -> dict[str, Any] | None:
    """A record from ``record_bytes``; None for no payload or one that is no JSON object."""
    try:
        value = json.loads(payload) if payload is not None else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def baseline_entries(data: bytes) -> list[tuple[str, str, str, str, str]]:
    """(slug, protocol, entry, anchor, fingerprint) of every accepted finding of a baseline
    file's bytes (a baseline of version 1 has no anchors: ""); a UsageError when the bytes
    are no tracer baseline."""
    if not data:
        return []
    try:
        doc = json.loads(data)
        return [(e["slug"], e.get("protocol") or "", e.get("entry") or "", e.get("anchor") or "",
                 e["fingerprint"]) for e in doc["findings"]]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise UsageError(f"baseline file is not a tracer baseline: {exc}") from None


def baseline_bytes(entries: Sequence[BaselineEntry]) -> bytes:
    """The baseline file listing ``entries``."""
    doc = {"tool": "tracer", "version": BASELINE_VERSION, "comment": BASELINE_COMMENT,
           "findings": [entry._asdict() for entry in entries]}
    return (json.dumps(doc, indent=1) + "\n").encode("utf-8")
