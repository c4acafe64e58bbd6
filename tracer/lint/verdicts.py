"""Verdict changes against the base are findings: an entry class whose chain worked at
the base and no longer does is a ``support-regression`` (one per entry class, at the
change's line in the hop that changed); one that gains support is ``support-gained``.

Where: the first hop of the base chain whose def the diff touches (the setter, a
delegate, the state write, a reader), at the working tree's first changed line in it;
else the first hop of the working tree's chain with a changed line; else the first
changed line of a file the entry's result depended on; else the entry class itself.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from tracer.checks import finding
from tracer.index.source import read_regular_bytes
from tracer.lint.git import ChangedLines
from tracer.present.scan_json import finding_to_json

LOST = ("missing", "broken", "unknown")


class Sources:
    """Base and working-tree texts of files, read once each, with their def spans."""

    def __init__(self, base_text: Callable[[str], str | None], head_text: Callable[[str], str | None]):
        self._read = {"base": base_text, "head": head_text}
        self._texts: dict[tuple[str, str], str | None] = {}
        self._spans: dict[tuple[str, str], list[tuple[int, int]] | None] = {}

    def text(self, side: str, path: str) -> str | None:
        if (side, path) not in self._texts:
            self._texts[(side, path)] = self._read[side](path)
        return self._texts[(side, path)]

    def spans(self, side: str, path: str) -> list[tuple[int, int]] | None:
        key = (side, path)
        if key not in self._spans:
            text = self.text(side, path)
            try:
                tree = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError):
                tree = None
            self._spans[key] = None if tree is None else [
                (min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno or n.lineno)
                for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return self._spans[key]

    def indent(self, side: str, path: str, line: int) -> int:
        """The column a line's code starts at (0 when unknown)."""
        lines = (self.text(side, path) or "").splitlines()
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return len(text) - len(text.lstrip())

    def span(self, side: str, path: str, line: int) -> tuple[int, int]:
        """The innermost def around ``line`` (the line alone outside any def)."""
        around = [s for s in self.spans(side, path) or () if s[0] <= line <= s[1]]
        return max(around, key=lambda s: s[0]) if around else (line, line)


def _short(qualname: str) -> str:
    parts = qualname.split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 else qualname


def _where(model: dict, base_model: dict | None, deps: list[str], diffs: ChangedLines,
           sources: Sources) -> tuple[str, int, str]:
    """(file, line, what changed) for a verdict change."""
    for hop in (base_model or {}).get("chain") or ():
        path = hop.get("file")
        diff = diffs.get(path or "")
        if diff is None or diff.added or not hop.get("line"):
            continue
        first, last = sources.span("base", path, hop["line"])
        if diff.touches_old(first, last):
            line = diff.new_line_for_old(first, last)
            return path, line, (f"the {hop['kind']} hop {_short(hop['qualname'])} "
                                f"({path}:{hop['line']} at the base)")
    for hop in model.get("chain") or ():
        path = hop.get("file")
        diff = diffs.get(path or "")
        if diff is None or not hop.get("line"):
            continue
        first, last = sources.span("head", path, hop["line"])
        line = next((n for n in range(first, last + 1) if diff.is_new_line(n)), 0)
        if line:
            return path, line, f"the {hop['kind']} hop {_short(hop['qualname'])}"
    for path in deps:
        diff = diffs.get(path)
        if diff is not None:
            line = 1 if diff.added else next((max(c, 1) for c, _ in diff.new), 1)
            return path, line, f"{path}, which the chain of {_short(model['entry'])} depends on"
    return model["file"], model["line"], f"{_short(model['entry'])}"


def verdict_changes(record: dict, head: dict, diffs: ChangedLines,
                    sources: Sources) -> list[dict]:
    """support-regression / support-gained findings (scan-JSON shaped) for the re-traced entries."""
    base_models = {(m["protocol"], m["entry"]): m for m in record["scan"]["models"]}
    base_entries = {entry for _, entry in base_models}
    found: list[dict] = []
    models = list(head["models"])
    for (proto, entry), before in base_models.items():
        if proto in head.get("dropped", ()):  # no file names the setter any more: every chain is gone
            setter = next((h["qualname"].rpartition(".")[2] for h in before.get("chain") or ()), "its setter")
            models.append(dict(before, verdict="missing", chain=[],
                               reason=f"no file of the package names {setter} any more"))
    for model in models:
        key = (model["protocol"], model["entry"])
        before = base_models.get(key)
        was = before["verdict"] if before else None
        now = model["verdict"]
        if model.get("draft") or (before or {}).get("draft"):
            continue  # the runner never calls the setter on a draft head
        regression = was == "ok" and now in LOST
        gain = now == "ok" and (was is None or was in LOST)
        if not (regression or gain):
            continue
        deps = [p for p in record["deps"].get(f"{key[0]}|{key[1]}", []) if p in diffs]
        path, line, what = _where(model, before, deps, diffs, sources)
        chain = tuple(h["qualname"] for h in (model.get("chain") or (before or {}).get("chain") or ()))
        name = model["entry"].rpartition(".")[2]
        setter = next((h["qualname"].rpartition(".")[2] for h in (before or model).get("chain") or ()
                       if h.get("kind") == "setter"), "the setter")
        if regression:
            made = finding("support-regression", "", protocol=key[0], entry=key[1], file=path, line=line,
                           col=sources.indent("head", path, line), chain=chain, setter=setter, entry_name=name,
                           before=was, after=now, what=what,
                           why=model.get("reason") or now)
        else:
            made = finding("support-gained", "new" if key[1] not in base_entries else "", protocol=key[0],
                           entry=key[1], file=path, line=line, col=sources.indent("head", path, line), chain=chain,
                           setter=setter, entry_name=name, before=was or "not traced",
                           what=what)
        found.append(dict(finding_to_json(made), entries=[key[1]], entry=key[1]))
    return found


def reader(root: Path, limit: int) -> Callable[[str], str | None]:
    """The working tree's text of a path (regular files inside the root, bounded)."""
    def read(path: str) -> str | None:
        data = read_regular_bytes(root / path, limit, root)
        return data.decode("utf-8", errors="replace") if data is not None else None

    return read
