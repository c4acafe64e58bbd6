"""The whole-result cache: an unchanged tree is answered without tracing anything.

The key is every in-scope file's path, size, modification and change time and
inode, the packs, and tracer's own code; anything else runs the scan (which
still reuses per-method summaries). What the cache may be trusted with: only
this user's own earlier answers (see the README's Robustness section).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

from tracer import __version__
from tracer.index.cache import SummaryCache, default_cache_dir, entry_key
from tracer.index.discover import chosen_protocols, detect_layout, list_sources
from tracer.model.protocol import Protocol
from tracer.model.results import ScanResult
from tracer.present.scan_json import ScanJsonError, from_json, to_json


def _key(path: str | Path, packs: Sequence[Protocol]) -> str:
    layout = detect_layout(path, list(packs))
    chosen = chosen_protocols(layout, packs)
    files, _ = list_sources(layout)
    digest = hashlib.sha256()
    digest.update(str(layout.scan_root).encode())
    # tracer's own code is part of the answer: a changed tracer must not reuse old results
    for own in sorted(Path(__file__).resolve().parents[1].rglob("*.py")):
        st = own.stat()
        digest.update(f"{own.relative_to(own.parents[2])}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for proto in chosen:
        digest.update(repr(proto).encode())
    for source in files:
        if not any(p.in_scope(source.module) for p in chosen):
            continue
        try:
            st = os.stat(source.abspath)
        except OSError:
            digest.update(f"{source.path}:missing".encode())
            continue
        digest.update(f"{source.path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}\n".encode())
    return entry_key(digest.digest(), "", "", "scan-result")


def scan_memoised(path: str | Path, packs: Sequence[Protocol], cache_dir: str | Path | None = None,
                  use_cache: bool = True, jobs: int = 0, plugins: Sequence[str] = ()) -> ScanResult:
    """The scan result, from the whole-result cache when nothing in scope changed (not with
    plugins: the key covers the host's files only; the chain memo still serves them)."""
    # the pipeline (every stage's modules) is imported only when the tree must be traced
    started = time.perf_counter()
    if not use_cache or plugins:
        from tracer.analysis.pipeline import scan

        return scan(path, packs, cache_dir, use_cache, jobs, plugins).result
    cache = SummaryCache(Path(cache_dir) if cache_dir else default_cache_dir())
    key = _key(path, packs)
    stored = cache.get_json(key)
    if isinstance(stored, dict) and stored.get("tool", {}).get("version") == __version__ and "models" in stored:
        try:
            result = from_json(stored)
        except ScanJsonError:
            result = None
        if result is not None:
            return dataclasses.replace(result, stats=dataclasses.replace(
                result.stats, seconds=round(time.perf_counter() - started, 3), result_cache=True))
    from tracer.analysis.pipeline import scan

    result = scan(path, packs, cache_dir, True, jobs).result
    cache.put_json(key, to_json(result))
    return result
