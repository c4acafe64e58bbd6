"""The working tree: re-trace what the change can reach, on the one pipeline
(``analysis.pipeline.analyse`` with the affected entries)."""

from __future__ import annotations

import os
from pathlib import Path

from tracer.analysis.entries import registered_in
from tracer.analysis.pipeline import analyse, deduplicate, input_error_finding, summary_cache
from tracer.index.discover import detect_layout
from tracer.index.project import Project
from tracer.lint.records import (
    NeedFullScan,
    Options,
    in_scope,
    mentions_word,
    scan_with_dependencies,
    split_qualname,
    within,
)
from tracer.model.tree import SourceFile
from tracer.present.scan_json import call_site_from_json, call_site_to_json, finding_to_json, model_to_json
from tracer.resolve.resolver import ClassRef, Resolver


def retrace(root: Path, record: dict, touched: list[str], options: Options,
            view: dict[str, str | None] | None = None, keep: dict | None = None) -> dict:
    """Head results for the entries a touched file can change (lazy; summaries from the cache).

    ``view`` maps paths to the file to read instead of the working tree's (None: absent), so a
    commit can be looked at without exporting it; ``keep`` receives the project and resolver.
    """
    view = view or {}

    def where(path: str) -> str | None:
        return view[path] if path in view else (str(root / path) if (root / path).is_file() else None)

    def names_setter(path: str, word: str) -> bool:
        found = where(path)
        return found is not None and mentions_word(Path(found), word)

    packs = options.packs()
    layout = detect_layout(root, packs)
    chosen = [p for p in packs if p.name in set(record["scan"]["protocols"])]
    if not chosen or any(p.entry_kind != "module-variable" for p in chosen):
        raise NeedFullScan("protocol without a module-level entry variable")
    prefix = str(root) + os.sep
    files = {path: SourceFile(module, path, view.get(path) or prefix + path, is_package)
             for module, path, is_package in record["files"] if view.get(path, "") is not None}
    package_dir = (layout.base / layout.package).resolve()
    for path in set(touched) | set(view):
        full = (root / path).resolve()
        if not path.endswith(".py") or not within(full, package_dir):
            continue
        found = where(path)
        if found is not None:
            parts = os.path.relpath(full, layout.base)[:-3].split(os.sep)
            is_package = parts[-1] == "__init__"
            parts = parts[:-1] if is_package else parts
            if all(p.isidentifier() for p in parts):
                files[path] = SourceFile(".".join(parts), path, found, is_package)
        else:
            files.pop(path, None)
    for proto in packs:
        # A protocol the base lacked that the change brings in is a full scan's job.
        if proto.framework == layout.framework and proto not in chosen and any(
                names_setter(path, proto.setter) for path in touched
                if path in files and in_scope(proto, files[path].module)):
            raise NeedFullScan(f"{proto.name} appears in the change")
    touched_set = set(touched)
    dropped = []
    for proto in chosen:
        # The change removes the protocol when it touches every file that named its setter and
        # none of them names it any more (as the full scan would say: "not in this release").
        naming = record.get("mentions", {}).get(proto.name)
        if naming and touched_set.issuperset(naming) and not any(
                names_setter(path, proto.setter) for path in touched
                if path not in files or in_scope(proto, files[path].module)):
            dropped.append(proto)
    chosen = [p for p in chosen if p not in dropped]
    cache = summary_cache(options.cache_dir, options.use_cache)
    project = Project(sorted(files.values(), key=lambda f: f.path), cache, options.jobs)
    resolver = Resolver(project)

    by_path = {f.path: f for f in files.values()}
    base_paths = {path: module for module, path, _ in record["files"]}
    affected: dict[str, set[str]] = {p.name: set() for p in chosen}
    for key, deps in record["deps"].items():
        proto, entry = key.split("|", 1)
        if proto in affected and touched_set.intersection(deps):
            affected[proto].add(entry)
    # Entries registered by a touched module: re-read its registry variable (EntryClass).
    unregistered = {e for e, where in record["registered_by"].items() if touched_set.intersection(where)}
    refs: dict[str, ClassRef] = {}
    registered: dict[str, set[str]] = {}
    for proto in chosen:
        base_entries = {m["entry"] for m in record["scan"]["models"] if m["protocol"] == proto.name}
        affected[proto.name] |= unregistered & base_entries
        for path in sorted(touched_set):
            source = by_path.get(path)
            if source is None or not proto.is_entry_module(source.module):
                continue
            for ref in registered_in(project, resolver, proto, source.module):
                refs[ref.fullname] = ref
                registered.setdefault(ref.fullname, set()).add(path)
                affected[proto.name].add(ref.fullname)
    entries: dict[str, list[ClassRef]] = {}
    for proto in chosen:
        entries[proto.name] = []
        for entry in sorted(affected[proto.name]):
            if entry in unregistered and entry not in refs:
                continue  # no longer named by its module's registry variable
            entry_ref = refs.get(entry) or split_qualname(project, entry + ".x")
            if entry_ref is None or entry_ref.fullname != entry:
                continue  # its module is gone, and the entry class with it
            entries[proto.name].append(entry_ref)

    def is_model_file(path: str) -> bool:
        module = by_path[path].module if path in by_path else base_paths.get(path)
        return module is not None and any(p.is_entry_module(module) for p in chosen)

    def in_any_scope(path: str) -> bool:
        module = by_path[path].module if path in by_path else base_paths.get(path)
        return module is not None and any(in_scope(p, module) for p in chosen)

    runner_touched = any(p.endswith(".py") and in_any_scope(p) and not is_model_file(p) for p in touched_set)
    # The one pipeline, on the entries the change can reach; the runner is re-analysed
    # only when the change touches it (else the base's call sites stand for it).
    analysis = analyse(resolver, chosen, entries, runner=runner_touched,
                       known_sites=[call_site_from_json(s) for s in record["scan"].get("call_sites", [])],
                       model_classes={m["entry"] for m in record["scan"]["models"]} | set(refs))
    problems = [p for p in project.input_problems() if p.path in touched_set]
    for proto in dropped:  # every chain of a dropped protocol is gone: its base findings are fixed
        affected[proto.name] = {m["entry"] for m in record["scan"]["models"] if m["protocol"] == proto.name}
    if keep is not None:
        keep.update(project=project, resolver=resolver, registered=registered, unregistered=unregistered,
                    dropped=[p.name for p in dropped], protocols=chosen, reads=analysis.reads)
    findings = deduplicate(list(analysis.findings)) + [input_error_finding(p) for p in problems]
    return {"models": [model_to_json(m) for m in analysis.models],
            "call_sites": [call_site_to_json(s) for s in analysis.call_sites],
            "findings": [finding_to_json(f) for f in findings],
            "affected": {k: sorted(v) for k, v in affected.items()}, "runner": runner_touched,
            "dropped": sorted(p.name for p in dropped)}


def full_head(root: Path, record: dict, touched: list[str], options: Options) -> dict:
    """The exact path: a full scan of the working tree, every finding compared."""
    head = scan_with_dependencies(root, options)
    affected: dict[str, set[str]] = {}
    for key in set(head["deps"]) | set(record["deps"]):
        proto, entry = key.split("|", 1)
        affected.setdefault(proto, set()).add(entry)
    scan = head["scan"]
    findings = scan["findings"] + scan.pop("suppressed", [])
    return {"models": scan["models"], "call_sites": scan["call_sites"], "findings": findings,
            "affected": {k: sorted(v) for k, v in affected.items()}, "runner": True, "everything": True,
            "dropped": sorted(set(record["scan"].get("protocols", [])) - set(scan.get("protocols", [])))}
