"""Verified fixes: propose each finding's codemod, re-trace the chains it can reach, keep it
only if its finding is gone and no new finding appears there.

Plain data in (the scanned tree, a base record as lint keeps one, the findings as JSON), edits
out (:class:`FixReport`). A candidate is never written to the tree to be checked: the re-trace
(``tracer.lint.retrace.retrace``, the pipeline's ``analyse()`` on the entries a change can
reach) reads it through a view, a temp file outside the tree; a fix whose re-trace fails is
rolled back by dropping it. :func:`write_fixes` writes the kept ones by the writing rule.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tracer.checks import CATALOGUE
from tracer.fix.codemods import CODEMODS
from tracer.fix.fields import read_fields
from tracer.lint.records import NeedFullScan, Options
from tracer.lint.retrace import retrace
from tracer.safeio.read import Unreadable, read_bytes
from tracer.safeio.write import Unwritable, check_target, write_bytes

_MAX_FILE = 1024 * 1024  # files over 1 MiB are never parsed, so never fixed
Retrace = Callable[..., dict]


@dataclass(frozen=True)
class Replacement:
    """One fix as a region of the file it was computed on: lines ``start``..``end`` (1-based,
    ``end`` = start - 1 for a pure insertion) become ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Outcome:
    slug: str
    file: str
    line: int
    message: str
    status: str  # fixed | rolled-back | unsafe | not-fixable
    why: str = ""
    title: str = ""
    replacements: tuple[Replacement, ...] = ()


@dataclass(frozen=True)
class FixReport:
    outcomes: tuple[Outcome, ...]
    originals: Mapping[str, str] = field(default_factory=dict)  # path -> text before
    fixed: Mapping[str, str] = field(default_factory=dict)  # path -> text with every kept fix

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def summary(self, written: bool = True) -> str:
        done = "fixed" if written else "would fix"
        line = f"{done} {self.count('fixed')} (verified by re-trace), " \
               f"{self.count('not-fixable') + self.count('rolled-back')} not fixable automatically"
        if self.count("rolled-back"):
            line += f" ({self.count('rolled-back')} rolled back: the re-trace did not confirm them)"
        if self.count("unsafe"):
            line += f"; {self.count('unsafe')} more with --unsafe-fixes"
        return line

    def diff(self) -> str:
        chunks: list[str] = []
        for path in sorted(self.fixed):
            chunks.extend(difflib.unified_diff(self.originals[path].splitlines(keepends=True),
                                               self.fixed[path].splitlines(keepends=True),
                                               f"a/{path}", f"b/{path}"))
        return "".join(c if c.endswith("\n") else c + "\n\\ No newline at end of file\n" for c in chunks)


def _entries(finding: Mapping) -> list[str]:
    return list(finding.get("entries") or ([finding["entry"]] if finding.get("entry") else [""]))


def _keys(findings: Iterable[Mapping], head: Mapping) -> Counter:
    """Per affected entry: (slug, protocol, entry, file, message without line numbers), in the
    re-trace's scope (its affected entries; runner findings where the runner was re-analysed)."""
    affected = {(p, e) for p, entries in head["affected"].items() for e in entries}
    found: Counter = Counter()
    for f in findings:
        message = re.sub(r"(\.py):\d+", r"\1", f.get("message", ""))
        for entry in _entries(f):
            if head.get("everywhere") or (entry and (f.get("protocol"), entry) in affected) or \
                    (not entry and head["runner"]):
                found[(f["slug"], f.get("protocol") or "", entry, f.get("file") or "", message)] += 1
    return found


_EVERYWHERE = {"affected": {}, "runner": True, "everywhere": True}


def _site(key: tuple) -> tuple:
    """A finding's (slug, protocol, file, message), whatever the entry."""
    return key[0], key[1], key[3], key[4]


def _gone(finding: Mapping, head: Mapping) -> bool:
    """Whether the re-trace ``head`` reaches the finding's chains and no longer has it."""
    target = _keys([finding], head)
    present = _keys(head["findings"], head)
    return bool(target) and not any(present[k] for k in target)


def _replacements(before: str, after: str) -> tuple[Replacement, ...]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            found.append(Replacement(i1 + 1, i2, "".join(new[j1:j2])))
    return tuple(found)


def propose(finding: Mapping, source: str) -> tuple[str | None, str]:
    """(the fixed source, "") or (None, why the finding is not fixable automatically)."""
    rule = CATALOGUE.get(finding["slug"])
    fix = rule.autofix if rule is not None else None
    if rule is None or fix is None:
        return None, "no automatic fix for this rule"
    read = read_fields(rule.messages, rule.hints, finding.get("message", ""), finding.get("hint", ""))
    if read is None or read[0] not in fix.variants:
        return None, "this form of the finding has no automatic fix"
    codemod = CODEMODS[fix.codemod]
    fixed = codemod(source, int(finding.get("line") or 0), read[1])
    if fixed is None or fixed == source:
        return None, "the code is not the shape the fix repairs"
    return fixed, ""


def fix_findings(root: str | Path, record: dict, findings: Sequence[Mapping], options: Options,
                 unsafe: bool = False, touched: Sequence[str] = (), retrace_with: Retrace = retrace,
                 effective: Callable[[dict, dict], dict] | None = None) -> FixReport:
    """Each finding's fix, verified one at a time on top of the fixes kept before it (a file's
    findings bottom-up, so a kept edit does not move the lines of those still to come).
    ``touched``: files the record does not reflect yet (lint: the working tree's change);
    ``effective``: adds the effective-layers findings to a re-trace (scan with configs)."""
    root = Path(root)
    originals: dict[str, str] = {}
    kept: dict[str, str] = {}
    outcomes: list[Outcome] = []
    order = sorted(findings, key=lambda f: (f.get("file") or "", -(f.get("line") or 0), f["slug"]))
    with tempfile.TemporaryDirectory(prefix="tracer-fix-") as scratch:
        views: dict[str, str] = {}

        def view_of(texts: Mapping[str, str]) -> dict[str, str | None]:
            for path, text in texts.items():
                target = os.path.join(scratch, f"{abs(hash((path, text)))}.py")
                if not os.path.exists(target):
                    Path(target).write_text(text, encoding="utf-8")
                views[path] = target
            return {path: views[path] for path in texts}

        heads: dict[tuple[object, ...], dict] = {}

        def head(texts: Mapping[str, str], also: str) -> dict:
            """The re-trace of what ``also`` reaches, with ``texts`` (every kept fix) in place of the tree's
            files (a kept fix elsewhere was verified on what it reaches; where that overlaps, it is here)."""
            key = (also, *sorted(texts.items()))
            if key not in heads:
                view = view_of(texts)
                keep: dict = {}
                traced = retrace_with(root, record, sorted(set(touched) | {also}), options, view=view, keep=keep)
                heads[key] = effective(traced, keep) if effective is not None and keep else traced
            return heads[key]

        known = {_site(k) for k in _keys(list(record.get("scan", {}).get("findings", []))
                                         + list(record.get("scan", {}).get("suppressed", [])), _EVERYWHERE)}
        for finding in order:
            path, line = finding.get("file") or "", int(finding.get("line") or 0)
            rule = CATALOGUE.get(finding["slug"])
            fix = rule.autofix if rule is not None else None

            def outcome(status: str, why: str = "", replacements: tuple[Replacement, ...] = (),
                        finding: Mapping = finding, path: str = path, line: int = line) -> Outcome:
                return Outcome(finding["slug"], path, line, finding.get("message", ""), status, why,
                               fix.title if fix is not None else "", replacements)

            if fix is not None and not fix.safe and not unsafe:
                outcomes.append(outcome("unsafe", "an unsafe fix: applied only with --unsafe-fixes"))
                continue
            source = kept.get(path) if path in kept else _read(root, path)
            if source is None:
                outcomes.append(outcome("not-fixable", "the file cannot be fixed in place (a link, not UTF-8, "
                                                       "too big, or outside the tree)"))
                continue
            if path in kept and _gone(finding, head(kept, path)):
                outcomes.append(outcome("fixed", "by an earlier fix on the same lines"))
                continue
            candidate, why = propose(finding, source)
            if candidate is None:
                outcomes.append(outcome("not-fixable", why))
                continue
            originals.setdefault(path, source)
            try:
                before = head(kept, path)
                old = _keys(before["findings"], before)
                target = _keys([finding], before)
                after = head({**kept, path: candidate}, path)
            except NeedFullScan as exc:
                outcomes.append(outcome("rolled-back", f"the re-trace cannot answer it ({exc})"))
                continue
            except Exception as exc:  # noqa: BLE001 - an unverified fix is not kept; say why
                if os.environ.get("TRACER_DEBUG"):
                    raise
                outcomes.append(outcome("rolled-back", f"the re-trace failed ({type(exc).__name__}: {exc})"))
                continue
            new = _keys(after["findings"], after)
            target = target or _keys([finding], after)
            gone = all(new[k] < old[k] for k in target) and bool(target)
            # a new info finding does not block (a draft head's copy: the runner never calls it)
            serious = _keys([f for f in after["findings"] if f.get("severity") != "info"], after)
            # A finding the repaired chain now reaches in code that already had it for other chains
            # (the record's, or the re-trace's before the fix) is not new: the fix exposed it.
            appeared = [k for k in serious if serious[k] > old[k] and _site(k) not in known
                        and _site(k) not in {_site(b) for b in old}]
            if gone and not appeared:
                kept[path] = candidate
                outcomes.append(outcome("fixed", replacements=_replacements(source, candidate)))
            else:
                why = "its finding is still there" if not gone else f"a new finding appears: {appeared[0][0]} " \
                                                                     f"({appeared[0][4]})"
                outcomes.append(outcome("rolled-back", why))
    return FixReport(tuple(outcomes), {p: originals[p] for p in kept}, kept)


def _read(root: Path, path: str) -> str | None:
    try:
        full = check_target(root / path, root)
        data = read_bytes(full, _MAX_FILE, root)
        return data.decode("utf-8")
    except (Unwritable, Unreadable, OSError, UnicodeDecodeError):
        return None


def write_fixes(root: str | Path, report: FixReport) -> list[str]:
    """Write the kept fixes by the writing rule: inside the tree, never through a link, each file
    keeping its mode; the paths written."""
    written = []
    for path, text in sorted(report.fixed.items()):
        target = check_target(Path(root) / path, root)
        mode = stat.S_IMODE(os.stat(target).st_mode)
        write_bytes(target, text.encode("utf-8"), root=root, mode=mode)
        written.append(path)
    return written


__all__ = ["FixReport", "Outcome", "Replacement", "fix_findings", "propose", "write_fixes"]
