"""A finding: what a check reports at one place."""

from __future__ import annotations

from dataclasses import dataclass, field

from tracer.model.kinds import Severity


@dataclass(frozen=True)
class Finding:
    slug: str
    severity: Severity
    protocol: str
    entry: str | None  # entry class qualname; None for runner-side and input findings
    file: str
    line: int
    col: int
    message: str
    hint: str
    chain: tuple[str, ...] = ()
    entries: tuple[str, ...] = field(default=())  # every entry class affected (deduplicated findings)
    fingerprint: str = ""  # lint: hash of the enclosing def and the stripped line

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.col, self.slug, self.entry or "")
