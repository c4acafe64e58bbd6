"""`tracer scan` and `tracer rules`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracer.analysis.result_cache import scan_memoised
from tracer.checks import CATALOGUE, rule_text
from tracer.cli.fixing import fix_options
from tracer.cli.options import PackOptions, RuleOptions, format_option, pack_options, rule_options, write_output
from tracer.cli.output import color_enabled, color_option, progress, quiet_option
from tracer.lint.suppress import apply_suppressions
from tracer.model.errors import UsageError
from tracer.model.kinds import FAIL_ON, at_least
from tracer.model.protocol import Protocol
from tracer.model.results import ScanResult


def exit_code(result: ScanResult, fail_on: str) -> int:
    return 1 if any(at_least(f.severity, fail_on) for f in result.findings) else 0


@click.command("scan")
@click.argument("path", type=click.Path())
@pack_options
@rule_options
@format_option
@click.option("--fail-on", type=click.Choice(FAIL_ON), default=None,
              help="Lowest severity that makes the exit status 1 (default [tool.tracer] fail-on, else error); "
                   "--fail-on info prints the info findings too.")
@click.option("--statistics", is_flag=True,
              help="Count the findings per rule instead of listing them (a JSON list with --format json).")
@click.option("--show-chains", "-v", "--verbose", "show_chains", is_flag=True,
              help="Every model's chain hop by hop, ok ones too, and the runner's call sites.")
@click.option("--show-missing", is_flag=True, help="List models without the setter one by one (and their info findings).")
@click.option("--no-chains", is_flag=True, hidden=True, help="Kept for scripts: the default now prints no ok chains.")
@quiet_option(help="Print the findings alone (ruff's -q): no verdicts, no summary, no progress.")
@color_option
@click.option("--target-config", type=click.Path(exists=True), help="Target model config.json (or its folder): compute effective layers.")
@click.option("--draft-config", type=click.Path(exists=True), help="Draft config.json (or its folder).")
@click.option("--draft-framework", default=None, metavar="NAME",
              help="With the configs: the framework whose capture convention the draft's ids were trained in "
                   "(as explain --draft-framework).")
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Write to a file instead of standard output.")
@fix_options
def scan_command(packs: PackOptions, rules: RuleOptions, path: str, fmt: str, fail_on: str | None, statistics: bool,
                 show_chains: bool, show_missing: bool, no_chains: bool, quiet: bool, color: str,
                 target_config: str | None, draft_config: str | None, draft_framework: str | None,
                 out_file: str | None, fix: bool, unsafe_fixes: bool, diff: bool) -> None:
    """Trace every entry class's capture chain in PATH (an unpacked wheel, a
    checkout holding python/sglang, or the sglang/srt folder): the findings, the
    models that need attention, a summary. Exit 1 on findings at --fail-on or above."""
    if bool(target_config) != bool(draft_config):
        raise UsageError("--target-config and --draft-config go together")
    if draft_framework and not target_config:
        raise UsageError("--draft-framework needs --target-config and --draft-config")
    settings = rules.settings(path, packs, fail_on)
    protocols = settings.packs()
    fixes = None
    if fix or unsafe_fixes or diff:
        from tracer.cli.fixing import scan_fix

        fixes = scan_fix(path, packs, settings, unsafe_fixes, diff, quiet, fmt, out_file,
                         (target_config, draft_config, draft_framework))
    with progress(f"tracer: scanning {Path(path).name or path}", quiet):
        result = scan_memoised(path, protocols, packs.cache_dir, packs.use_cache, packs.jobs,
                               settings.config.plugins)
        result = apply_suppressions(result)
        if target_config and draft_config:
            from tracer.effective.annotate import annotate_scan

            result = annotate_scan(result, protocols, target_config, draft_config, packs.cache_dir, packs.use_cache,
                                   draft_framework=draft_framework)
    result = settings.narrow(result)
    threshold = settings.config.fail_on
    if statistics and fmt != "text":  # ruff's way: a JSON list for json, the table for the others
        from tracer.present.text import TextOptions, shown_findings, statistics_json, statistics_lines

        shown = shown_findings(result, TextOptions(show_info=threshold == "info", info_slugs=settings.selection.named))
        if fmt == "json":
            from tracer.present.scan_json import json_list_text

            text = json_list_text(statistics_json(shown))
        else:
            text = "".join(line + "\n" for line in statistics_lines(shown))
    elif fmt == "json":
        from tracer.present.scan_json import scan_json_text

        text = scan_json_text(result)
    elif fmt == "sarif":
        from tracer.present.sarif import format_sarif

        text = format_sarif(result, fixes=fixes)
    elif fmt == "github":
        from tracer.present.github import format_github

        text = format_github(result, info_slugs=settings.selection.named, show_info=threshold == "info")
    else:
        from tracer.present.text import TextOptions, format_text

        stream_color = color_enabled(color) if out_file is None else color == "always"
        options = TextOptions(show_chains=show_chains and not no_chains, show_missing=show_missing,
                              show_info=threshold == "info", info_slugs=settings.selection.named, quiet=quiet,
                              color=stream_color, protocol_order=protocol_order(protocols), statistics=statistics,
                              expand=show_chains or rules.select is not None)
        text = format_text(result, options)
        write_output(text, out_file, color=stream_color or None)
        sys.exit(exit_code(result, threshold))
    write_output(text, out_file)
    sys.exit(exit_code(result, threshold))


def protocol_order(protocols: list[Protocol]) -> tuple[str, ...]:
    """The packs by rank (EAGLE-3's packs say 0), then by name."""
    return tuple(p.name for p in sorted(protocols, key=lambda p: (p.rank, p.name)))


@click.command("rules")
@click.argument("slug", required=False)
def rules_command(slug: str | None) -> None:
    """Document the finding slugs (ruff-style: what it does, why, example, use instead)."""
    if slug:
        rule = CATALOGUE.get(slug)
        if rule is None:
            raise UsageError(f"unknown rule {slug!r} (known: {', '.join(CATALOGUE)})")
        click.echo(rule_text(rule))
        return
    width = max(len(s) for s in CATALOGUE)
    for rule in CATALOGUE.values():
        fix = "" if rule.autofix is None else " [fix]" if rule.autofix.safe else " [unsafe fix]"
        click.echo(f"{rule.slug.ljust(width)}  {rule.severity:<8} {rule.summary}{fix}")
