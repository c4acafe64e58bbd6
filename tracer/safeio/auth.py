"""Authenticated cache entries: an entry is trusted only if this machine's user wrote it.

An entry is one file: a first line holding ``HMAC-SHA256(key, name NUL payload)``
in hex, then the payload. The key lives outside every cache folder (a CI cache
restored from another job, or a folder anyone else can write, brings entries
whose HMAC does not match: they are ignored and rebuilt):

- ``$TRACER_CACHE_KEY`` when set (any string; e.g. a CI secret, so that trusted
  jobs share a cache and jobs from forks, which do not get the secret, cannot
  forge entries for them);
- else a random key in ``$XDG_STATE_HOME/tracer/cache.key`` (default
  ``~/.local/state/tracer/cache.key``), made on first use with mode 0600;
- else (no writable home) a key for this process only: nothing is reused across runs.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from pathlib import Path

from tracer.safeio.read import Unreadable, is_within, read_bytes
from tracer.safeio.write import write_bytes

_KEY: bytes | None = None


def key_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    return (Path(state) if state else Path.home() / ".local" / "state") / "tracer" / "cache.key"


def cache_key() -> bytes:
    global _KEY
    secret = os.environ.get("TRACER_CACHE_KEY")
    if secret:
        return hashlib.sha256(b"tracer-cache-key\0" + secret.encode()).digest()
    if _KEY is None:
        _KEY = _load_or_make_key()
    return _KEY


def _load_or_make_key() -> bytes:
    path = key_file()
    try:
        data = read_bytes(path, 4096)
        if len(data) >= 32:
            return data
    except Unreadable:
        pass
    fresh = os.urandom(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(fresh)
        return fresh
    except FileExistsError:  # another process made it first: use theirs
        try:
            data = read_bytes(path, 4096)
            return data if len(data) >= 32 else fresh
        except Unreadable:
            return fresh
    except OSError:
        return fresh  # no writable home: a key for this process only


def usable_for(folder: str | Path) -> bool:
    """False when the key file lies inside ``folder`` (a cache there could carry its own key)."""
    if os.environ.get("TRACER_CACHE_KEY"):
        return True
    return _outside(str(key_file()), str(folder))


@functools.lru_cache(maxsize=64)
def _outside(key: str, folder: str) -> bool:
    return not is_within(key, folder)


def _mac(name: str, payload: bytes) -> bytes:
    return hmac.new(cache_key(), name.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def seal(name: str, payload: bytes) -> bytes:
    return _mac(name, payload) + b"\n" + payload


def unseal(name: str, blob: bytes) -> bytes | None:
    """The payload, or None when the entry was not written by this key for this name."""
    mac, newline, payload = blob.partition(b"\n")
    if not newline or not hmac.compare_digest(mac, _mac(name, payload)):
        return None
    return payload


def load_entry(path: Path, root: Path, limit: int) -> bytes | None:
    """The payload of an authenticated entry under ``root``; None when absent, refused or forged."""
    if not usable_for(root):
        return None
    try:
        blob = read_bytes(path, limit, root)
    except Unreadable:
        return None
    return unseal(path.name, blob)


def store_entry(path: Path, root: Path, payload: bytes) -> bool:
    """Write an authenticated entry (temp + rename, never through a link); False when it could not be."""
    if not usable_for(root) or Path(root).is_symlink():  # a cache folder that is a link (`lint -> /elsewhere`)
        return False
    try:
        write_bytes(path, seal(path.name, payload), root)
        return True
    except OSError:
        return False
