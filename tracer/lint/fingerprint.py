"""A finding's identity across edits: slug, protocol, entry and a fingerprint of the
enclosing def and the stripped source line, so a line moved by an unrelated edit
is the same finding."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tracer.lint.suppress import SourceLines

_DEF = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+(\w+)")


def enclosing_def(lines: list[str], number: int) -> str:
    """Dotted name of the defs and classes around line ``number`` (1-based), innermost last."""
    if not 0 < number <= len(lines):
        return ""
    target = lines[number - 1]
    indent = len(target) - len(target.lstrip())
    names = []
    own = _DEF.match(target)
    if own:
        names.append(own.group(3))
    for text in reversed(lines[: number - 1]):
        stripped = text.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("@"):
            continue
        width = len(text) - len(text.lstrip())
        if width >= indent:
            continue
        match = _DEF.match(text)
        if match:
            names.append(match.group(3))
            indent = width
            if width == 0:
                break
    return ".".join(reversed(names))


def fingerprint(source: SourceLines, finding: dict) -> str:
    """Hash of the enclosing def and the stripped line: stable across unrelated line moves."""
    lines = source.lines(finding["file"]) if finding.get("file") else []
    line = lines[finding["line"] - 1].strip() if 0 < finding.get("line", 0) <= len(lines) else ""
    line = re.sub(r"#\s*tracer:\s*ignore(\[[^\]]*\])?", "", line).strip()
    text = "\n".join([finding.get("protocol") or "", enclosing_def(lines, finding.get("line", 0)), line])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def add_fingerprints(findings: list[dict], root: str | Path, source: SourceLines | None = None) -> None:
    source = source or SourceLines(root)
    for finding in findings:
        finding["fingerprint"] = fingerprint(source, finding)


def keys(finding: dict) -> list[tuple[str, str, str, str]]:
    """One (slug, protocol, entry, fingerprint) per affected entry (runner findings: entry "")."""
    entries = finding.get("entries") or ([finding["entry"]] if finding.get("entry") else [""])
    return [(finding["slug"], finding.get("protocol") or "", e, finding["fingerprint"]) for e in entries]
