"""`tracer scan` and `tracer rules`."""

from __future__ import annotations

import sys

import click

from tracer.analysis.result_cache import scan_memoised
from tracer.checks import CATALOGUE, rule_text
from tracer.cli.options import PackOptions, pack_options, write_output
from tracer.lint.suppress import apply_suppressions
from tracer.model.errors import UsageError
from tracer.model.kinds import FAIL_ON, at_least
from tracer.model.results import ScanResult


def exit_code(result: ScanResult, fail_on: str) -> int:
    return 1 if any(at_least(f.severity, fail_on) for f in result.findings) else 0


@click.command("scan")
@click.argument("path", type=click.Path())
@pack_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True)
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="Lowest severity that makes the exit status 1.")
@click.option("--show-missing", is_flag=True, help="List models without the setter one by one.")
@click.option("--no-chains", is_flag=True, help="Only findings and the summary line.")
@click.option("--target-config", type=click.Path(exists=True), help="Target model config.json (or its folder): compute effective layers.")
@click.option("--draft-config", type=click.Path(exists=True), help="Draft config.json (or its folder).")
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Write to a file instead of standard output.")
def scan_command(packs: PackOptions, path: str, fmt: str, fail_on: str, show_missing: bool, no_chains: bool,
                 target_config: str | None, draft_config: str | None, out_file: str | None) -> None:
    """Trace every entry class's capture chain in PATH (an unpacked wheel, a
    checkout holding python/sglang, or the sglang/srt folder)."""
    if bool(target_config) != bool(draft_config):
        raise UsageError("--target-config and --draft-config go together")
    protocols = packs.packs()
    result = scan_memoised(path, protocols, packs.cache_dir, packs.use_cache, packs.jobs)
    result = apply_suppressions(result)
    if target_config and draft_config:
        from tracer.effective.annotate import annotate_scan

        result = annotate_scan(result, protocols, target_config, draft_config, packs.cache_dir, packs.use_cache)
    if fmt == "json":
        import json

        from tracer.present.scan_json import to_json

        text = json.dumps(to_json(result), indent=2) + "\n"
    elif fmt == "sarif":
        from tracer.present.sarif import format_sarif

        text = format_sarif(result)
    elif fmt == "github":
        from tracer.present.github import format_github

        text = format_github(result)
    else:
        from tracer.present.text import format_text

        color = out_file is None and sys.stdout.isatty()
        text = format_text(result, show_chains=not no_chains, show_missing=show_missing, color=color)
    write_output(text, out_file)
    sys.exit(exit_code(result, fail_on))


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
        click.echo(f"{rule.slug.ljust(width)}  {rule.severity:<8} {rule.summary}")
