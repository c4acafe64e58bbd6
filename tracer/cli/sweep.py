"""`tracer sweep`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from tracer.present.sweep_page import history_html
from tracer.sweep.fetch import default_download_cache
from tracer.sweep.history import build_history, history_text, write_history
from tracer.sweep.run import run_sweep


@click.command("sweep")
@click.argument("spec")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for history.json, history.txt and index.html.")
@click.option("--download-cache", type=click.Path(file_okay=False), help="Where releases are downloaded and unpacked (default $TRACER_TEST_CACHE or ~/.cache/tracer-test).")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Summary cache shared by the workers (default: <download cache>/summaries).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Scanning worker processes (default: CPU count).")
@click.option("--protocol", "protocols", multiple=True, help="Protocol pack to apply (default: all that fit each release).")
def sweep_command(spec, out_dir, download_cache, cache_dir, jobs, protocols):
    """Scan every release in a range (SPEC: PACKAGE==LOW..HIGH, from PyPI) and write
    the history of each model's verdict: text, JSON and an HTML grid."""
    cache = Path(download_cache) if download_cache else default_download_cache()
    scan_cache = Path(cache_dir) if cache_dir else cache / "summaries"
    def log(msg: str) -> None:
        click.echo(msg, err=True)

    sweep = run_sweep(spec, cache, scan_cache, jobs or (os.cpu_count() or 1), list(protocols) or None, log=log)
    history = build_history(sweep)
    paths = write_history(history, Path(out_dir), history_html(history))
    click.echo(history_text(history), nl=False)
    click.echo(f"wrote {paths['text']}, {paths['json']}, {paths['html']}", err=True)
    if not history["releases"]:
        sys.exit(2)
