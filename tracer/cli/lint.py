"""`tracer lint` and `tracer baseline`."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from tracer.checks.selection import Layer, resolve
from tracer.cli.fixing import fix_options, lint_fix
from tracer.cli.options import PackOptions, RuleOptions, format_option, pack_options, rule_options, write_output
from tracer.cli.output import progress, quiet_option
from tracer.config.settings import load_config, load_config_file, merge
from tracer.lint.baseline import write_baseline
from tracer.lint.gate import BaseSettings
from tracer.lint.git import repo_root
from tracer.lint.lint import exit_code, format_lint_text, lint, summary_line
from tracer.lint.records import Options
from tracer.model.kinds import FAIL_ON
from tracer.model.results import ScanResult
from tracer.present.github import escape_data, format_github
from tracer.present.lint_json import lint_result_text
from tracer.present.sarif import format_sarif
from tracer.present.scan_json import SCHEMA_VERSION, from_json


def as_scan_result(result: dict[str, Any]) -> ScanResult:
    """A lint result's new findings in the shape the SARIF and GitHub formats take."""
    return from_json({"schema_version": SCHEMA_VERSION, "root": result["root"], "findings": result["findings"], "models": [],
                      "protocols": result.get("protocols", []), "tool": result.get("tool", {})})


def repo_option(func):  # type: ignore[no-untyped-def]
    return click.option("-C", "--repo", "start", type=click.Path(file_okay=False), default=".",
                        help="Run as if started in this folder (a git checkout of the framework).")(func)


def settings(packs: PackOptions, start: str, fail_on: str | None = None, baseline: str | None = None,  # type: ignore[no-untyped-def]
             config_file: str | None = None, gate: BaseSettings | None = None):
    """(root, config, options): [tool.tracer] of the working tree, or with ``gate`` the base
    commit's; ``--config FILE`` (the command line) and any other option replace it either way."""
    root = repo_root(start)
    if config_file:
        loaded = load_config_file(config_file)
    else:
        loaded = gate.config if gate is not None else load_config(root)
    config = merge(loaded, packs.protocols, packs.rule_files, fail_on, (), baseline)
    for note in config.notes + tuple(gate.notes if gate is not None else ()):
        click.echo(f"tracer: {note}", err=True)
    options = Options(config.protocols, config.rules, packs.cache_dir, packs.use_cache, packs.jobs)
    return root, config, options


@click.command("lint")
@repo_option
@pack_options
@rule_options
@quiet_option
@click.option("--base", "base_ref", help="Compare the branch (REF...HEAD) and the working tree against REF's merge base; default: the working tree against HEAD.")
@format_option
@click.option("--baseline", type=click.Path(dir_okay=False), help="Baseline file (default [tool.tracer] baseline, else .tracer-baseline.json when present).")
@click.option("--no-baseline", is_flag=True, help="Report findings even when the baseline lists them.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default=None, help="Lowest severity of a new finding that makes the exit status 1 (default [tool.tracer] fail-on, else error).")
@click.option("--full", is_flag=True, help="Scan the whole working tree instead of re-tracing the affected chains (slower, exact).")
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Write to a file instead of standard output.")
@fix_options
def lint_command(packs: PackOptions, rules: RuleOptions, quiet: bool, start: str, base_ref: str | None, fmt: str,
                 baseline: str | None, no_baseline: bool, fail_on: str | None, full: bool, out_file: str | None,
                 fix: bool, unsafe_fixes: bool, diff: bool) -> None:
    """Report the capture-chain findings a change introduces (and those it fixes), pre-merge."""
    with contextlib.ExitStack() as stack:
        # with --base the gate's settings are the base commit's, not the change's
        gate = stack.enter_context(BaseSettings(repo_root(start), base_ref)) if base_ref else None
        root, config, options = settings(packs, start, fail_on, baseline, rules.config_file, gate)
        selection = resolve([Layer(config.select, config.ignore, config.extend_select),
                             Layer(rules.select, rules.ignore, rules.extend_select)])
        shown = stack.enter_context(progress(f"tracer: linting {root.name}", quiet))
        result = lint(root, base_ref, config, options, full=full, use_baseline=not no_baseline, progress=shown.note,
                      baseline_bytes=gate.baseline_bytes if gate is not None and not baseline else None,
                      notes=tuple(gate.notes) if gate is not None else ())
    for key in ("findings", "fixed"):  # --select/--ignore: the rules not chosen are neither new nor fixed
        result[key] = [f for f in result[key] if f["slug"] in selection.slugs]
    written, fixes = lint_fix(root, base_ref, options, result, config.fail_on, selection, unsafe_fixes, diff,
                              out_file, fmt) if fix or unsafe_fixes or diff else (False, None)
    if written:  # lint again: what is left
        result = lint(root, base_ref, config, options, full=full, use_baseline=not no_baseline,
                      baseline_bytes=gate.baseline_bytes if gate is not None and not baseline else None,
                      notes=tuple(gate.notes) if gate is not None else ())
        result.update({key: [f for f in result[key] if f["slug"] in selection.slugs] for key in ("findings", "fixed")})
    if fmt == "json":
        text = lint_result_text(result)
    elif fmt == "sarif":
        text = format_sarif(as_scan_result(result), fixes=fixes or None)
    elif fmt == "github":
        text = "".join(f"::warning title=tracer lint::{escape_data(note)}\n" for note in result.get("notes", []))
        text += format_github(as_scan_result(result), show_info=config.fail_on == "info",
                              info_slugs=selection.named, summary=summary_line(result))
    else:
        text = format_lint_text(result)
    write_output(text, out_file)
    if out_file:
        click.echo(summary_line(result), err=True)
    sys.exit(exit_code(result, config.fail_on))


@click.command("baseline")
@repo_option
@pack_options
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Baseline file to write (default [tool.tracer] baseline, else .tracer-baseline.json at the repository root).")
def baseline_command(packs: PackOptions, start: str, out_file: str | None) -> None:
    """Accept every current finding: write them to the baseline file tracer lint reads."""
    root, config, options = settings(packs, start)
    path, count = write_baseline(root, out_file, config, options)
    click.echo(f"wrote {count} accepted findings to {path}")

