"""Inline suppressions: `# tracer: ignore[slug, ...]` (or `# tracer: ignore` for every slug).

The comment goes on the line a finding points at. Suppressed findings move
from ``findings`` to ``suppressed`` in the scan JSON; a suppression that
matches no finding becomes an ``unused-suppression`` finding (info), so stale
comments do not pile up (ruff's RUF100, mypy's warn_unused_ignores).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from tracer.discover import read_regular_bytes, read_regular_file
from tracer.findings import RULES, Rule

UNUSED = "unused-suppression"
MARKER = b"tracer: ignore"
MAX_READ_BYTES = 4 * 1024 * 1024  # scanned files over 1 MiB are never parsed (project.MAX_FILE_BYTES)
_COMMENT = re.compile(r"#\s*tracer:\s*ignore(?:\[(?P<slugs>[^\]]*)\])?")

RULES.setdefault(UNUSED, Rule(
    UNUSED, "info",
    "a `# tracer: ignore` comment suppresses no finding",
    "Reports inline suppressions (`# tracer: ignore[slug]` or `# tracer: ignore`) on lines where the scan "
    "reports no finding of that slug.",
    "A stale suppression hides the next real finding on that line, and tells readers a problem exists "
    "where there is none.",
    "self.model.layers_to_capture = ids  # tracer: ignore[dead-write]   (the write is read now)",
    "Remove the comment, or correct the slug.",
))


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


def apply_suppressions(scan_json: dict, root: str | Path | None = None, files: Iterable[str] | None = None,
                       source: SourceLines | None = None) -> dict:
    """Drop findings suppressed inline; report unused suppressions.

    ``root`` defaults to the scan's root. ``files`` (paths relative to it) says
    where unused suppressions are looked for (lint passes the touched files);
    by default, in every file the scan traced through.
    Returns the same dict, changed in place.
    """
    root = Path(root or scan_json["root"])
    source = source or SourceLines(root)
    used: dict[tuple[str, int], set[str]] = {}
    kept, suppressed = [], list(scan_json.get("suppressed") or [])
    for finding in scan_json["findings"]:
        if finding["slug"] == UNUSED or not finding.get("file") or finding.get("line", 0) < 1:
            kept.append(finding)
            continue
        if not source.has_marker(finding["file"]):
            kept.append(finding)
            continue
        parsed = parse_suppression(source.line(finding["file"], finding["line"]))
        if parsed is not None and (parsed[1] is None or finding["slug"] in parsed[1]):
            used.setdefault((finding["file"], finding["line"]), set()).add(finding["slug"])
            suppressed.append(finding)
        else:
            kept.append(finding)
    scan_json["findings"] = kept
    scan_json["suppressed"] = suppressed
    _refresh_model_slugs(scan_json)

    candidates = sorted(p for p in set(files) if source.has_marker(p)) if files is not None else _traced_files(source, scan_json)
    for path in candidates:
        if not path.endswith(".py"):
            continue
        for number, text in enumerate(source.lines(path), start=1):
            parsed = parse_suppression(text)
            if parsed is None:
                continue
            col, slugs = parsed
            hit = used.get((path, number), set())
            if slugs is None:
                unused = [] if hit else ["*"]
            else:
                unused = sorted(s for s in slugs if s not in hit)
            for slug in unused:
                what = "`# tracer: ignore`" if slug == "*" else f"`# tracer: ignore[{slug}]`"
                unknown = "" if slug == "*" or slug in RULES else f" ({slug!r} is not a tracer rule)"
                scan_json["findings"].append({
                    "slug": UNUSED, "severity": RULES[UNUSED].severity, "protocol": "", "entry": None,
                    "entries": [], "file": path, "line": number, "col": col,
                    "message": f"{what} suppresses no finding on this line{unknown}",
                    "hint": "Remove the comment, or correct the slug.", "chain": [],
                })
    return scan_json


def _refresh_model_slugs(scan_json: dict) -> None:
    """Each model's ``findings`` list names only slugs still reported for it."""
    remaining: dict[str, set[str]] = {}
    for finding in scan_json["findings"]:
        for entry in finding.get("entries") or ([finding["entry"]] if finding.get("entry") else []):
            remaining.setdefault(entry, set()).add(finding["slug"])
    gone = {(e, f["slug"]) for f in scan_json["suppressed"] for e in (f.get("entries") or [f.get("entry")]) if e}
    for model in scan_json.get("models", []):
        model["findings"] = sorted(s for s in model.get("findings", [])
                                   if (model["entry"], s) not in gone or s in remaining.get(model["entry"], ()))


def _traced_files(source: SourceLines, scan_json: dict) -> list[str]:
    """Files the scan traced through (entry files, hops, call sites, findings) that hold a marker.

    A suppression can only ever match a finding in these files; looking only
    here keeps a warm scan from reading every file of the tree again.
    """
    paths = {f["file"] for f in scan_json["findings"] + scan_json["suppressed"] if f.get("file")}
    for model in scan_json.get("models", []):
        paths.add(model["file"])
        for hop in model.get("chain", []):
            paths.update(p for p in (hop.get("file"), hop.get("call_file")) if p)
    paths.update(s["file"] for s in scan_json.get("call_sites", []) if s.get("file"))
    return [path for path in sorted(paths) if source.has_marker(path)]
