"""On-disk cache of module summaries, keyed by content hash.

Each entry is one file: a first line holding the SHA-256 of the rest, then the
JSON. Entries are written atomically (temp file + rename) so concurrent scans
never see half a file; an entry whose checksum does not match (truncated,
corrupted, written by something else) or that does not load is ignored and
rebuilt. The tracer version and SCHEMA are part of the key, so another
version's cache is ignored. Any failure of the cache only costs speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from tracer import __version__
from tracer.model.summary import ModuleSummary, from_plain, to_plain

SCHEMA = "11"  # bump when a summary dataclass changes shape
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # a bigger entry is not ours: ignored, never read into memory


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

    # -- raw entries -------------------------------------------------------------------
    def _load(self, key: str):
        """The JSON value stored under ``key``, or None (absent, truncated, corrupt)."""
        try:
            with open(self._path(key), "rb") as fh:
                blob = fh.read(MAX_ENTRY_BYTES + 1)
            if len(blob) > MAX_ENTRY_BYTES:
                return None
            checksum, _, payload = blob.partition(b"\n")
            if hashlib.sha256(payload).hexdigest().encode() != checksum:
                return None
            return json.loads(payload)
        except (OSError, ValueError, RecursionError):
            return None

    def _store(self, key: str, value) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        tmp = None
        try:
            payload = json.dumps(value, separators=(",", ":")).encode()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "wb") as fh:
                fh.write(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            os.replace(tmp, path)
            tmp = None
        except (OSError, TypeError, ValueError, RecursionError):
            pass  # a cache that cannot be written only costs speed
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    # -- summaries -----------------------------------------------------------------------
    def get(self, key: str, kind: type = ModuleSummary):
        if self.directory is None:
            return None
        data = self._load(key)
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
        self._store(key, to_plain(summary))

    def get_json(self, key: str):
        """A plain JSON value stored under ``key`` (None when absent or unreadable)."""
        if self.directory is None:
            return None
        return self._load(key)

    def put_json(self, key: str, value) -> None:
        self._store(key, value)
