"""`tracer explain`: which hidden states one model's chain really captures."""

from __future__ import annotations

import sys

import click

from tracer.analysis.result_cache import scan_memoised
from tracer.cli.options import PackOptions, pack_options
from tracer.effective.annotate import explain
from tracer.effective.sources import ExplainError
from tracer.model.errors import UsageError
from tracer.present.explain_text import explanation_json, format_explanation


@click.command("explain")
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@pack_options
@click.option("--target-config", required=True, type=click.Path(exists=True), help="Target config.json or its folder.")
@click.option("--draft-config", required=True, type=click.Path(exists=True), help="Draft config.json or its folder.")
@click.option("--entry", default=None, help="Entry class (default: the target's architectures).")
@click.option("--pp", default=1, type=click.IntRange(1, 1024), show_default=True, help="Pipeline-parallel size.")
@click.option("--draft-framework", default=None, metavar="NAME",
              help="The framework whose capture convention the draft's ids were trained in (a protocol "
                   "pack's framework name); default: this tree's.")
@click.option("--format", "--output-format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def explain_command(packs: PackOptions, path: str, target_config: str, draft_config: str, entry: str | None,
                    pp: int, draft_framework: str | None, fmt: str) -> None:
    """Explain which hidden states one model's capture chain really captures (the protocol is
    the one the draft config is for, or --protocol)."""
    protocols = packs.packs()
    result = scan_memoised(path, protocols, packs.cache_dir, packs.use_cache, packs.jobs)
    wanted = packs.protocols[0] if len(packs.protocols) == 1 else None
    try:
        model, outcome = explain(result, protocols, target_config, draft_config, entry, pp, wanted,
                                 packs.cache_dir, packs.use_cache, draft_framework)
    except ExplainError as exc:
        raise UsageError(str(exc)) from None
    if model is None:
        raise UsageError(f"no {outcome['protocol']} entry class matches {outcome['entry']}")
    click.echo(explanation_json(outcome) if fmt == "json" else format_explanation(outcome))
    scan = outcome.get("scan") or {}
    if any(f["severity"] == "error" for f in outcome["findings"]) or scan.get("verdict") in ("broken", "missing"):
        sys.exit(1)  # the scan's verdict counts too: a model without the setter cannot start with this draft
