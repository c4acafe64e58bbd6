"""Pre-merge lint: `tracer lint` and `tracer baseline` inside a git checkout of the framework.

Only what a change touches is re-traced, and only what it changes is reported:

1. touched files: `git diff --name-only` (working tree against HEAD, or with
   --base REF the branch `REF...HEAD` plus the working tree), untracked files too;
2. the base revision (HEAD, or the merge base with REF) is exported with
   `git archive` and scanned once; that record (scan JSON, code fingerprints of
   its findings, and for every entry class the files its chain, MRO and entry
   registration pass through) is cached by commit;
3. the reverse map file -> entry classes picks the chains a touched file can
   change (a base class, an inner model, a delegate); those are re-traced on the
   working tree, lazily, from the summary cache; a touched file outside the
   model folders re-runs the runner analysis;
4. findings are compared by (slug, protocol, entry, fingerprint), where the
   fingerprint hashes the enclosing def and the stripped source line, so a line
   moved by an unrelated edit is the same finding; what is left is filtered by
   `[tool.tracer]` excludes, inline `# tracer: ignore[...]` and the baseline.

A lint whose inputs (base commit, touched files' contents, options, baseline)
did not change since the last run is answered from a result cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tracer import __version__
from tracer.config import DEFAULT_BASELINE, LintConfig, is_excluded
from tracer.discover import UsageError, read_regular_bytes
from tracer.findings import SEVERITY_ORDER
from tracer.suppress import SourceLines, apply_suppressions

RECORD_VERSION = "4"
_MAX_READ = 4 * 1024 * 1024  # scanned files over 1 MiB are never parsed (project.MAX_FILE_BYTES)
_DEF = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+(\w+)")


# -- git ----------------------------------------------------------------------------------

# A checkout's own .git/config can name commands git runs on its own (an
# fsmonitor hook, an external diff, a pager): never from tracer. (Clean filters
# named in .gitattributes cannot be switched off this way; git refuses
# repositories owned by another user, see safe.directory.)
_SAFE_GIT = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=",
             "-c", "core.pager=cat", "-c", "core.sshCommand=false", "--no-pager")


def git(root: Path, *args: str, binary: bool = False):
    result = subprocess.run(["git", *_SAFE_GIT, *args], cwd=root, capture_output=True)
    if result.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout if binary else result.stdout.decode("utf-8", errors="replace")


def repo_root(start: str | Path = ".") -> Path:
    try:
        top = subprocess.run(["git", *_SAFE_GIT, "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, text=True)
    except FileNotFoundError:
        raise UsageError("tracer lint needs git on PATH") from None
    if top.returncode != 0:
        raise UsageError(f"{Path(start).resolve()}: not inside a git checkout (tracer lint compares against a git revision)")
    return Path(top.stdout.strip()).resolve()


def changed_files(root: Path, base_ref: str | None) -> tuple[str, list[str]]:
    """(base commit, touched paths relative to the repository root)."""
    if base_ref:
        try:
            base = git(root, "merge-base", base_ref, "HEAD").strip()
        except UsageError as exc:
            raise UsageError(f"{exc} (is {base_ref!r} fetched? a shallow CI clone needs the base history, "
                             "e.g. actions/checkout with fetch-depth: 0)") from None
        names = _names(git(root, "diff", "--name-only", "--no-renames", "-z", f"{base_ref}...HEAD"))
    else:
        try:
            base = git(root, "rev-parse", "--verify", "HEAD").strip()
        except UsageError:
            raise UsageError("the repository has no commit yet: nothing to compare against") from None
        names = set()
    names |= _names(git(root, "diff", "--name-only", "--no-renames", "-z", "HEAD"))
    names |= _names(git(root, "ls-files", "--others", "--exclude-standard", "-z"))
    return base, sorted(names)


def _names(output: str) -> set[str]:
    return {n for n in output.split("\0") if n}


# -- fingerprints -------------------------------------------------------------------------

def enclosing_def(lines: list[str], number: int) -> str:
    """Dotted name of the defs and classes around line ``number`` (1-based), innermost last."""
    if not 0 < number <= len(lines):
        return ""
    target = lines[number - 1]
    indent = len(target) - len(target.lstrip())
    names = []
    own = _DEF.match(target)
    if own:
        names.append(own.group(3))
    for text in reversed(lines[: number - 1]):
        stripped = text.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("@"):
            continue
        width = len(text) - len(text.lstrip())
        if width >= indent:
            continue
        match = _DEF.match(text)
        if match:
            names.append(match.group(3))
            indent = width
            if width == 0:
                break
    return ".".join(reversed(names))


def fingerprint(source: SourceLines, finding: dict) -> str:
    """Hash of the enclosing def and the stripped line: stable across unrelated line moves."""
    lines = source.lines(finding["file"]) if finding.get("file") else []
    line = lines[finding["line"] - 1].strip() if 0 < finding.get("line", 0) <= len(lines) else ""
    line = re.sub(r"#\s*tracer:\s*ignore(\[[^\]]*\])?", "", line).strip()
    text = "\n".join([finding.get("protocol") or "", enclosing_def(lines, finding.get("line", 0)), line])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def add_fingerprints(findings: list[dict], root: str | Path, source: SourceLines | None = None) -> None:
    source = source or SourceLines(root)
    for finding in findings:
        finding["fingerprint"] = fingerprint(source, finding)


def keys(finding: dict) -> list[tuple[str, str, str, str]]:
    """One (slug, protocol, entry, fingerprint) per affected entry (runner findings: entry "")."""
    entries = finding.get("entries") or ([finding["entry"]] if finding.get("entry") else [""])
    return [(finding["slug"], finding.get("protocol") or "", e, finding["fingerprint"]) for e in entries]


# -- the base record (one scan per commit) ------------------------------------------------

@dataclass(frozen=True)
class Options:
    protocols: tuple[str, ...]
    rules: tuple[str, ...]
    cache_dir: str | None
    use_cache: bool
    jobs: int

    def packs(self):
        from tracer.protocol import load_protocols

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
    from tracer.cache import default_cache_dir

    return (Path(options.cache_dir) if options.cache_dir else default_cache_dir()) / "lint"


def package_prefix(root: Path, options: Options) -> str:
    """Path of the framework's package inside the checkout ("python/sglang" or "sglang")."""
    from tracer.discover import detect_layout

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
        keep: dict = {}
        try:
            head = retrace(root, parent_record, changed, options, view=view, keep=keep)
        except _NeedFullScan:
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
    apply_suppressions(fresh, root, files=[p for p in changed if view.get(p)], source=source)
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
            if path in module_of and _in_scope(proto, module_of[path]) and view.get(path) \
                    and _mentions(Path(view[path]), proto.setter):
                naming.add(path)
        mentions[proto.name] = sorted(naming)
    return {
        "version": RECORD_VERSION, "scan": scan, "deps": deps,
        "registered_by": {e: sorted(w) for e, w in registered_by.items()},
        "files": [[f.module, f.path, f.is_package] for f in project.files],
        "entry_modules": sorted(m for m in project.by_module if any(p.is_entry_module(m) for p in keep["protocols"])),
        "mentions": mentions, "commit": commit, "derived_from": parent.get("commit"),
    }


def _export(root: Path, commit: str, prefix: str, target: Path) -> bool:
    """The package folder (and pyproject files, for the version) at ``commit`` into ``target``."""
    paths = [prefix] + [p for p in ("pyproject.toml", "python/pyproject.toml")
                        if git(root, "ls-tree", "--name-only", commit, "--", p).strip()]
    if not git(root, "ls-tree", "--name-only", commit, "--", prefix).strip():
        return False
    data = git(root, "archive", "--format=tar", commit, "--", *paths, binary=True)
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        with tarfile.open(fileobj=fh) as tar:
            members = [m for m in tar.getmembers() if (m.isfile() or m.isdir())
                       and not m.name.startswith("/") and ".." not in Path(m.name).parts]
            tar.extractall(target, members)
    return True


def _empty_record() -> dict:
    return {"version": RECORD_VERSION, "scan": {"findings": [], "models": [], "call_sites": [], "protocols": []},
            "deps": {}, "registered_by": {}, "files": [], "entry_modules": []}


def scan_with_dependencies(path: Path, options: Options) -> dict:
    """A full scan plus, per (protocol, entry), the files its result depends on."""
    from tracer.engine import result_to_json, scan

    context = scan(path, options.packs(), options.cache_dir, options.use_cache, options.jobs)
    data = result_to_json(context.result)
    project, resolver = context.project, context.resolver
    registered = _registrations(project, resolver, context.result.protocols)
    deps = {}
    for model in data["models"]:
        files = set(_model_files(project, resolver, model))
        files.update(registered.get(model["entry"], ()))
        deps[f"{model['protocol']}|{model['entry']}"] = sorted(files)
    apply_suppressions(data, path)
    add_fingerprints(data["findings"] + data["suppressed"], path)
    return {
        "version": RECORD_VERSION, "scan": data, "deps": deps,
        "registered_by": {e: sorted(f) for e, f in registered.items()},
        "files": [[f.module, f.path, f.is_package] for f in project.files],
        "entry_modules": sorted(m for m in project.by_module
                                if any(p.is_entry_module(m) for p in context.result.protocols)),
        # files naming each protocol's setter: a change that removes the last of them drops the protocol
        "mentions": {p.name: sorted(s.path for m, s in project.by_module.items()
                                    if _in_scope(p, m) and project.mentions(m, p.setter))
                     for p in context.result.protocols},
    }


def _registrations(project, resolver, protocols) -> dict[str, set[str]]:
    """entry class -> files whose registry variable (EntryClass) names it."""
    from tracer.resolve import ClassRef

    found: dict[str, set[str]] = {}
    for proto in protocols:
        for module in project.by_module:
            if not proto.is_entry_module(module):
                continue
            summary = project.summaries.get(module)
            if summary is None or getattr(summary, "error", None):
                continue
            for name, values, _ in summary.assignments:
                if name != proto.entry_variable:
                    continue
                for value in values:
                    ref = resolver.resolve_class(module, value)
                    if isinstance(ref, ClassRef):
                        found.setdefault(ref.fullname, set()).add(project.by_module[module].path)
    return found


def _split(project, qualname: str):
    """ClassRef of the class part of a hop qualname (module.Class[.member])."""
    from tracer.resolve import ClassRef

    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in project.by_module:
            rest = parts[cut:]
            return ClassRef(module, ".".join(rest[:1])) if rest else None
    return None


def _model_files(project, resolver, model: dict):
    yield model["file"]
    classes = [_split(project, model["entry"])]
    for hop in model["chain"]:
        for key in ("file", "call_file"):
            if hop.get(key):
                yield hop[key]
        classes.append(_split(project, hop["qualname"]))
    if model.get("state_owner"):
        classes.append(_split(project, model["state_owner"] + ".x"))
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


# -- the working tree: re-trace what the change can reach ---------------------------------

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
        return found is not None and _mentions(Path(found), word)

    from tracer.cache import SummaryCache, default_cache_dir
    from tracer.chains import ChainTracer
    from tracer.discover import SourceFile, detect_layout
    from tracer.project import Project
    from tracer.resolve import ClassRef, Resolver
    from tracer.runner import RunnerAnalysis

    packs = options.packs()
    layout = detect_layout(root, packs)
    chosen = [p for p in packs if p.name in set(record["scan"]["protocols"])]
    if not chosen or any(p.entry_kind != "module-variable" for p in chosen):
        raise _NeedFullScan("protocol without a module-level entry variable")
    prefix = str(root) + os.sep
    files = {path: SourceFile(module, path, view.get(path) or prefix + path, is_package)
             for module, path, is_package in record["files"] if view.get(path, "") is not None}
    package_dir = (layout.base / layout.package).resolve()
    for path in set(touched) | set(view):
        full = (root / path).resolve()
        if not path.endswith(".py") or not _within(full, package_dir):
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
                if path in files and _in_scope(proto, files[path].module)):
            raise _NeedFullScan(f"{proto.name} appears in the change")
    touched_set = set(touched)
    dropped = []
    for proto in chosen:
        # The change removes the protocol when it touches every file that named its setter and
        # none of them names it any more (as the full scan would say: "not in this release").
        naming = record.get("mentions", {}).get(proto.name)
        if naming is not None and touched_set.issuperset(naming) and not any(
                names_setter(path, proto.setter) for path in touched
                if path not in files or _in_scope(proto, files[path].module)):
            dropped.append(proto)
    chosen = [p for p in chosen if p not in dropped]
    cache = SummaryCache((Path(options.cache_dir) if options.cache_dir else default_cache_dir()) if options.use_cache else None)
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
            summary = project.module(source.module)
            if summary is None or getattr(summary, "error", None):
                continue
            for name, values, _ in summary.assignments:
                if name != proto.entry_variable:
                    continue
                for value in values:
                    ref = resolver.resolve_class(source.module, value)
                    if isinstance(ref, ClassRef):
                        refs[ref.fullname] = ref
                        registered.setdefault(ref.fullname, set()).add(path)
                        affected[proto.name].add(ref.fullname)
    models, findings = [], []
    for proto in chosen:
        tracer = ChainTracer(resolver, proto)
        for entry in sorted(affected[proto.name]):
            if entry in unregistered and entry not in refs:
                continue  # no longer named by its module's registry variable
            ref = refs.get(entry) or _split(project, entry + ".x")
            if ref is None or ref.fullname != entry:
                continue  # its module is gone, and the entry class with it
            result = tracer.trace(ref)
            models.append(result)
            findings.extend(result.findings)

    def is_model_file(path: str) -> bool:
        module = by_path[path].module if path in by_path else base_paths.get(path)
        return module is not None and any(p.is_entry_module(module) for p in chosen)

    def in_any_scope(path: str) -> bool:
        module = by_path[path].module if path in by_path else base_paths.get(path)
        return module is not None and any(_in_scope(p, module) for p in chosen)

    runner_touched = any(p.endswith(".py") and in_any_scope(p) and not is_model_file(p) for p in touched_set)
    call_sites = []
    if runner_touched:
        every_entry = {m["entry"] for m in record["scan"]["models"]} | set(refs)
        for proto in chosen:
            candidates = sorted(m for m in project.by_module if _in_scope(proto, m)
                                and project.mentions(m, proto.setter) and not proto.is_entry_module(m))
            sites, runner_findings = RunnerAnalysis(resolver, proto).analyse(candidates, every_entry)
            call_sites.extend(sites)
            findings.extend(runner_findings)
    # Findings that depend on how often the runner calls the setter (the sites of
    # this revision when the runner was re-analysed, else the base's).
    from types import SimpleNamespace

    from tracer.engine import stale_tag_findings, with_findings

    for proto in chosen:
        if runner_touched:
            proto_sites = [s for s in call_sites if s.protocol == proto.name]
        else:
            proto_sites = [SimpleNamespace(**s) for s in record["scan"].get("call_sites", [])
                           if s.get("protocol") == proto.name]
        stale = stale_tag_findings(proto, [m for m in models if m.protocol == proto.name], proto_sites)
        findings.extend(stale)
        models = [with_findings(m, [f for f in stale if f.entry == m.entry and f.protocol == m.protocol])
                  for m in models]
    problems = [p for p in project.input_problems() if p.path in touched_set]
    for proto in dropped:  # every chain of a dropped protocol is gone: its base findings are fixed
        affected[proto.name] = {m["entry"] for m in record["scan"]["models"] if m["protocol"] == proto.name}
    if keep is not None:
        keep.update(project=project, resolver=resolver, registered=registered, unregistered=unregistered,
                    dropped=[p.name for p in dropped], protocols=chosen)
    return _head_json(models, call_sites, findings, problems, affected, runner_touched)


class _NeedFullScan(Exception):
    pass


def _in_scope(proto, module: str) -> bool:
    """The pack's package scope (e.g. sglang.srt), as the scan applies it; no scope: everything."""
    test = getattr(proto, "in_scope", None)
    return test(module) if test is not None else True


def _mentions(path: Path, word: str) -> bool:
    # bounded, regular files only: a worktree link to /dev/zero or a FIFO must not hang lint
    data = read_regular_bytes(path, _MAX_READ)
    return data is not None and word.encode() in data


def _within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def _head_json(models, call_sites, findings, problems, affected, runner_touched) -> dict:
    from tracer.engine import (
        call_site_to_json, deduplicate, finding_to_json, input_error_finding, model_to_json,
    )

    deduplicated = deduplicate(list(findings)) + [input_error_finding(p) for p in problems]
    as_json = [finding_to_json(f) for f in deduplicated]
    model_json = [model_to_json(m) for m in models]
    sites = [call_site_to_json(s) for s in call_sites]
    return {"models": model_json, "call_sites": sites, "findings": as_json,
            "affected": {k: sorted(v) for k, v in affected.items()}, "runner": runner_touched}


def full_head(root: Path, record: dict, touched: list[str], options: Options) -> dict:
    """The exact path: a full scan of the working tree, every finding compared."""
    head = scan_with_dependencies(root, options)
    affected = {}
    for key in set(head["deps"]) | set(record["deps"]):
        proto, entry = key.split("|", 1)
        affected.setdefault(proto, set()).add(entry)
    scan = head["scan"]
    findings = scan["findings"] + scan.pop("suppressed", [])
    return {"models": scan["models"], "call_sites": scan["call_sites"], "findings": findings,
            "affected": {k: sorted(v) for k, v in affected.items()}, "runner": True, "everything": True}


# -- comparing ----------------------------------------------------------------------------

def lint(start: str | Path = ".", base_ref: str | None = None, config: LintConfig | None = None,
         options: Options | None = None, full: bool = False, use_baseline: bool = True, progress=None) -> dict:
    started = time.perf_counter()
    root = repo_root(start)
    config = config or LintConfig()
    options = options or Options(config.protocols, config.rules, None, True, 0)
    commit, touched = changed_files(root, base_ref)
    prefix = package_prefix(root, options)
    relevant = [p for p in touched if p == prefix or p.startswith(prefix + "/")]
    baseline_path = _baseline_path(root, config)
    baseline_bytes = baseline_path.read_bytes() if baseline_path and baseline_path.is_file() else b""
    result_key = _result_key(commit, relevant, root, options, config, baseline_bytes, full, use_baseline)
    cached = _cached_result(options, result_key)
    if cached is not None:
        cached["stats"]["seconds"] = round(time.perf_counter() - started, 3)
        cached["stats"]["result_cache"] = True
        return cached

    mode = "full" if full else "re-trace"
    if not relevant:
        result = _result(root, base_ref, commit, touched, relevant, [], [], [], [], [], {}, [], config)
        mode = "no change"
    else:
        record = base_record(root, commit, prefix, options, progress)
        try:
            head = full_head(root, record, relevant, options) if full else retrace(root, record, relevant, options)
        except _NeedFullScan as exc:
            mode = f"full ({exc})"
            head = full_head(root, record, relevant, options)
        except (UsageError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the exact path still answers; say why it was taken
            if os.environ.get("TRACER_DEBUG"):
                raise
            mode = f"full (re-trace failed: {type(exc).__name__}: {exc})"
            head = full_head(root, record, relevant, options)
        result = compare(root, record, head, relevant, config, baseline_bytes if use_baseline else b"")
        result = _result(root, base_ref, commit, touched, relevant, **result, config=config)
    result["stats"] = {"seconds": round(time.perf_counter() - started, 3), "result_cache": False, "mode": mode,
                       "touched": len(touched), "touched_in_package": len(relevant),
                       "entries_traced": sum(len(v) for v in result["affected"].values())}
    _store_result(options, result_key, result)
    return result


def compare(root: Path, record: dict, head: dict, touched: list[str], config: LintConfig, baseline_bytes: bytes) -> dict:
    head_findings = [f for f in head["findings"] if not is_excluded(f["file"], config.exclude)]
    probe = {"root": str(root), "findings": head_findings, "models": head["models"], "framework": {}}
    apply_suppressions(probe, root, files=[p for p in touched if (root / p).is_file()])
    kept, suppressed = probe["findings"], probe["suppressed"]
    add_fingerprints(kept + suppressed, root)

    everything = head.get("everything", False)
    affected = {(p, e) for p, entries in head["affected"].items() for e in entries}
    touched_set = set(touched)

    def in_scope(finding: dict, key) -> bool:
        if everything:
            return True
        slug, proto, entry, _ = key
        if entry:
            return (proto, entry) in affected
        if slug in ("input-error", "unused-suppression"):
            return finding["file"] in touched_set
        return head["runner"]

    base_all = record["scan"]["findings"] + record["scan"].get("suppressed", [])
    base_any = Counter(k for f in base_all for k in keys(f) if in_scope(f, k))
    head_keys = Counter(k for f in kept + suppressed for k in keys(f) if in_scope(f, k))
    baseline = _baseline_keys(baseline_bytes)

    new, baselined, unchanged = [], [], 0
    remaining = base_any.copy()
    for finding in kept:
        fresh = []
        for key in keys(finding):
            if not in_scope(finding, key):
                continue
            if remaining[key] > 0:
                remaining[key] -= 1
                unchanged += 1
                continue
            fresh.append(key)
        if not fresh:
            continue
        entries = [k[2] for k in fresh if k[2]]
        in_baseline = [k for k in fresh if baseline[k] > 0]
        for k in in_baseline:
            baseline[k] -= 1
        shown = dict(finding, entries=entries, entry=entries[0] if entries else finding.get("entry"))
        (baselined if len(in_baseline) == len(fresh) else new).append(shown)

    fixed = []
    left = head_keys.copy()
    for finding in record["scan"]["findings"]:
        gone = []
        for key in keys(finding):
            if not in_scope(finding, key) or is_excluded(finding["file"], config.exclude):
                continue
            if left[key] > 0:
                left[key] -= 1
                continue
            gone.append(key[2])
        if gone:
            fixed.append(dict(finding, entries=[e for e in gone if e], entry=(gone[0] or None)))
    models = head["models"]
    return {"new": new, "fixed": fixed, "suppressed": suppressed, "baselined": baselined,
            "unchanged": unchanged, "affected": head["affected"], "models": models,
            "call_sites": head["call_sites"] if head["runner"] else []}


def _result(root, base_ref, commit, touched, relevant, new, fixed, suppressed, baselined, models=(), affected=None,
            call_sites=(), config=None, unchanged=0) -> dict:
    config = config or LintConfig()
    return {
        "tool": {"name": "tracer", "version": __version__, "command": "lint"},
        "root": str(root), "base": {"ref": base_ref or "HEAD", "commit": commit},
        "touched": list(touched), "touched_in_package": list(relevant),
        "affected": affected or {}, "fail_on": config.fail_on,
        "findings": sorted(new, key=_order), "fixed": sorted(fixed, key=_order),
        "suppressed": list(suppressed), "baselined": list(baselined), "unchanged": unchanged,
        "models": list(models), "call_sites": list(call_sites), "protocols": sorted(affected or {}),
    }


def _order(f: dict):
    return (f["file"], f["line"], f["col"], f["slug"])


# -- baseline -----------------------------------------------------------------------------

def _baseline_path(root: Path, config: LintConfig) -> Path | None:
    if config.baseline:
        return Path(config.baseline)
    return root / DEFAULT_BASELINE


def _baseline_keys(data: bytes) -> Counter:
    if not data:
        return Counter()
    try:
        doc = json.loads(data)
        return Counter((e["slug"], e.get("protocol") or "", e.get("entry") or "", e["fingerprint"])
                       for e in doc["findings"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"baseline file is not a tracer baseline: {exc}") from None


def write_baseline(start: str | Path, out: str | Path | None, config: LintConfig, options: Options) -> tuple[Path, int]:
    """Every finding of the working tree (after excludes and inline suppressions), keyed for lint."""
    root = repo_root(start)
    from tracer.engine import result_to_json, scan

    context = scan(root, options.packs(), options.cache_dir, options.use_cache, options.jobs)
    data = result_to_json(context.result)
    data["findings"] = [f for f in data["findings"] if not is_excluded(f["file"], config.exclude)]
    apply_suppressions(data, root)
    add_fingerprints(data["findings"], root)
    entries = []
    for finding in data["findings"]:
        for slug, proto, entry, fp in keys(finding):
            entries.append({"slug": slug, "protocol": proto, "entry": entry, "fingerprint": fp,
                            "file": finding["file"], "line": finding["line"], "message": finding["message"]})
    entries.sort(key=lambda e: (e["file"], e["slug"], e["entry"], e["fingerprint"]))
    path = Path(out) if out else (_baseline_path(root, config) or root / DEFAULT_BASELINE)
    doc = {"tool": "tracer", "version": 1,
           "comment": "Accepted findings: tracer lint reports only findings not listed here. "
                      "Keyed on slug, protocol, entry and a fingerprint of the enclosing def and source line; "
                      "file and line are for readers.",
           "findings": entries}
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path, len(entries)


# -- result cache -------------------------------------------------------------------------

def _result_key(commit, relevant, root, options, config, baseline_bytes, full, use_baseline) -> str:
    digest = hashlib.sha256()
    for part in (__version__, RECORD_VERSION, commit, options.digest(), repr(sorted(config.exclude)),
                 str(full), str(use_baseline), config.fail_on):
        digest.update(part.encode() + b"\0")
    digest.update(hashlib.sha256(baseline_bytes).digest())
    for path in relevant:
        digest.update(path.encode() + b"\0")
        data = read_regular_bytes(root / path, _MAX_READ, root)  # never /dev/zero through a link (OOM)
        digest.update(hashlib.sha256(data).digest() if data is not None else b"<absent>")
    return digest.hexdigest()


def _cached_result(options: Options, key: str) -> dict | None:
    directory = lint_cache_dir(options)
    if directory is None:
        return None
    try:
        return json.loads((directory / f"result-{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _store_result(options: Options, key: str, result: dict) -> None:
    directory = lint_cache_dir(options)
    if directory is None:
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(result, fh, separators=(",", ":"))
        os.replace(name, directory / f"result-{key}.json")
    except OSError:
        pass


# -- output -------------------------------------------------------------------------------

def format_lint_text(result: dict) -> str:
    lines = []
    show_info = result.get("fail_on") == "info"
    hidden = 0
    for f in result["findings"]:
        if f["severity"] == "info" and not show_info and f["slug"] != "unused-suppression":
            hidden += 1
            continue
        lines.append(f"{f['file']}:{f['line']}:{f['col'] + 1}: {f['slug']} [{f['severity']}] {f['message']}")
        if len(f.get("entries") or []) > 1:
            lines.append(f"    affects {len(f['entries'])} entry classes: "
                         + ", ".join(e.rsplit('.', 1)[-1] for e in f["entries"][:6])
                         + (" ..." if len(f["entries"]) > 6 else ""))
        lines.append(f"    hint: {f['hint']}")
    if result["fixed"]:
        lines.append("fixed: " + "; ".join(
            f"{f['slug']} {f['file']}:{f['line']}"
            + (f" ({', '.join(e.rsplit('.', 1)[-1] for e in f['entries'][:3])}{' ...' if len(f['entries']) > 3 else ''})"
               if f.get("entries") else "")
            for f in result["fixed"]))
    lines.append(summary_line(result))
    if hidden:
        lines.append(f"({hidden} new info findings, e.g. missing-setter, not listed: --fail-on info or --format json shows them)")
    return "\n".join(lines) + "\n"


def summary_line(result: dict) -> str:
    by_sev = Counter(f["severity"] for f in result["findings"])
    new = ", ".join(f"{by_sev[s]} {s}" for s in ("error", "warning", "info") if by_sev[s]) or "none"
    stats = result.get("stats", {})
    traced = sum(len(v) for v in result.get("affected", {}).values())
    extra = []
    if result.get("suppressed"):
        extra.append(f"{len(result['suppressed'])} suppressed inline")
    if result.get("baselined"):
        extra.append(f"{len(result['baselined'])} in the baseline")
    return (f"tracer lint: new findings: {new}; fixed: {len(result['fixed'])}; "
            f"unchanged: {result.get('unchanged', 0)}{'; ' + ', '.join(extra) if extra else ''}. "
            f"{len(result.get('touched_in_package', []))} touched files in the package, {traced} chains re-traced, "
            f"against {result['base']['ref']} ({result['base']['commit'][:10]}), in {stats.get('seconds', 0)} s"
            f"{' (cached result)' if stats.get('result_cache') else ''}.")


def exit_code(result: dict, fail_on: str) -> int:
    if fail_on == "never":
        return 0
    threshold = SEVERITY_ORDER[fail_on]
    return 1 if any(SEVERITY_ORDER[f["severity"]] >= threshold for f in result["findings"]) else 0


# -- commands -----------------------------------------------------------------------------

def _commands():
    import click

    def common(func):
        for option in reversed([
            click.option("-C", "--repo", "start", type=click.Path(file_okay=False), default=".",
                         help="Run as if started in this folder (a git checkout of the framework)."),
            click.option("--protocol", "protocols", multiple=True, help="Protocol pack (repeatable; overrides [tool.tracer] protocols)."),
            click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False), help="Extra protocol pack (TOML)."),
            click.option("--cache-dir", type=click.Path(file_okay=False), help="Summary and lint cache folder."),
            click.option("--no-cache", is_flag=True, help="Do not read or write any cache."),
            click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Parallel parser processes."),
        ]):
            func = option(func)
        return func

    def settings(start, protocols, rule_files, cache_dir, no_cache, jobs, fail_on=None, baseline=None):
        from tracer.config import load_config, merge

        root = repo_root(start)
        config = merge(load_config(root), protocols, rule_files, fail_on, (), baseline)
        for note in config.notes:
            click.echo(f"tracer: {note}", err=True)
        options = Options(config.protocols, config.rules, cache_dir, not no_cache, jobs or 0)
        return root, config, options

    @click.command("lint")
    @common
    @click.option("--base", "base_ref", help="Compare the branch (REF...HEAD) and the working tree against REF's merge base; default: the working tree against HEAD.")
    @click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True)
    @click.option("--baseline", type=click.Path(dir_okay=False), help="Baseline file (default [tool.tracer] baseline, else .tracer-baseline.json when present).")
    @click.option("--no-baseline", is_flag=True, help="Report findings even when the baseline lists them.")
    @click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None, help="Lowest severity of a new finding that makes the exit status 1 (default [tool.tracer] fail-on, else error).")
    @click.option("--full", is_flag=True, help="Scan the whole working tree instead of re-tracing the affected chains (slower, exact).")
    @click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Write to a file instead of standard output.")
    def lint_command(start, protocols, rule_files, cache_dir, no_cache, jobs, base_ref, fmt, baseline, no_baseline,
                     fail_on, full, out_file):
        """Report the capture-chain findings a change introduces (and those it fixes), pre-merge."""
        import sys

        from tracer import output

        root, config, options = settings(start, protocols, rule_files, cache_dir, no_cache, jobs, fail_on, baseline)
        result = lint(root, base_ref, config, options, full=full, use_baseline=not no_baseline,
                      progress=lambda message: click.echo(message, err=True))
        if fmt == "json":
            text = json.dumps(result, indent=2) + "\n"
        elif fmt == "sarif":
            text = output.format_sarif(result)
        elif fmt == "github":
            text = output.format_github(result)
            text += f"::notice title=tracer lint::{summary_line(result)}\n"
        else:
            text = format_lint_text(result)
        if out_file:
            Path(out_file).write_text(text, encoding="utf-8")
            click.echo(summary_line(result), err=True)
        else:
            click.echo(text, nl=False)
        sys.exit(exit_code(result, config.fail_on))

    @click.command("baseline")
    @common
    @click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Baseline file to write (default [tool.tracer] baseline, else .tracer-baseline.json at the repository root).")
    def baseline_command(start, protocols, rule_files, cache_dir, no_cache, jobs, out_file):
        """Accept every current finding: write them to the baseline file tracer lint reads."""
        root, config, options = settings(start, protocols, rule_files, cache_dir, no_cache, jobs)
        path, count = write_baseline(root, out_file, config, options)
        click.echo(f"wrote {count} accepted findings to {path}")

    return lint_command, baseline_command
