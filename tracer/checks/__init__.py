"""The finding catalogue: one closed set of checks, each a slug with its severity,
its messages, its documentation and its examples (the manner of fixit's rules).

Only this package creates findings: a stage calls :func:`finding` with a slug, a
message variant and the fields the variant's template names. Every check carries
examples that must fire (each line marked ``# expect: <slug>`` must get the
finding) and examples that must stay quiet; ``tests/test_checks.py`` turns them
into tests, so a check cannot exist without its proof.

Slugs are an interface: suppressions, baselines and CI key on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from tracer.checks.fixes import FIXES, Fix, fix_text
from tracer.model.findings import Finding
from tracer.model.kinds import Severity


@dataclass(frozen=True)
class Example:
    """A tree the check is run on: ``files`` maps paths (relative to the tree root)
    to source. The test harness adds what every tree of the framework needs
    (package ``__init__`` files, a version file) when they are not given."""

    files: tuple[tuple[str, str], ...]
    protocol: str = "sglang-eagle3"
    # For the checks that need a target and a draft config (effective layers).
    target_config: Mapping[str, object] | None = None
    draft_config: Mapping[str, object] | None = None
    pp: int = 1
    draft_framework: str = ""  # explain --draft-framework: the convention the draft was trained on
    note: str = ""
    # For the checks of `tracer lint --base`: the files of the base commit (``files`` is then the
    # change under review, committed on a branch; the harness adds the same package files to both).
    base_files: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Check:
    slug: str
    severity: Severity
    summary: str  # one line, lower case, no full stop
    what: str  # What it does
    why: str  # Why is this bad?
    example: str  # code shown by `tracer rules SLUG`
    fix: str  # Use instead
    messages: Mapping[str, str]  # variant -> message template (str.format fields)
    hints: Mapping[str, str]  # variant -> hint template; "" is the default
    fires: tuple[Example, ...] = ()
    quiet: tuple[Example, ...] = ()
    stage: str = ""  # the stage that reports it (documentation)
    autofix: Fix | None = None  # the slug's fix (tracer/checks/fixes.py), if it has one obvious repair

    def message(self, variant: str, fields: Mapping[str, object]) -> str:
        return self.messages[variant].format(**fields)

    def hint(self, variant: str, fields: Mapping[str, object]) -> str:
        template = self.hints.get(variant, self.hints.get("", ""))
        return template.format(**fields)


def example(*files: tuple[str, str], **options: object) -> Example:
    return Example(files=tuple(files), **options)  # type: ignore[arg-type]


def _collect() -> Mapping[str, Check]:
    from tracer.checks import argument_checks, chain_checks, effective_checks, input_checks, lint_checks, runner_checks

    found: dict[str, Check] = {}
    for module in (chain_checks, runner_checks, effective_checks, input_checks, argument_checks, lint_checks):
        for check in module.CHECKS:
            if check.slug in found:
                raise RuntimeError(f"duplicate check slug {check.slug}")
            found[check.slug] = check
    for slug, (messages, hints, fires, quiet) in argument_checks.VARIANTS.items():
        base = found[slug]  # a variant of an existing check: its messages and proof join the check's own
        found[slug] = replace(base, messages={**base.messages, **messages}, hints={**base.hints, **hints},
                              fires=base.fires + fires, quiet=base.quiet + quiet)
    for slug, fix in FIXES.items():
        found[slug] = replace(found[slug], autofix=fix)
    return MappingProxyType(found)


CATALOGUE: Mapping[str, Check] = _collect()
SLUGS: tuple[str, ...] = tuple(CATALOGUE)


class UnknownCheck(KeyError):
    pass


def check(slug: str) -> Check:
    try:
        return CATALOGUE[slug]
    except KeyError:
        raise UnknownCheck(slug) from None


def finding(slug: str, variant: str = "", *, protocol: str = "", entry: str | None = None, file: str,
            line: int, col: int = 0, chain: tuple[str, ...] = (), setter: str = "", **fields: object) -> Finding:
    """The one way a finding is made: the check's severity, its message and hint
    templates filled with ``fields`` (and ``setter``, ``protocol``)."""
    rule = check(slug)
    values = dict(fields, setter=setter, protocol=protocol)
    return Finding(slug, rule.severity, protocol, entry, file, line, col, rule.message(variant, values),
                   rule.hint(variant, values), tuple(chain))


def on_draft_head(found: Finding, setter: str) -> Finding:
    """The same finding on a draft head: informational, since the runner never calls
    the setter on a draft worker."""
    return replace(found, severity="info",
                   message=f"{found.message} (draft head: the runner does not call {setter} on draft workers)")


def is_error(found: Finding) -> bool:
    """Whether the check is an error (a draft head's copy counts as its check does)."""
    return check(found.slug).severity == "error"


def rule_text(rule: Check) -> str:
    """`tracer rules SLUG`: ruff's shape (What it does / Why is this bad? / Example / Use instead)."""
    return "\n".join([
        f"# {rule.slug} ({rule.severity})",
        "",
        rule.summary[0].upper() + rule.summary[1:] + ".",
        "",
        "## What it does",
        rule.what,
        "",
        "## Why is this bad?",
        rule.why,
        "",
        "## Example",
        "```python",
        rule.example,
        "```",
        "",
        "## Use instead",
        rule.fix,
        "",
        fix_text(rule.autofix),
    ])


__all__ = ["CATALOGUE", "SLUGS", "Check", "Example", "UnknownCheck", "check", "example", "field", "finding",
           "is_error", "on_draft_head", "rule_text"]
