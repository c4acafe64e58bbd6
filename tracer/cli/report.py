"""`tracer report`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tracer.analysis.result_cache import scan_memoised
from tracer.cli.options import PackOptions, RuleOptions, pack_options, rule_options
from tracer.cli.output import progress, quiet_option
from tracer.cli.scan import protocol_order
from tracer.config.packs import load_protocols
from tracer.index.source import read_regular_bytes
from tracer.lint.suppress import apply_suppressions
from tracer.model.errors import UsageError
from tracer.model.results import ScanResult
from tracer.present.report import build_report
from tracer.present.scan_json import from_json
from tracer.safeio.read import Unreadable, load_json

MAX_SCAN_JSON = 512 * 1024 * 1024


def _load_scan(path: str | None, scan_file: str | None, packs: PackOptions, rules: RuleOptions,
               quiet: bool = False) -> ScanResult:
    if path and scan_file:
        raise UsageError("give PATH (a framework tree to scan) or --from SCAN.json, not both")
    if not path and not scan_file:
        raise UsageError("give PATH (a framework tree to scan) or --from SCAN.json (a saved `tracer scan --format json`)")
    if scan_file:
        data = read_regular_bytes(scan_file, MAX_SCAN_JSON)
        if data is None:
            raise UsageError(f"cannot read scan JSON {scan_file} (missing, or not a regular file)")
        try:
            loaded = load_json(data, scan_file)
        except Unreadable as error:
            raise UsageError(f"cannot read scan JSON {error}") from None
        if not isinstance(loaded, dict) or "models" not in loaded:
            raise UsageError(f"{scan_file} is not a tracer scan (no 'models')")
        return rules.settings(None).narrow(from_json(loaded))
    assert path is not None
    settings = rules.settings(path, packs)
    with progress(f"tracer: scanning {Path(path).name or path}", quiet):
        result = scan_memoised(path, settings.packs(), packs.cache_dir, packs.use_cache, packs.jobs,
                               settings.config.plugins)
    return settings.narrow(apply_suppressions(result))


def setter_call_graph(root: Path, packs: PackOptions, protocols: tuple[str, ...] = ()) -> tuple[Any, str]:
    """The value-flow call graph around the packs' capture setters (each setter, what calls it and
    what it calls), solved on the files naming a setter and the modules they import, not the whole
    tree (the SGLang 0.5.23 wheel: 376 of 4,716 files, ~13 s cold on a busy 2-core machine, read back
    from the cache when unchanged); (None, why) when there is none."""
    from tracer.analysis.pipeline import summary_cache
    from tracer.callgraph.focus import focused_call_graph
    from tracer.cli.graph import entry_seeds, module_calls, registries, seed_modules
    from tracer.present import callgraph_view

    # the scan's protocols' setter methods (a pack whose ids ride on the config names __init__: no setter)
    setters = sorted({p.setter for p in packs.packs() if p.setter and not p.setter.startswith("__")
                      and (not protocols or p.name in protocols)})
    if not setters:
        return None, "no protocol of the scan has a setter method"
    try:
        graph, _ = focused_call_graph(root, summary_cache(packs.cache_dir, packs.use_cache), setters, packs.jobs,
                                      entry_seeds=entry_seeds(packs), module_calls=module_calls(packs),
                                      seed_modules=seed_modules(packs), registries=registries(packs, root))
    except Exception as error:  # a picture must never cost the report (the protocol graph is drawn instead)
        return None, f"the value-flow call graph failed: {error}"
    starts = sorted({n for name in setters for n in callgraph_view.start_nodes(graph, name) if n.endswith("." + name)})
    if not starts:
        return None, "no capture setter is defined in the tree"
    return callgraph_view.neighbourhood(graph, starts, SETTER_DEPTH, callers=True), ""


SETTER_DEPTH = 1  # calls up and down from each setter: more is no picture anyone reads on sglang/srt


@click.command("report")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
@pack_options
@rule_options
@quiet_option
@click.option("--from", "scan_file", type=click.Path(exists=True, dir_okay=False), help="Build from a saved `tracer scan --format json`.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write the report into.")
@click.option("--source-root", type=click.Path(exists=True, file_okay=False),
              help="Where the scanned files are, for source excerpts (default: PATH; with --from, no excerpts unless given).")
def report_command(packs: PackOptions, rules: RuleOptions, quiet: bool, path: str | None, scan_file: str | None,
                   out_dir: str, source_root: str | None) -> None:
    """Write an HTML report with Graphviz pictures of every capture chain.

    \b
    tracer report PATH -o DIR
    tracer report --from scan.json -o DIR [--source-root TREE]
    """
    scan = _load_scan(path, scan_file, packs, rules, quiet)
    # Excerpts come from the tree the user named, never from a root a JSON file claims.
    root = Path(source_root) if source_root else (Path(path) if path else None)
    call_graph, note = None, "no source tree: give PATH or --source-root for the value-flow call graph"
    if root is not None:
        with progress("tracer: the call graph around the capture setters", quiet):
            call_graph, note = setter_call_graph(root, packs, tuple(scan.protocols))
    with progress(f"tracer: writing the report to {out_dir}", quiet):
        summary = build_report(scan, Path(out_dir), root, protocol_order=protocol_order(load_protocols()),
                               call_graph=call_graph, call_graph_note=note)
    click.echo(
        f"wrote {summary['index']} ({summary['pages']} entry-class pages, "
        f"{summary['pictures']} chain pictures, {summary['sources']} source pages) in {summary['seconds']:.1f} s"
    )
    if not summary["graphviz"]:  # the page and the DOT files are written; the pictures are not
        click.echo(f"tracer: error: the pictures were not drawn: {' '.join(summary['message'].split())}", err=True)
        sys.exit(2)
