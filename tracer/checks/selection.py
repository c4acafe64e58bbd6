"""Which checks a run reports, chosen as ruff chooses its rules.

A selector is a slug (``dead-write``), a prefix of slugs (``dead`` picks
``dead-write`` and ``dead-default``) or ``ALL``. Layers apply in order (the
``[tool.tracer]`` table, then the command line): a layer's ``select`` replaces
what came before, ``extend-select`` adds to it, ``ignore`` takes away; inside
one layer the more specific selector wins (``--select silent-fallback --ignore
silent`` keeps silent-fallback), and ignore wins a tie.

Info findings (the support matrix, draft heads' copies of a check) are hidden by
default in the text and GitHub outputs; a rule named by a select or
extend-select selector other than ``ALL`` shows its info findings too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tracer.checks import CATALOGUE
from tracer.model.errors import UsageError
from tracer.model.findings import Finding
from tracer.model.results import ScanResult


@dataclass(frozen=True)
class Layer:
    select: tuple[str, ...] | None = None  # None: keep what the layers before chose
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()


@dataclass(frozen=True)
class Selection:
    slugs: frozenset[str]  # the rules reported
    named: frozenset[str] = frozenset()  # rules a select/extend-select selector named: their info findings show

    @property
    def everything(self) -> bool:
        return self.slugs == frozenset(CATALOGUE)

    def keeps(self, found: Finding) -> bool:
        return found.slug in self.slugs


ALL = "ALL"
EVERY_RULE = Selection(frozenset(CATALOGUE))


def matches(selector: str) -> frozenset[str]:
    """The slugs a selector picks; an unknown one is a usage error naming the rules."""
    if selector == ALL:
        return frozenset(CATALOGUE)
    picked = frozenset(slug for slug in CATALOGUE if slug.startswith(selector))
    if not selector or not picked:
        raise UsageError(f"unknown rule selector {selector!r} (a slug or a prefix of one, or ALL; "
                         f"known: {', '.join(CATALOGUE)})")
    return picked


def _specificity(selector: str) -> int:
    return -1 if selector == ALL else len(selector)


def resolve(layers: Sequence[Layer]) -> Selection:
    chosen = set(CATALOGUE)
    named: set[str] = set()
    for layer in layers:
        selecting = [*(layer.select or ()), *layer.extend_select]
        for selector in [*selecting, *layer.ignore]:
            matches(selector)  # every selector is checked, even one a later layer overrides
        if layer.select is not None:
            chosen = set()
        for slug in CATALOGUE:
            best_select = max((_specificity(s) for s in selecting if slug in matches(s)), default=None)
            best_ignore = max((_specificity(s) for s in layer.ignore if slug in matches(s)), default=None)
            if best_select is not None and (best_ignore is None or best_select > best_ignore):
                chosen.add(slug)
                if best_select >= 0:
                    named.add(slug)
            elif best_ignore is not None:
                chosen.discard(slug)
                named.discard(slug)
    return Selection(frozenset(chosen), frozenset(named))


def filter_findings(findings: Iterable[Finding], selection: Selection) -> tuple[Finding, ...]:
    return tuple(f for f in findings if selection.keeps(f))


def apply(scan: ScanResult, selection: Selection) -> ScanResult:
    """The scan with only the selected rules' findings (the verdicts stay: they are the chains')."""
    if selection.everything:
        return scan
    models = tuple(dataclasses.replace(m, findings=filter_findings(m.findings, selection)) for m in scan.models)
    return dataclasses.replace(scan, findings=filter_findings(scan.findings, selection), models=models)


__all__ = ["ALL", "EVERY_RULE", "Layer", "Selection", "apply", "filter_findings", "matches", "resolve"]
