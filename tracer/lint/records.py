"""The base record: one scan of the base revision per commit, with each finding's
fingerprint and, for every entry class, the files its result depends on (its
entry file and registry, every hop's file and call site, the MROs on the way).
Cached by commit; after a commit it is derived from the parent's record."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracer import __version__
from tracer.analysis.entries import registered_in
from tracer.analysis.pipeline import scan
from tracer.config.packs import load_protocols
from tracer.index.cache import default_cache_dir
from tracer.index.discover import detect_layout
from tracer.index.project import Project
from tracer.index.source import is_within, read_regular_bytes
from tracer.lint.fingerprint import add_fingerprints
from tracer.lint.git import _SAFE_GIT, _export, _names, git
from tracer.lint.suppress import SourceLines, apply_to_json
from tracer.model.errors import UsageError
from tracer.model.protocol import Protocol
from tracer.present.scan_json import to_json
from tracer.resolve.resolver import ClassRef, Resolver

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


RECORD_VERSION = "4"


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
            try:
                digest.update(Path(rule).read_bytes())
            except OSError:
                digest.update(rule.encode())
        return digest.hexdigest()[:20]


def lint_cache_dir(options: Options) -> Path | None:
    if not options.use_cache:
        return None
    return (Path(options.cache_dir) if options.cache_dir else default_cache_dir()) / "lint"


def package_prefix(root: Path, options: Options) -> str:
    """Path of the framework's package inside the checkout ("python/sglang" or "sglang")."""
    layout = detect_layout(root, options.packs())
    return os.path.relpath(layout.base / layout.package, layout.scan_root).replace(os.sep, "/")


def base_record(root: Path, commit: str, prefix: str, options: Options, progress=None) -> dict:
    """Scan of the base revision with dependencies and fingerprints; cached by commit."""
    directory = lint_cache_dir(options)
    path = directory / f"base-{commit}-{options.digest()}.json" if directory else None
    if path is not None and path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    record = _derive_from_parent(root, commit, prefix, options, directory) if directory else None
    if record is not None:
        _write_record(path, record)
        return record
    if progress is not None:
        progress(f"tracer lint: scanning the base revision {commit[:10]} once (kept in the cache for later runs)")
    tmp = Path(tempfile.mkdtemp(prefix="tracer-base-"))
    try:
        exported = _export(root, commit, prefix, tmp)
        record = scan_with_dependencies(tmp, options) if exported else _empty_record()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    record["commit"] = commit
    if path is not None:
        _write_record(path, record)
    return record


def _write_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh, separators=(",", ":"))
    os.replace(name, path)


MAX_DERIVED_CHANGES = 200  # past this many changed files a fresh base scan is as quick


def _derive_from_parent(root: Path, commit: str, prefix: str, options: Options, directory: Path) -> dict | None:
    """The record of ``commit`` from its first parent's cached record, re-tracing only what the
    commit changed, reading the commit's versions of files the working tree has changed since.
    (After every commit the base moves by one; this keeps the next lint fast.) None when there is
    no parent record or the commit is not a plain small change."""
    try:
        parent = git(root, "rev-parse", "--verify", "--quiet", f"{commit}^1").strip()
    except UsageError:
        return None
    parent_path = directory / f"base-{parent}-{options.digest()}.json"
    try:
        parent_record = json.loads(parent_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if parent_record.get("version") != RECORD_VERSION or not parent_record.get("files"):
        return None
    under = prefix + "/"
    changed = sorted(p for p in _names(git(root, "diff", "--name-only", "--no-renames", "-z", parent, commit))
                     if p.startswith(under))
    if len(changed) > MAX_DERIVED_CHANGES:
        return None
    differ = {p for p in _names(git(root, "diff", "--name-only", "--no-renames", "-z", commit))
              | _names(git(root, "ls-files", "--others", "--exclude-standard", "-z")) if p.startswith(under)}
    tmp = Path(tempfile.mkdtemp(prefix="tracer-view-"))
    try:
        view: dict[str, str | None] = {}
        for path in sorted(set(changed) | differ):
            if not path.endswith(".py"):
                continue
            blob = subprocess.run(["git", *_SAFE_GIT, "cat-file", "blob", f"{commit}:{path}"], cwd=root,
                                  capture_output=True)
            if blob.returncode != 0:
                view[path] = None
                continue
            target = tmp / "view" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
            view[path] = str(target)
        from tracer.lint.retrace import retrace  # retrace builds on this module

        keep: dict = {}
        try:
            head = retrace(root, parent_record, changed, options, view=view, keep=keep)
        except NeedFullScan:
            return None
        if keep.get("dropped"):
            return None
        return _merge_record(root, parent_record, head, keep, changed, view, commit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _merge_record(root: Path, parent: dict, head: dict, keep: dict, changed: list[str],
                  view: dict[str, str | None], commit: str) -> dict:
    """Parent record with the re-traced chains (and runner, when touched) replaced."""
    affected = {(proto, entry) for proto, entries in head["affected"].items() for entry in entries}
    changed_set = set(changed)

    def replaced(finding: dict, entry: str) -> bool:
        if entry:
            return (finding.get("protocol") or "", entry) in affected
        if finding["slug"] in ("input-error", "unused-suppression"):
            return finding["file"] in changed_set
        return head["runner"]

    def unaffected(findings: list[dict]) -> list[dict]:
        kept = []
        for finding in findings:
            entries = finding.get("entries") or ([finding["entry"]] if finding.get("entry") else [])
            if not entries:
                if not replaced(finding, ""):
                    kept.append(finding)
                continue
            left = [e for e in entries if not replaced(finding, e)]
            if left:
                entry = finding.get("entry") if finding.get("entry") in left else left[0]
                kept.append(dict(finding, entries=left, entry=entry))
        return kept

    source = SourceLines(root, view)
    fresh = {"root": str(root), "findings": head["findings"], "models": head["models"], "framework": {}}
    apply_to_json(fresh, root, files=[p for p in changed if view.get(p)], source=source)
    add_fingerprints(fresh["findings"] + fresh["suppressed"], root, source)
    scan = dict(parent["scan"])
    scan["findings"] = unaffected(parent["scan"]["findings"]) + fresh["findings"]
    scan["suppressed"] = unaffected(parent["scan"].get("suppressed", [])) + fresh["suppressed"]
    scan["models"] = [m for m in parent["scan"]["models"] if (m["protocol"], m["entry"]) not in affected] \
        + head["models"]
    if head["runner"]:
        scan["call_sites"] = head["call_sites"]
    project, resolver = keep["project"], keep["resolver"]
    deps = {k: v for k, v in parent["deps"].items() if tuple(k.split("|", 1)) not in affected}
    registered_by = {e: set(w) for e, w in parent["registered_by"].items() if e not in keep["unregistered"]}
    for entry, paths in keep["registered"].items():
        registered_by.setdefault(entry, set()).update(paths)
    for model in head["models"]:
        files = set(_model_files(project, resolver, model)) | registered_by.get(model["entry"], set())
        deps[f"{model['protocol']}|{model['entry']}"] = sorted(files)
    module_of = {f.path: f.module for f in project.files}
    mentions = {}
    for proto in keep["protocols"]:
        naming = set(parent.get("mentions", {}).get(proto.name, [])) - changed_set
        for path in changed:
            if path in module_of and in_scope(proto, module_of[path]) and view.get(path) \
                    and mentions_word(Path(view[path]), proto.setter):
                naming.add(path)
        mentions[proto.name] = sorted(naming)
    return {
        "version": RECORD_VERSION, "scan": scan, "deps": deps,
        "registered_by": {e: sorted(w) for e, w in registered_by.items()},
        "files": [[f.module, f.path, f.is_package] for f in project.files],
        "entry_modules": sorted(m for m in project.by_module if any(p.is_entry_module(m) for p in keep["protocols"])),
        "mentions": mentions, "commit": commit, "derived_from": parent.get("commit"),
    }


def _empty_record() -> dict:
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
        files = set(_model_files(project, resolver, model))
        files.update(registered.get(model["entry"], ()))
        deps[f"{model['protocol']}|{model['entry']}"] = sorted(files)
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


def _model_files(project, resolver, model: dict):
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
