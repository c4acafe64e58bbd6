"""Command line: tracer scan | explain | graph | report | rules | verify.

Exit status: 0 clean, 1 findings at or above --fail-on, 2 usage or input error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracer import __version__
from tracer.discover import UsageError
from tracer.findings import RULES, rule_text
from tracer.protocol import ProtocolError, load_protocols


class TracerGroup(click.Group):
    """Turns expected errors into one line and exit status 2, never a traceback;
    loads the commands in ``lazy_commands`` on first use."""

    lazy_commands: dict = {}

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is None and name in self.lazy_commands:
            command = self.lazy_commands[name]()
            if command is not None:
                self.add_command(command, name)
        return command

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (UsageError, ProtocolError) as exc:
            click.echo(f"tracer: error: {exc}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:  # pragma: no cover
            click.echo("tracer: interrupted", err=True)
            ctx.exit(130)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except OSError as exc:
            click.echo(f"tracer: error: {exc}", err=True)
            ctx.exit(2)
        except Exception as exc:  # a bug in tracer: say so in one line, keep the detail on request
            if "TRACER_DEBUG" in __import__("os").environ:
                raise
            click.echo(f"tracer: internal error: {type(exc).__name__}: {exc} "
                       "(set TRACER_DEBUG=1 for the traceback; please report it)", err=True)
            ctx.exit(2)


@click.group(cls=TracerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracer")
def main():
    """Static code-path tracer for LLM inference frameworks (SGLang EAGLE-3/DFlash capture chains)."""


def _scan_options(func):
    options = [
        click.option("--protocol", "protocols", multiple=True, help="Protocol pack to apply (repeatable; default: all that fit the tree)."),
        click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False), help="Extra protocol pack (TOML) to load."),
        click.option("--cache-dir", type=click.Path(file_okay=False), help="Summary cache (default $TRACER_CACHE_DIR, else $XDG_CACHE_HOME/tracer or ~/.cache/tracer)."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the summary cache."),
        click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Parallel parser processes (default: CPU count)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _run_scan(path, protocols, rule_files, cache_dir, no_cache, jobs):
    from tracer.engine import scan_json_memoised

    packs = load_protocols(list(protocols) or None, list(rule_files))
    return None, scan_json_memoised(path, packs, cache_dir, not no_cache, jobs or 0)


@main.command("scan")
@click.argument("path", type=click.Path())
@_scan_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True)
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default="error", show_default=True, help="Lowest severity that makes the exit status 1.")
@click.option("--show-missing", is_flag=True, help="List models without the setter one by one.")
@click.option("--no-chains", is_flag=True, help="Only findings and the summary line.")
@click.option("--target-config", type=click.Path(exists=True), help="Target model config.json (or its folder): compute effective layers.")
@click.option("--draft-config", type=click.Path(exists=True), help="EAGLE-3 draft config.json (or its folder).")
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Write to a file instead of standard output.")
def scan_command(path, protocols, rule_files, cache_dir, no_cache, jobs, fmt, fail_on, show_missing, no_chains,
                 target_config, draft_config, out_file):
    """Trace every entry class's capture chain in PATH (an unpacked wheel, a
    checkout holding python/sglang, or the sglang/srt folder)."""
    from tracer import output

    _, data = _run_scan(path, protocols, rule_files, cache_dir, no_cache, jobs)
    from tracer.suppress import apply_suppressions

    apply_suppressions(data, data["root"])
    if target_config or draft_config:
        data = _add_effective_layers(data, target_config, draft_config)
    if fmt == "json":
        text = output.format_json(data)
    elif fmt == "sarif":
        text = output.format_sarif(data)
    elif fmt == "github":
        text = output.format_github(data)
    else:
        color = out_file is None and sys.stdout.isatty()
        text = output.format_text(data, show_chains=not no_chains, show_missing=show_missing, color=color)
    if out_file:
        Path(out_file).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    sys.exit(output.exit_code(data, fail_on))


def _add_effective_layers(data: dict, target_config, draft_config) -> dict:
    """The scan JSON with effective_layers (and graph_layers) on the model the
    target config's architectures name, and its config-dependent findings."""
    if not (target_config and draft_config):
        raise UsageError("--target-config and --draft-config go together")
    from tracer.configs import ConfigError, load_draft_config, load_target_config
    from tracer.explain import annotate_scan

    try:
        target = load_target_config(target_config)
        draft = load_draft_config(draft_config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return annotate_scan(data, target, draft)


@main.command("rules")
@click.argument("slug", required=False)
def rules_command(slug):
    """Document the finding slugs (ruff-style: what it does, why, example, fix)."""
    if slug:
        rule = RULES.get(slug)
        if rule is None:
            raise UsageError(f"unknown rule {slug!r} (known: {', '.join(RULES)})")
        click.echo(rule_text(rule))
        return
    width = max(len(s) for s in RULES)
    for rule in RULES.values():
        click.echo(f"{rule.slug.ljust(width)}  {rule.severity:<8} {rule.summary}")


@main.command("graph")
@click.argument("path", type=click.Path())
@_scan_options
@click.option("--all", "whole", is_flag=True, help="The whole call graph of any Python tree (every function, method and module body).")
@click.option("--entry", help="One entry class (qualname or class name): its chain picture.")
@click.option("--format", "fmt", type=click.Choice(["json", "dot", "svg", "png"]), default="json", show_default=True)
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Output file (required for svg/png).")
def graph_command(path, protocols, rule_files, cache_dir, no_cache, jobs, whole, entry, fmt, out_file):
    """Export the protocol graph (or with --all the whole call graph) as JSON or DOT."""
    from tracer import graph as graphs
    from tracer.cache import SummaryCache, default_cache_dir

    if whole:
        cache = SummaryCache(None if no_cache else (Path(cache_dir) if cache_dir else default_cache_dir()))
        g, stats = graphs.whole_call_graph(path, cache, jobs or 0)
        _emit_graph(g, stats, fmt, out_file)
        click.echo(f"{len(g)} nodes, {g.number_of_edges()} edges; {stats['calls_unbound']} calls not bound "
                   f"({stats['files_total']} files, {stats['seconds']} s)", err=True)
        return
    _, data = _run_scan(path, protocols, rule_files, cache_dir, no_cache, jobs)
    if entry or fmt in ("svg", "png"):
        from tracer import render

        if not out_file:
            raise UsageError("--format svg/png and --entry need -o FILE")
        if entry:
            wanted = [m for m in data["models"] if entry in (m["entry"], m["entry"].rsplit(".", 1)[-1])]
            if not wanted:
                raise UsageError(f"no entry class {entry!r} in the scan")
            model = next((m for m in wanted if m["chain"]), wanted[0])
            own = [f for f in data["findings"] if model["entry"] in (f.get("entries") or [f.get("entry")])]
            dot = render.chain_dot(model, own)
        else:
            dot = render.protocol_graph_dot(data, models_href=None)
        result = render.render(dot, fmt if fmt != "json" else "dot", Path(out_file))
        click.echo(f"wrote {result['picture'] or result['dot']}", err=True)
        if result["message"]:
            click.echo(result["message"], err=True)
        return
    _emit_graph(graphs.protocol_graph(data), data["stats"], fmt, out_file)


def _emit_graph(g, stats, fmt, out_file):
    from tracer import graph as graphs

    if fmt == "dot":
        text = graphs.graph_to_dot(g)
    elif fmt == "json":
        text = json.dumps(graphs.graph_to_json(g, stats), indent=1) + "\n"
    else:
        raise UsageError("--all supports --format json or dot")
    if out_file:
        Path(out_file).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _lint_command(name: str):
    from tracer.lint import _commands as lint_commands

    return {command.name: command for command in lint_commands()}[name]


def _explain_command():
    from tracer.explain import explain_command

    return explain_command()


def _report_command():
    from tracer.report import report_command

    return report_command


def _verify_command():
    from tracer.verify.cli import verify_command

    return verify_command


# Commands that live in their own modules, imported only when invoked (or
# listed in --help) so that `tracer scan` does not pay for them at start-up.
LAZY_COMMANDS = {
    "report": _report_command,
    "explain": _explain_command,
    "verify": _verify_command,
    "lint": lambda: _lint_command("lint"),
    "baseline": lambda: _lint_command("baseline"),
    "sweep": lambda: __import__("tracer.sweep", fromlist=["sweep_command"]).sweep_command,
}


def _register_optional():
    main.lazy_commands.update(LAZY_COMMANDS)


_register_optional()

if __name__ == "__main__":  # pragma: no cover
    main()
