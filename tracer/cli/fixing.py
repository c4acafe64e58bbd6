"""--fix / --unsafe-fixes / --diff for `tracer scan` and `tracer lint`: the verified fixes
(tracer/fix), the diff, the writes and the summary line."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:  # the fixes (libcst) load only when a fix is asked for: a plain scan starts faster
    from tracer.fix.verified import FixReport
    from tracer.lint.records import Options

F = TypeVar("F", bound=Callable[..., Any])


def fix_options(func: F) -> F:
    """--fix, --unsafe-fixes, --diff; the command receives ``fix``, ``unsafe_fixes``, ``diff``."""
    options = [
        click.option("--fix", is_flag=True,
                     help="Apply the safe fixes, each kept only if a re-trace of the chains it reaches shows its "
                          "finding gone and no new one (then report what is left)."),
        click.option("--unsafe-fixes", is_flag=True,
                     help="Also apply the unsafe fixes (they change what runs: offset-mismatch, call-order); "
                          "implies --fix unless --diff is given."),
        click.option("--diff", is_flag=True,
                     help="Print the verified fixes as a unified diff instead of writing them (exit 1 when there "
                          "is one)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def fixable(findings: Sequence[Mapping[str, Any]], threshold: str, named: Sequence[str] = ()) -> list[dict]:
    """The findings the output shows (info ones only at --fail-on info or when named), less the draft
    heads' copies of a check that is not info itself (the runner never calls their setter: their
    code is the target's, fixed with the target's finding)."""
    from tracer.checks import CATALOGUE

    def copy(f: Mapping[str, Any]) -> bool:
        rule = CATALOGUE.get(f["slug"])
        return f.get("severity") == "info" and rule is not None and rule.severity != "info"

    return [dict(f) for f in findings if not copy(f)
            and (f.get("severity") != "info" or threshold == "info" or f["slug"] in named)]


def scan_fixes(path: str, options: Options, keep: Callable[[list[dict]], list[dict]], unsafe: bool,
               configs: Any = None) -> tuple[FixReport, dict]:
    """The scan's verified fixes: a scan with dependencies (lint's record), the findings ``keep``
    lets through (plus the effective ones with ``configs``), each fix re-traced; (report, record)."""
    from tracer.fix.verified import fix_findings
    from tracer.lint.records import scan_with_dependencies

    record = scan_with_dependencies(Path(path), options)
    findings = record["scan"]["findings"]
    hook = None
    if configs is not None:
        from tracer.effective.annotate import annotate_scan
        from tracer.fix.effective import effective_hook
        from tracer.present.scan_json import from_json, to_json

        packs = options.packs()
        annotated = annotate_scan(from_json(dict(record["scan"], root=str(path))), packs, configs.target,
                                  configs.draft, options.cache_dir, options.use_cache, pp=configs.pp,
                                  draft_framework=configs.draft_framework)
        findings = to_json(annotated)["findings"]
        hook = effective_hook(configs, packs, record["scan"]["protocols"])
    return fix_findings(path, record, keep(findings), options, unsafe=unsafe, effective=hook), record


def lint_fixes(root: Path, base_ref: str | None, options: Options, findings: Sequence[Mapping[str, Any]],
               unsafe: bool) -> FixReport:
    """Fixes of lint's new findings, re-traced against the base record on top of the change."""
    from tracer.fix.verified import fix_findings
    from tracer.lint.base import base_record
    from tracer.lint.git import changed_files
    from tracer.lint.records import package_prefix

    commit, touched = changed_files(root, base_ref)
    prefix = package_prefix(root, options)
    relevant = [p for p in touched if p == prefix or p.startswith(prefix + "/")]
    record = base_record(root, commit, prefix, options)
    return fix_findings(root, record, findings, options, unsafe=unsafe, touched=relevant)


def finish(root: str | Path, report: FixReport, diff: bool) -> None:
    """Write the kept fixes (unless --diff), then say what was done on standard error."""
    from tracer.fix.verified import write_fixes

    if not diff:
        write_fixes(root, report)
    for outcome in report.outcomes:
        if outcome.status == "rolled-back":
            click.echo(f"tracer: {outcome.file}:{outcome.line}: {outcome.slug} fix rolled back: {outcome.why}",
                       err=True)
    click.echo(f"tracer: {report.summary(written=not diff)}", err=True)


def scan_fix(path: str, packs: Any, settings: Any, unsafe: bool, diff: bool, quiet: bool, fmt: str,
             out_file: str | None, configs: tuple[str | None, str | None, str | None]) -> dict | None:
    """`tracer scan --fix/--unsafe-fixes/--diff`. --diff prints the diff and exits (with --format
    sarif: the SARIF fixes are returned for the scan's output instead); --fix writes and returns
    None, and the scan then reports the fixed tree."""
    import sys

    from tracer.cli.options import write_output
    from tracer.cli.output import progress
    from tracer.config.settings import is_excluded
    from tracer.fix.effective import Configs
    from tracer.lint.records import Options

    config = settings.config
    options = Options(tuple(config.protocols), tuple(config.rules), packs.cache_dir, packs.use_cache, packs.jobs)
    target, draft, framework = configs

    def keep(findings: list[dict]) -> list[dict]:
        return [f for f in fixable(findings, config.fail_on, tuple(settings.selection.named))
                if f["slug"] in settings.selection.slugs and not is_excluded(f.get("file") or "", config.exclude)]

    with progress(f"tracer: fixing {Path(path).name or path}", quiet):
        report, _ = scan_fixes(path, options, keep, unsafe,
                               Configs(target, draft, 1, framework) if target and draft else None)
    if diff and fmt == "sarif":
        click.echo(f"tracer: {report.summary(written=False)}", err=True)
        return sarif_fixes(report)
    finish(path, report, diff)
    if diff:
        write_output(report.diff(), out_file)
        sys.exit(1 if report.fixed else 0)
    return None


def lint_fix(root: Path, base_ref: str | None, options: Options, result: dict, threshold: str, selection: Any,
             unsafe: bool, diff: bool, out_file: str | None, fmt: str = "text") -> tuple[bool, dict | None]:
    """`tracer lint --fix/--unsafe-fixes/--diff` on lint's new findings: --diff prints the diff and
    exits (with --format sarif: the SARIF fixes for lint's output are returned); else the kept fixes
    are written. (whether any fix was written, the SARIF fixes or None)."""
    import sys

    from tracer.cli.options import write_output

    findings = fixable(result["findings"], threshold, tuple(selection.named))
    report = lint_fixes(root, base_ref, options, findings, unsafe)
    if diff and fmt == "sarif":
        click.echo(f"tracer: {report.summary(written=False)}", err=True)
        return False, sarif_fixes(report)
    finish(root, report, diff)
    if diff:
        write_output(report.diff(), out_file)
        sys.exit(1 if report.fixed else 0)
    return bool(report.fixed), None


def sarif_fixes(report: FixReport) -> dict[tuple[str, str, int], list[dict]]:
    """(slug, file, line) -> the finding's SARIF ``fixes``."""
    from tracer.present.sarif import sarif_fix

    return {(o.slug, o.file, o.line): [sarif_fix(o.title, o.file, [(r.start, r.end, r.text) for r in o.replacements])]
            for o in report.outcomes if o.status == "fixed"}


__all__ = ["finish", "fix_options", "fixable", "lint_fix", "lint_fixes", "sarif_fixes", "scan_fix", "scan_fixes"]
