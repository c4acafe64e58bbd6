"""On-disk cache of module summaries, keyed by content hash.

Each entry is one file: a first line holding an HMAC of the rest (keyed by a
secret kept outside the cache folder, see :mod:`tracer.safeio.auth`), then the
JSON. Entries are read by the reading rule (regular files only, non-blocking,
bounded, never through a link leaving the cache) and written atomically (temp
file + rename) so concurrent scans never see half a file; an entry whose HMAC
does not match (truncated, corrupted, written by another job or anyone without
the key) or that does not load is ignored and rebuilt. The tracer version and SCHEMA are part of the key, so another
version's cache is ignored. Any failure of the cache only costs speed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tracer import __version__
from tracer.safeio.auth import load_entry, store_entry

SCHEMA = "12"  # bump when a summary dataclass changes shape
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # a bigger entry is not ours: ignored, never read into memory


def default_cache_dir() -> Path:
    env = os.environ.get("TRACER_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tracer"


def summary_cache(cache_dir: str | Path | None, use_cache: bool) -> SummaryCache:
    """The cache of --cache-dir (else the default folder), or none with --no-cache."""
    return SummaryCache((Path(cache_dir) if cache_dir else default_cache_dir()) if use_cache else None)


def entry_key(data: bytes, module: str, path: str, level: str) -> str:
    digest = hashlib.sha256()
    for part in (__version__, SCHEMA, module, path, level):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


class SummaryCache:
    def __init__(self, directory: Path | None):
        self.directory = Path(directory) if directory else None
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / "summaries" / key[:2] / f"{key}.json"

    # -- raw entries -------------------------------------------------------------------
    def _load(self, key: str):
        """The JSON value stored under ``key``, or None (absent, truncated, corrupt, forged)."""
        assert self.directory is not None
        payload = load_entry(self._path(key), self.directory, MAX_ENTRY_BYTES)
        if payload is None:
            return None
        try:
            return json.loads(payload)
        except (ValueError, RecursionError):
            return None

    def _store(self, key: str, value) -> None:
        if self.directory is None:
            return
        try:
            payload = json.dumps(value, separators=(",", ":")).encode()
        except (TypeError, ValueError, RecursionError):
            return
        store_entry(self._path(key), self.directory, payload)  # a cache that cannot be written only costs speed

    # -- summaries -----------------------------------------------------------------------
    def get(self, key: str, kind: type | None = None):
        if self.directory is None:
            return None
        return self.decode(self._load(key), kind)

    def decode(self, data, kind: type | None = None):
        """A stored plain value as a summary of ``kind`` (default ModuleSummary; counted as a hit),
        or None (a miss)."""
        from tracer.model.summary import ModuleSummary, from_plain  # not on graph --all's path (~25 ms)

        kind = kind or ModuleSummary
        try:
            summary = from_plain(data) if data is not None else None
        except Exception:  # valid JSON of another shape: not an entry of ours
            summary = None
        if not isinstance(summary, kind):
            self.misses += 1
            return None
        self.hits += 1
        return summary

    def put(self, key: str, summary) -> None:
        from tracer.model.summary import to_plain

        self._store(key, to_plain(summary))

    def get_json(self, key: str):
        """A plain JSON value stored under ``key`` (None when absent or unreadable)."""
        if self.directory is None:
            return None
        return self._load(key)

    def put_json(self, key: str, value) -> None:
        self._store(key, value)
