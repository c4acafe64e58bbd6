"""The library interface: scan a tree and get its results, typed or as the scan JSON.

This is what the command line does before it formats anything; tests, the verify
harness and other tools call it the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracer.analysis.pipeline import ScanContext, scan
from tracer.config.packs import load_protocols
from tracer.model.protocol import Protocol
from tracer.present.scan_json import to_json


def scan_tree(path: str | Path, protocols: Sequence[str] | Sequence[Protocol] | None = None,
              cache_dir: str | Path | None = None, use_cache: bool = True, jobs: int = 0,
              plugins: Sequence[str | Path] = ()) -> ScanContext:
    """Scan ``path`` with the built-in packs (or the named ones, or the given Protocol objects)."""
    given = list(protocols or [])
    packs = [p for p in given if isinstance(p, Protocol)]
    if len(packs) != len(given) or not given:
        packs = load_protocols([str(p) for p in given] if given else None)
    return scan(path, packs, cache_dir, use_cache, jobs, plugins)


def scan_to_json(path: str | Path, protocols: Sequence[str] | None = None, cache_dir: str | Path | None = None,
                 use_cache: bool = True, jobs: int = 0, plugins: Sequence[str | Path] = ()) -> dict[str, Any]:
    """The scan JSON of ``path`` (docs/scan-json.md), as ``tracer scan --format json`` prints it."""
    return to_json(scan_tree(path, protocols, cache_dir, use_cache, jobs, plugins).result)


__all__ = ["scan_to_json", "scan_tree"]
