"""The base record: one scan of the base revision per commit, with each finding's
fingerprint and, for every entry class, the files its result depends on (its
entry file and registry, every hop's file and call site, the MROs on the way).
Cached by commit; after a commit it is derived from the parent's record."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracer import __version__
from tracer.analysis.entries import registered_in
from tracer.analysis.pipeline import scan
from tracer.config.packs import MAX_PACK_BYTES, load_protocols
from tracer.index.cache import default_cache_dir
from tracer.index.discover import detect_layout
from tracer.index.project import Project
from tracer.index.source import is_within, read_regular_bytes
from tracer.lint.fingerprint import add_fingerprints
from tracer.lint.suppress import apply_to_json
from tracer.model.protocol import Protocol
from tracer.present.scan_json import to_json
from tracer.resolve.resolver import ClassRef, Resolver
from tracer.safeio.read import read_or_none

_MAX_READ = 4 * 1024 * 1024  # scanned files over 1 MiB are never parsed (project.MAX_FILE_BYTES)


class NeedFullScan(Exception):
    """The change is one a re-trace cannot answer (a protocol appears, a registry kind)."""


def in_scope(proto: Protocol, module: str) -> bool:
    """The pack's package scope (e.g. sglang.srt), as the scan applies it."""
    return proto.in_scope(module)


def mentions_word(path: Path, word: str) -> bool:
    # bounded, regular files only: a worktree link to /dev/zero or a FIFO must not hang lint
    data = read_regular_bytes(path, _MAX_READ)
    return data is not None and word.encode() in data


def within(path: Path, folder: Path) -> bool:
    return is_within(path, folder)


RECORD_VERSION = "7"  # 7: findings carry an anchor, fingerprints hash normalised statement tokens; 6: a finding's col is 1-based (scan JSON schema 2); 5: deps include every module a chain read
MAX_RECORD_BYTES = 256 * 1024 * 1024  # a lint record or result bigger than this is not ours


@dataclass(frozen=True)
class Options:
    protocols: tuple[str, ...]
    rules: tuple[str, ...]
    cache_dir: str | None
    use_cache: bool
    jobs: int

    def packs(self) -> list[Protocol]:
        return load_protocols(list(self.protocols) or None, list(self.rules))

    def digest(self) -> str:
        digest = hashlib.sha256(f"{__version__}\0{RECORD_VERSION}\0{','.join(self.protocols)}".encode())
        for rule in self.rules:
            data = read_or_none(rule, MAX_PACK_BYTES)  # a FIFO or /dev/zero must not hang the key
            digest.update(hashlib.sha256(data).digest() if data is not None else rule.encode())
        return digest.hexdigest()[:20]


def lint_cache_dir(options: Options) -> Path | None:
    if not options.use_cache:
        return None
    return (Path(options.cache_dir) if options.cache_dir else default_cache_dir()) / "lint"


def package_prefix(root: Path, options: Options) -> str:
    """Path of the framework's package inside the checkout ("python/sglang" or "sglang")."""
    layout = detect_layout(root, options.packs())
    return os.path.relpath(layout.base / layout.package, layout.scan_root).replace(os.sep, "/")


def empty_record() -> dict:
    return {"version": RECORD_VERSION, "scan": {"findings": [], "models": [], "call_sites": [], "protocols": []},
            "deps": {}, "registered_by": {}, "files": [], "entry_modules": []}


def scan_with_dependencies(path: Path, options: Options) -> dict:
    """A full scan plus, per (protocol, entry), the files its result depends on."""
    context = scan(path, options.packs(), options.cache_dir, options.use_cache, options.jobs)
    data = to_json(context.result)
    project, resolver = context.project, context.resolver
    registered = _registrations(project, resolver, context.protocols)
    deps = {}
    for model in data["models"]:
        key = f"{model['protocol']}|{model['entry']}"
        files = set(model_files(project, resolver, model)) | set(read_paths(project, context.reads.get(key, ())))
        files.update(registered.get(model["entry"], ()))
        deps[key] = sorted(files)
    apply_to_json(data, path, _traced_paths(data))
    add_fingerprints(data["findings"] + data["suppressed"], path)
    return {
        "version": RECORD_VERSION, "scan": data, "deps": deps,
        "registered_by": {e: sorted(f) for e, f in registered.items()},
        "files": [[f.module, f.path, f.is_package] for f in project.files],
        "entry_modules": sorted(m for m in project.by_module
                                if any(p.is_entry_module(m) for p in context.protocols)),
        # files naming each protocol's setter: a change that removes the last of them drops the protocol
        "mentions": {p.name: sorted(s.path for m, s in project.by_module.items()
                                    if in_scope(p, m) and project.mentions(m, p.setter))
                     for p in context.protocols},
    }


def _registrations(project: Project, resolver: Resolver, protocols: tuple[Protocol, ...]) -> dict[str, set[str]]:
    """entry class -> files whose registry variable (EntryClass) names it."""
    found: dict[str, set[str]] = {}
    for proto in protocols:
        for module in project.by_module:
            if proto.is_entry_module(module) and project.summaries.get(module) is not None:
                for ref in registered_in(project, resolver, proto, module):
                    found.setdefault(ref.fullname, set()).add(project.by_module[module].path)
    return found


def _traced_paths(data: dict[str, Any]) -> list[str]:
    """Files the scan traced through: where an unused suppression can be reported."""
    paths = {f["file"] for f in data["findings"] if f.get("file")}
    for model in data["models"]:
        paths.add(model["file"])
        for hop in model["chain"]:
            paths.update(p for p in (hop.get("file"), hop.get("call_file")) if p)
    paths.update(s["file"] for s in data["call_sites"] if s.get("file"))
    return sorted(paths)


def split_qualname(project: Project, qualname: str) -> ClassRef | None:
    """ClassRef of the class part of a hop qualname (module.Class[.member])."""
    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in project.by_module:
            rest = parts[cut:]
            return ClassRef(module, ".".join(rest[:1])) if rest else None
    return None


def read_paths(project: Project, modules: Sequence[str]) -> list[str]:
    """The files of the modules a chain read (the chain memo's record of its trace)."""
    return [project.by_module[m].path for m in modules if m in project.by_module]


def model_files(project, resolver, model: dict):
    yield model["file"]
    classes = [split_qualname(project, model["entry"])]
    for hop in model["chain"]:
        for key in ("file", "call_file"):
            if hop.get(key):
                yield hop[key]
        classes.append(split_qualname(project, hop["qualname"]))
    if model.get("state_owner"):
        classes.append(split_qualname(project, model["state_owner"] + ".x"))
    for ref in classes:
        if ref is None:
            continue
        try:
            mro, _ = resolver.mro(ref)
        except Exception:  # noqa: BLE001 - a class the resolver cannot linearise only loses dependencies
            mro = [ref]
        for cls in mro:
            source = project.by_module.get(cls.module)
            if source is not None:
                yield source.path
