"""The call graph's on-disk cache: each file's compiled IR by content hash, and the
whole answer by the hash of every file's key (an unchanged tree is answered without
solving). Entries are ``marshal`` data (plain tuples, lists, strings and numbers;
loading one runs nothing) behind an HMAC line (:mod:`tracer.safeio.auth`: an entry this
user did not write is never decoded), written atomically; a bad entry is ignored and
rebuilt, a cache that cannot be written only costs speed."""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracer import __version__
from tracer.callgraph.ir import ClassIR, ModuleIR, Param, ScopeIR
from tracer.safeio.auth import load_entry, store_entry

SCHEMA = "cg4"  # bump when the IR or the answer changes shape


def _code_fingerprint() -> str:
    """The call graph's own code is part of every key: a changed compiler never reads old entries."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(path.name.encode())
    return digest.hexdigest()[:16]


CODE = _code_fingerprint()
MAX_ENTRY_BYTES = 256 * 1024 * 1024


def file_key(data: bytes, module: str, path: str, is_package: bool) -> str:
    digest = hashlib.sha256()
    for part in (__version__, SCHEMA, CODE, module, path, str(is_package)):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


def tree_key(keys: list[str]) -> str:
    digest = hashlib.sha256(f"{__version__}\0{SCHEMA}\0{CODE}\0tree".encode())
    for key in keys:
        digest.update(key.encode())
    return digest.hexdigest()


def document_key(tree: str, fmt: str, writer: str) -> str:
    """A written `graph --all` document: the tree's answer key, the format, the writer's code."""
    return hashlib.sha256(f"{tree}\0document\0{fmt}\0{writer}".encode()).hexdigest()


class LazyInstrs:
    """A module's instructions kept marshalled until iterated (each time: nothing is kept): the
    whole tree's decoded instructions were ~290 MB on sglang/srt, held from the parse until the
    solver installed each module, on top of the fixpoint's own memory; marshalled they are ~50 MB.
    ``stars``: the modules its ``from M import *`` name, known without decoding the rest."""

    __slots__ = ("blob", "stars")

    def __init__(self, blob: bytes, stars: tuple[str, ...]):
        self.blob = blob
        self.stars = stars

    def __iter__(self) -> Iterator[Any]:
        return iter(marshal.loads(self.blob))

    def __len__(self) -> int:
        return len(marshal.loads(self.blob))


def encode(ir: ModuleIR) -> bytes:
    scopes = [(s.name, s.kind, s.line, [(p.name, p.var, p.kind) for p in s.params], s.ret, s.yields,
               list(s.passthrough), s.owner, s.method, list(s.span)) for s in ir.scopes]
    classes = [(c.name, c.line, list(c.bases), list(c.attrs)) for c in ir.classes]
    instrs = list(ir.instrs)
    stars = [ins[1] for ins in instrs if ins[0] == "star"]
    return marshal.dumps((ir.module, ir.path, ir.is_package, ir.nvars, scopes, classes, list(ir.globals),
                          marshal.dumps(instrs), stars, ir.calls, ir.error))


_NUMBERS: list[int] = []  # 0 .. 65535, one object each (ints from marshal are one per occurrence)


def _n(x: int) -> int:
    """One int object per number: a scope's line, variables and span are ~10 numbers kept for the
    whole solve (sglang/srt: ~370,000 int objects, 32 bytes each, mostly the same few thousand)."""
    return _NUMBERS[x] if 0 <= x < len(_NUMBERS) else x


def decode(blob: bytes) -> ModuleIR:
    module, path, is_package, nvars, scopes, classes, globals_, instrs, stars, calls, error = marshal.loads(blob)
    if not isinstance(instrs, bytes):
        raise ValueError("an entry of another shape")
    if not _NUMBERS:
        _NUMBERS.extend(range(1 << 16))
    return ModuleIR(
        module, path, is_package, nvars,
        tuple(ScopeIR(n, k, _n(ln), tuple(Param(p[0], _n(p[1]), p[2]) for p in ps), _n(r), _n(y),
                      tuple(map(_n, pt)), _n(o), me, tuple(map(_n, sp)))
              for n, k, ln, ps, r, y, pt, o, me, sp in scopes),
        tuple(ClassIR(n, ln, tuple(b), tuple(tuple(a) for a in at)) for n, ln, b, at in classes),
        tuple(tuple(g) for g in globals_), LazyInstrs(instrs, tuple(stars)), calls, error)  # type: ignore[arg-type]


class Store:
    """Entries under ``<cache>/callgraph/``, read and written by the cache rule of
    :mod:`tracer.safeio.auth` (HMAC by this user's key, regular files only, bounded, temp +
    rename, never through a link): ``marshal`` is not safe on data someone else made."""

    def __init__(self, directory: Path | None):
        self.root = Path(directory) if directory else None
        self.directory = self.root / "callgraph" if self.root else None

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / key

    def load(self, key: str) -> bytes | None:
        if self.root is None:
            return None
        return load_entry(self._path(key), self.root, MAX_ENTRY_BYTES)

    def store(self, key: str, payload: bytes) -> None:
        if self.root is None:
            return
        store_entry(self._path(key), self.root, payload)  # a cache that cannot be written only costs speed

    def load_value(self, key: str) -> Any:
        payload = self.load(key)
        if payload is None:
            return None
        try:
            return marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return None

    def store_value(self, key: str, value: Any) -> None:
        try:
            self.store(key, marshal.dumps(value))
        except ValueError:
            pass
