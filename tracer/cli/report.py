"""`tracer report`."""

from __future__ import annotations

import json
from pathlib import Path

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
            loaded = json.loads(data)
        except ValueError as error:
            raise UsageError(f"cannot read scan JSON {scan_file}: {error}") from None
        if not isinstance(loaded, dict) or "models" not in loaded:
            raise UsageError(f"{scan_file} is not a tracer scan (no 'models')")
        return rules.settings(None).narrow(from_json(loaded))
    assert path is not None
    settings = rules.settings(path, packs)
    with progress(f"tracer: scanning {Path(path).name or path}", quiet):
        result = scan_memoised(path, settings.packs(), packs.cache_dir, packs.use_cache, packs.jobs)
    return settings.narrow(apply_suppressions(result))


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
    with progress(f"tracer: writing the report to {out_dir}", quiet):
        summary = build_report(scan, Path(out_dir), root, protocol_order=protocol_order(load_protocols()))
    click.echo(
        f"wrote {summary['index']} ({summary['pages']} entry-class pages, "
        f"{summary['pictures']} chain pictures, {summary['sources']} source pages) in {summary['seconds']:.1f} s"
    )
    if not summary["graphviz"]:
        click.echo(summary["message"], err=True)
