"""The base record of a commit: read from the lint cache, derived from the parent's
record (re-tracing only what the commit changed), or scanned from a `git archive`
export once."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from tracer.lint.fingerprint import add_fingerprints
from tracer.lint.git import SAFE_GIT, export_tree, git, tree_names
from tracer.lint.records import (
    MAX_RECORD_BYTES,
    RECORD_VERSION,
    NeedFullScan,
    Options,
    empty_record,
    in_scope,
    lint_cache_dir,
    mentions_word,
    model_files,
    read_paths,
    scan_with_dependencies,
)
from tracer.lint.retrace import retrace
from tracer.lint.suppress import SourceLines, apply_to_json
from tracer.model.errors import UsageError
from tracer.present.lint_json import record_bytes, record_from_bytes
from tracer.safeio.auth import load_entry, store_entry


def base_record(root: Path, commit: str, prefix: str, options: Options, progress=None) -> dict:
    """Scan of the base revision with dependencies and fingerprints; cached by commit."""
    directory = lint_cache_dir(options)
    path = directory / f"base-{commit}-{options.digest()}.json" if directory else None
    if path is not None and directory is not None:
        cached = _read_record(path, directory)
        if cached is not None:
            return cached
    record = _derive_from_parent(root, commit, prefix, options, directory) if directory else None
    if record is not None and path is not None:
        _write_record(path, record)
        return record
    if progress is not None:
        progress(f"tracer lint: scanning the base revision {commit[:10]} once (kept in the cache for later runs)")
    tmp = Path(tempfile.mkdtemp(prefix="tracer-base-"))
    try:
        exported = export_tree(root, commit, prefix, tmp)
        record = scan_with_dependencies(tmp, options) if exported else empty_record()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    record["commit"] = commit
    if path is not None:
        _write_record(path, record)
    return record


def _read_record(path: Path, directory: Path) -> dict | None:
    """A record this user's tracer wrote (authenticated, read by the reading rule), or None."""
    return record_from_bytes(load_entry(path, directory, MAX_RECORD_BYTES))


def _write_record(path: Path, record: dict) -> None:
    """Authenticated, temp + rename; a cache that cannot be written only costs speed."""
    store_entry(path, path.parent, record_bytes(record))


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
    parent_record = _read_record(directory / f"base-{parent}-{options.digest()}.json", directory)
    if parent_record is None:
        return None
    if parent_record.get("version") != RECORD_VERSION or not parent_record.get("files"):
        return None
    under = prefix + "/"
    changed = sorted(p for p in tree_names(git(root, "diff", "--name-only", "--no-renames", "-z", parent, commit))
                     if p.startswith(under))
    if len(changed) > MAX_DERIVED_CHANGES:
        return None
    differ = {p for p in tree_names(git(root, "diff", "--name-only", "--no-renames", "-z", commit))
              | tree_names(git(root, "ls-files", "--others", "--exclude-standard", "-z")) if p.startswith(under)}
    tmp = Path(tempfile.mkdtemp(prefix="tracer-view-"))
    try:
        view: dict[str, str | None] = {}
        for path in sorted(set(changed) | differ):
            if not path.endswith(".py"):
                continue
            blob = subprocess.run(["git", *SAFE_GIT, "cat-file", "blob", f"{commit}:{path}"], cwd=root,
                                  capture_output=True)
            if blob.returncode != 0:
                view[path] = None
                continue
            target = tmp / "view" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
            view[path] = str(target)
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
        key = f"{model['protocol']}|{model['entry']}"
        files = set(model_files(project, resolver, model)) | registered_by.get(model["entry"], set())
        deps[key] = sorted(files | set(read_paths(project, keep.get("reads", {}).get(key, ()))))
    module_of = {f.path: f.module for f in project.files}
    mentions = {}
    for proto in keep["protocols"]:
        naming = set(parent.get("mentions", {}).get(proto.name, [])) - changed_set
        for path in changed:
            seen = view.get(path)
            if path in module_of and in_scope(proto, module_of[path]) and seen \
                    and mentions_word(Path(seen), proto.setter):
                naming.add(path)
        mentions[proto.name] = sorted(naming)
    return {
        "version": RECORD_VERSION, "scan": scan, "deps": deps,
        "registered_by": {e: sorted(w) for e, w in registered_by.items()},
        "files": [[f.module, f.path, f.is_package] for f in project.files],
        "entry_modules": sorted(m for m in project.by_module if any(p.is_entry_module(m) for p in keep["protocols"])),
        "mentions": mentions, "commit": commit, "derived_from": parent.get("commit"),
    }
