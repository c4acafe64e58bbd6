"""Chain results reused across runs: a chain is traced again only when a module it read changed.

One cache entry per scan setting (tracer's own code, the packs, the tree's set of
files, the registry's factories) holds, for every chain traced, the modules its
trace read (each with a digest of its bytes; see :mod:`tracer.index.reads`) and
its result. After an edit, a warm scan re-traces only the chains that read the
edited file, and the runner walk only if it did; the rest is read back. The
whole-result cache (``result_cache``) answers a tree in which nothing changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tracer import __version__
from tracer.analysis.runner import calls_digest
from tracer.index.cache import entry_key
from tracer.index.project import Project
from tracer.index.reads import parse_fact
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.results import Alternative, CallSite, Hop, ModelResult, TagSite
from tracer.model.summary import from_plain, to_plain

T = TypeVar("T")
_RESULT_TYPES: dict[str, type] = {t.__name__: t for t in (ModelResult, Hop, Finding, TagSite, Alternative, CallSite)}


def own_code_digest() -> bytes:
    """tracer's own code (paths, sizes, modification times): a changed tracer reuses nothing."""
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parents[1]
    for own in sorted(package.rglob("*.py")):
        st = own.stat()
        digest.update(f"{own.relative_to(package.parent)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.digest()


def memo_key(project: Project, protocols: Sequence[Protocol], setting: Iterable[object]) -> str:
    digest = hashlib.sha256(own_code_digest())
    for proto in protocols:
        digest.update(repr(proto).encode())
    digest.update(project.listing)
    for part in setting:
        digest.update(repr(part).encode())
    return entry_key(digest.digest(), "", "", "chains")


class ChainMemo:
    """Results of earlier runs whose modules have not changed (off without a cache folder)."""

    def __init__(self, project: Project, key: str | None):
        self.project = project
        self.key = key if project.cache.directory is not None else None
        stored = project.cache.get_json(self.key) if self.key else None
        self.stored: dict[str, Any] = stored if isinstance(stored, dict) else {}
        self.fresh: dict[str, Any] = {}
        self._digests: dict[str, str] = {}
        self.reads: dict[str, tuple[str, ...]] = {}  # name -> what its result was computed from
        self.reused = 0
        self.traced = 0

    def _digest(self, read: str) -> str:
        """A module's digest, or for a mention fact whether it still holds."""
        if read not in self._digests:
            fact = parse_fact(read)
            if fact is not None:
                self._digests[read] = "=" if self._holds(fact) else "changed"
            else:
                data = self.project.data(read)
                self._digests[read] = hashlib.sha256(data).hexdigest()[:20] if data is not None else "-"
        return self._digests[read]

    def _holds(self, fact: tuple[str, ...]) -> bool:
        """Is a derived answer still what it was? (An unknown kind of fact: no.)"""
        kind, *parts = fact
        if kind == "mention" and len(parts) == 3:
            return self.project.mentions(parts[0], parts[1]) == (parts[2] == "1")
        if kind == "calls" and len(parts) == 2:
            return parts[0] in self.project.by_module and calls_digest(self.project, parts[0]) == parts[1]
        return False

    def _unchanged(self, deps: object) -> bool:
        return isinstance(deps, dict) and all(isinstance(v, str) and self._digest(m) == v for m, v in deps.items())

    def modules_read(self, name: str) -> tuple[str, ...]:
        """The modules the result for ``name`` depends on (a fact counts as its module's)."""
        found = set()
        for read in self.reads.get(name, ()):
            fact = parse_fact(read)
            found.add(fact[1] if fact is not None and len(fact) > 2 else read)
        return tuple(sorted(found))

    def get(self, name: str, make: Callable[[], T], kind: type = object) -> T:
        """The stored result for ``name`` if every module it read is unchanged, else ``make()``
        (what it read is kept in ``reads`` either way: lint's dependencies)."""
        if self.key is None:
            with self.project.reads.record() as modules:
                value = make()
            self.reads[name] = tuple(modules)
            return value
        entry = self.stored.get(name)
        if isinstance(entry, dict) and self._unchanged(entry.get("deps")):
            try:
                stored: Any = from_plain(entry["value"], _RESULT_TYPES)
            except Exception:  # not an entry of ours
                stored = None
            if stored is not None and isinstance(stored, kind):
                self.fresh[name] = entry
                self.reused += 1
                self.project.reads.touch_all(entry["deps"])
                self.reads[name] = tuple(entry["deps"])
                return stored  # type: ignore[return-value]  # checked against kind above
        with self.project.reads.record() as modules:
            value = make()
        self.reads[name] = tuple(modules)
        self.fresh[name] = {"deps": {m: self._digest(m) for m in sorted(modules)}, "value": to_plain(value)}
        self.traced += 1
        return value

    def save(self) -> None:
        if self.key is not None and self.traced:
            self.project.cache.put_json(self.key, self.fresh)
