"""Inline suppressions: `# tracer: ignore[slug, ...]` (or `# tracer: ignore` for every slug).

The comment goes on the line a finding points at. Suppressed findings move from
``findings`` to ``suppressed``; a suppression that matches no finding becomes an
``unused-suppression`` finding (info), so stale comments do not pile up (ruff's
RUF100, mypy's warn_unused_ignores).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tracer.checks import SLUGS, finding
from tracer.index.source import read_regular_bytes, read_regular_file
from tracer.model.findings import Finding
from tracer.model.results import ScanResult
from tracer.present.scan_json import finding_from_json, finding_to_json

UNUSED = "unused-suppression"
MARKER = b"tracer: ignore"
MAX_READ_BYTES = 4 * 1024 * 1024  # scanned files over 1 MiB are never parsed (project.MAX_FILE_BYTES)
_COMMENT = re.compile(r"#\s*tracer:\s*ignore(?:\[(?P<slugs>[^\]]*)\])?")


class SourceLines:
    """Lines of files under a root, read once each (missing files read as empty)."""

    def __init__(self, root: str | Path, overrides: dict[str, str | None] | None = None):
        self.root = Path(root)
        self.overrides = overrides or {}  # path -> the file to read instead (None: absent)
        self._lines: dict[str, list[str]] = {}
        self._marked: dict[str, bool] = {}

    def _target(self, path: str) -> tuple[Path, Path] | None:
        """(file, the folder it must stay inside) for a path, honouring overrides."""
        if path in self.overrides:
            found = self.overrides[path]
            return (Path(found), Path(found).parent) if found is not None else None
        return self.root / path, self.root

    def has_marker(self, path: str) -> bool:
        """Cheap byte test before any line is split: does the file hold a suppression at all?"""
        if path not in self._marked:
            target = self._target(path)
            data = read_regular_bytes(target[0], MAX_READ_BYTES, target[1]) if target else None
            self._marked[path] = data is not None and MARKER in data
        return self._marked[path]

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            target = self._target(path)
            text = (read_regular_file(target[0], MAX_READ_BYTES, target[1]) if target else None) or ""
            self._lines[path] = text.splitlines()
        return self._lines[path]

    def line(self, path: str, number: int) -> str:
        lines = self.lines(path)
        return lines[number - 1] if 0 < number <= len(lines) else ""


def parse_suppression(line: str) -> tuple[int, frozenset[str] | None] | None:
    """(column of the comment, slugs or None for all) for a line carrying a suppression comment."""
    if "tracer:" not in line:
        return None
    match = _COMMENT.search(line)
    if match is None or _in_string(line, match.start()):
        return None
    slugs = match.group("slugs")
    if slugs is None:
        return match.start(), None
    return match.start(), frozenset(s.strip() for s in slugs.split(",") if s.strip())


def _in_string(line: str, pos: int) -> bool:
    """Rough check that position ``pos`` lies inside a string literal (odd count of quotes before it)."""
    before = line[:pos]
    return before.count('"') % 2 == 1 or before.count("'") % 2 == 1


def split_suppressed(findings: Sequence[Finding], source: SourceLines
                     ) -> tuple[list[Finding], list[Finding], dict[tuple[str, int], set[str]]]:
    """(kept, suppressed, {(file, line): slugs used}). An input error is never suppressed:
    a file tracer could not read is not a finding anyone may accept."""
    used: dict[tuple[str, int], set[str]] = {}
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    for item in findings:
        if item.slug in (UNUSED, "input-error") or not item.file or item.line < 1 or not source.has_marker(item.file):
            kept.append(item)
            continue
        parsed = parse_suppression(source.line(item.file, item.line))
        if parsed is not None and (parsed[1] is None or item.slug in parsed[1]):
            used.setdefault((item.file, item.line), set()).add(item.slug)
            suppressed.append(item)
        else:
            kept.append(item)
    return kept, suppressed, used


def unused_suppressions(source: SourceLines, paths: Iterable[str], used: dict[tuple[str, int], set[str]]
                        ) -> list[Finding]:
    found = []
    for path in paths:
        if not path.endswith(".py"):
            continue
        for number, text in enumerate(source.lines(path), start=1):
            parsed = parse_suppression(text)
            if parsed is None:
                continue
            col, slugs = parsed
            hit = used.get((path, number), set())
            unused = ([] if hit else ["*"]) if slugs is None else sorted(s for s in slugs if s not in hit)
            for slug in unused:
                what = "`# tracer: ignore`" if slug == "*" else f"`# tracer: ignore[{slug}]`"
                unknown = "" if slug == "*" or slug in SLUGS else f" ({slug!r} is not a tracer rule)"
                found.append(finding(UNUSED, "", file=path, line=number, col=col, what=what, unknown=unknown))
    return found


def apply_suppressions(result: ScanResult, root: str | Path | None = None, files: Iterable[str] | None = None,
                       source: SourceLines | None = None) -> ScanResult:
    """The result without the findings suppressed inline, plus unused suppressions.

    ``files`` (paths relative to the root) says where unused suppressions are looked
    for (lint passes the touched files); by default, in every file the scan traced through.
    """
    source = source or SourceLines(root or result.root)
    kept, suppressed, used = split_suppressed(result.findings, source)
    gone = {(e, f.slug) for f in suppressed for e in (f.entries or (f.entry,)) if e}
    still = {(e, f.slug) for f in kept for e in (f.entries or (f.entry,)) if e}
    models = tuple(dataclasses.replace(m, findings=tuple(
        f for f in m.findings if (m.entry, f.slug) not in gone or (m.entry, f.slug) in still))
        for m in result.models)
    candidates = (sorted(p for p in set(files) if source.has_marker(p)) if files is not None
                  else _traced_files(source, result))
    unused = unused_suppressions(source, candidates, used)
    return dataclasses.replace(result, findings=tuple(kept) + tuple(unused), models=models,
                               suppressed=result.suppressed + tuple(suppressed))


def apply_to_json(scan_json: dict[str, Any], root: str | Path, files: Iterable[str] | None = None,
                  source: SourceLines | None = None) -> dict[str, Any]:
    """The same for lint's finding lists (dicts in the scan JSON's shape), in place."""
    source = source or SourceLines(root)
    kept, suppressed, used = split_suppressed([finding_from_json(f) for f in scan_json["findings"]], source)
    candidates = sorted(p for p in set(files) if source.has_marker(p)) if files is not None else []
    unused = unused_suppressions(source, candidates, used)
    scan_json["findings"] = [finding_to_json(f) for f in kept + unused]
    scan_json["suppressed"] = list(scan_json.get("suppressed") or []) + [finding_to_json(f) for f in suppressed]
    gone = {(e, f.slug) for f in suppressed for e in (f.entries or (f.entry,)) if e}
    still = {(e, f.slug) for f in kept for e in (f.entries or (f.entry,)) if e}
    for model in scan_json.get("models", []):
        model["findings"] = [s for s in model.get("findings", [])
                             if (model["entry"], s) not in gone or (model["entry"], s) in still]
    return scan_json


def _traced_files(source: SourceLines, result: ScanResult) -> list[str]:
    """Files the scan traced through (entry files, hops, call sites, findings) that hold a marker.

    A suppression can only ever match a finding in these files; looking only
    here keeps a warm scan from reading every file of the tree again.
    """
    paths = {f.file for f in result.findings + result.suppressed if f.file}
    for model in result.models:
        paths.add(model.file)
        for hop in model.chain:
            paths.update(p for p in (hop.file, hop.call_file) if p)
    paths.update(s.file for s in result.call_sites if s.file)
    return [path for path in sorted(paths) if source.has_marker(path)]
