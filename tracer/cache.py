"""On-disk cache of module summaries, keyed by content hash.

Entries are JSON, written atomically (temp file + rename) so concurrent scans
never see half a file; an entry that does not load is ignored and rebuilt.
The tracer version is part of the key, so another version's cache is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from tracer import __version__
from tracer.summary import ModuleSummary, from_plain, to_plain

SCHEMA = "2"  # bump when a summary dataclass changes shape


def default_cache_dir() -> Path:
    env = os.environ.get("TRACER_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tracer"


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

    def get(self, key: str, kind: type = ModuleSummary):
        if self.directory is None:
            return None
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                data = json.load(fh)
            summary = from_plain(data)
            if not isinstance(summary, kind):
                raise ValueError(f"not a {kind.__name__}")
        except (OSError, ValueError, TypeError, KeyError, RecursionError):
            self.misses += 1
            return None
        self.hits += 1
        return summary

    def put(self, key: str, summary) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(to_plain(summary), fh, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def get_json(self, key: str):
        """A plain JSON value stored under ``key`` (None when absent or unreadable)."""
        if self.directory is None:
            return None
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def put_json(self, key: str, value) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh)
            os.replace(tmp, path)
        except OSError:
            pass
