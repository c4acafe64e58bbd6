"""The scan pipeline: discover -> index -> resolve -> chains / runner -> findings.

`scan()` returns plain data (ScanResult); `scan_to_json()` gives the JSON
interface documented in docs/scan-json.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from tracer import __version__
from tracer.cache import SummaryCache, default_cache_dir, entry_key
from tracer.chains import ChainTracer, ModelResult
from tracer.discover import Layout, UsageError, detect_layout, list_sources
from tracer.findings import RULES, Finding
from tracer.project import InputProblem, Project
from tracer.protocol import Protocol, load_protocols
from tracer.registry import read_registry
from tracer.resolve import ClassRef, Resolver
from tracer.runner import CallSite, RunnerAnalysis


@dataclass(frozen=True)
class ScanResult:
    layout: Layout
    protocols: tuple[Protocol, ...]
    models: tuple[ModelResult, ...]
    call_sites: tuple[CallSite, ...]
    findings: tuple[Finding, ...]
    input_errors: tuple[InputProblem, ...]
    stats: dict
    absent_protocols: tuple[str, ...] = ()  # packs whose setter this release never mentions


@dataclass(frozen=True)
class ScanContext:
    """What later stages (graph, explain, report) may reuse from a scan."""

    project: Project
    resolver: Resolver
    result: ScanResult


def scan(path: str | Path, protocols: list[Protocol] | None = None, cache_dir: str | Path | None = None,
         use_cache: bool = True, jobs: int = 0) -> ScanContext:
    started = time.perf_counter()
    all_protocols = protocols or load_protocols()
    layout = detect_layout(path, all_protocols)
    chosen = [p for p in all_protocols if p.framework == layout.framework]
    files, link_problems = list_sources(layout)
    cache = SummaryCache((Path(cache_dir) if cache_dir else default_cache_dir()) if use_cache else None)
    project = Project(files, cache, jobs)
    resolver = Resolver(project)

    # Lazy indexing: outlines (where definitions are) for the entry modules and
    # the modules that mention a protocol name; method bodies are parsed one
    # at a time, only when a chain or the runner walk needs them.
    tokens = {t for p in chosen for t in p.tokens}
    requests: dict[str, str] = {}
    in_scope = [m for m in sorted(project.by_module) if any(p.in_scope(m) for p in chosen)]
    for module in in_scope:
        source = project.by_module[module]
        data = project.data(source.module)
        mentions = data is None or any(t.encode() in data for t in tokens)
        if mentions or any(p.is_entry_module(source.module) for p in chosen):
            requests[source.module] = "outline"
    project.load(requests)
    # A protocol whose setter no file mentions is not part of this release.
    absent = [p.name for p in chosen if not any(project.mentions(m, p.setter) for m in in_scope)]
    chosen = [p for p in chosen if p.name not in absent] or chosen[:1]
    absent = [name for name in absent if name not in {p.name for p in chosen}]

    entries = _entry_classes(project, resolver, chosen)
    models: list[ModelResult] = []
    findings: list[Finding] = []
    call_sites: list[CallSite] = []
    model_classes = {ref.fullname for refs in entries.values() for ref in refs}
    for proto in chosen:
        tracer = ChainTracer(resolver, proto)
        for ref in entries[proto.name]:
            result = tracer.trace(ref)
            models.append(result)
            findings.extend(result.findings)
        candidates = sorted(
            m for m in in_scope
            if proto.in_scope(m) and project.mentions(m, proto.setter) and not proto.is_entry_module(m)
        )
        sites, runner_findings = RunnerAnalysis(resolver, proto).analyse(candidates, model_classes)
        call_sites.extend(sites)
        findings.extend(runner_findings)
        stale = stale_tag_findings(proto, [m for m in models if m.protocol == proto.name], sites)
        findings.extend(stale)
        models = [with_findings(m, [f for f in stale if f.entry == m.entry and f.protocol == m.protocol])
                  for m in models]

    problems = project.input_problems() + [InputProblem(p, 1, why) for p, why in link_problems]
    findings.extend(input_error_finding(problem) for problem in problems)
    result = ScanResult(
        layout=layout, protocols=tuple(chosen), models=tuple(models), call_sites=tuple(call_sites),
        findings=tuple(deduplicate(findings)), input_errors=tuple(sorted(problems, key=lambda p: (p.path, p.line))),
        stats={
            "files_total": len(files),
            "files_parsed": project.parsed_full,
            "files_outlined": project.parsed_outline,
            "functions_parsed": project.parsed_functions,
            "cache_hits": cache.hits,
            "seconds": round(time.perf_counter() - started, 3),
        },
        absent_protocols=tuple(absent),
    )
    return ScanContext(project, resolver, result)


def with_findings(model: ModelResult, extra: list[Finding]) -> ModelResult:
    """A model result with findings found after its chain was traced (runner-dependent)."""
    if not extra:
        return model
    verdict, reason = model.verdict, model.reason
    errors = [f for f in extra if f.severity == "error"]
    if errors and verdict in ("ok", "unknown"):
        verdict, reason = "broken", errors[0].message
    return dataclasses.replace(model, verdict=verdict, reason=reason,
                               findings=tuple(sorted(set(model.findings) | set(extra), key=Finding.sort_key)))


def stale_tag_findings(proto: Protocol, models: list[ModelResult], sites: list) -> list[Finding]:
    """Per-layer tags that are never cleared matter when the runner calls the setter
    more than once: the tags of every call add up."""
    if len(sites) < 2:
        return []
    calls = ", ".join(f"{s.file}:{s.line}" + ("" if s.passes_ids else " (no ids)") for s in sites)
    found = []
    for model in models:
        for file, line, col, setter in model.tags_without_clear:
            severity = "info" if model.draft else RULES["stale-layer-markers"].severity
            found.append(Finding(
                "stale-layer-markers", severity, proto.name, model.entry, file, line, col,
                f"{setter.rsplit('.', 2)[-2]}.{setter.rsplit('.', 1)[-1]} tags the chosen layers but never clears "
                f"earlier tags, and the runner calls {proto.setter} {len(sites)} times ({calls}): the loop "
                "captures the union of the layer lists",
                "Clear every layer's tag before setting the new ones.",
                tuple(h.qualname for h in model.chain)))
    return found


def _entry_classes(project: Project, resolver: Resolver, protocols: list[Protocol]) -> dict[str, list[ClassRef]]:
    """Entry classes per protocol, from the module-level registry variable."""
    entries: dict[str, list[ClassRef]] = {}
    for proto in protocols:
        found: dict[str, ClassRef] = {}
        if proto.entry_kind == "registry-dict":
            entries[proto.name] = _registry_classes(project, resolver, proto)
            continue
        for module in sorted(project.by_module):
            if not proto.is_entry_module(module):
                continue
            summary = project.summaries.get(module)
            if summary is None or summary.error:
                continue
            for name, values, _ in summary.assignments:
                if name != proto.entry_variable:
                    continue
                for value in values:
                    resolved = resolver.resolve_class(module, value)
                    if isinstance(resolved, ClassRef):
                        found.setdefault(resolved.fullname, resolved)
        entries[proto.name] = sorted(found.values(), key=lambda r: r.fullname)
    return entries


def _registry_classes(project: Project, resolver: Resolver, proto: Protocol) -> list[ClassRef]:
    """Entry classes named by a registry dict literal; the architecture -> class map is
    also handed to the resolver for factories that build a class from its architecture."""
    data = project.data(proto.registry_module)
    if data is None:
        return []
    table = read_registry(data.decode("utf-8", errors="replace"), proto.registry_variables, proto.registry_package)
    by_architecture: dict[str, ClassRef] = {}
    for item in table:
        if item.module in project.by_module:
            resolved = resolver.resolve_class(item.module, item.class_name)
            if isinstance(resolved, ClassRef):
                by_architecture[item.architecture] = resolved
    for factory in proto.registry_factories:
        resolver.registry_factories[factory] = (proto.registry_factory_keyword, by_architecture)
    resolver.registry_class_keywords.update(proto.registry_factory_class_keywords)
    return sorted(set(by_architecture.values()), key=lambda r: r.fullname)


def deduplicate(findings: list[Finding]) -> list[Finding]:
    """One finding per (slug, protocol, place); every affected entry is listed."""
    merged: dict[tuple, Finding] = {}
    entries: dict[tuple, list[str]] = {}
    for f in sorted(findings, key=Finding.sort_key):
        key = (f.slug, f.protocol, f.file, f.line, f.col, f.message)
        if key not in merged:
            merged[key] = f
            entries[key] = []
        if f.entry and f.entry not in entries[key]:
            entries[key].append(f.entry)
    return [dataclasses.replace(f, entries=tuple(entries[k])) for k, f in merged.items()]


# -- JSON ----------------------------------------------------------------------------------

def result_to_json(result: ScanResult) -> dict:
    layout = result.layout
    return {
        "tool": {"name": "tracer", "version": __version__},
        "root": str(layout.scan_root),
        "framework": {"name": layout.framework, "version": layout.version, "package_root": layout.package},
        "protocols": [p.name for p in result.protocols],
        "protocols_absent": list(result.absent_protocols),
        "models": [model_to_json(m) for m in result.models],
        "call_sites": [call_site_to_json(s) for s in result.call_sites],
        "findings": [finding_to_json(f) for f in result.findings],
        "input_errors": [{"file": p.path, "line": p.line, "reason": p.reason} for p in result.input_errors],
        "stats": dict(result.stats),
    }


def input_error_finding(problem: InputProblem) -> Finding:
    return Finding("input-error", RULES["input-error"].severity, "", None, problem.path, problem.line, 0,
                   problem.reason, "Fix the file or exclude it; other results stand.")


def finding_to_json(f: Finding) -> dict:
    return {"slug": f.slug, "severity": f.severity, "protocol": f.protocol, "entry": f.entry,
            "entries": list(f.entries), "file": f.file, "line": f.line, "col": f.col,
            "message": f.message, "hint": f.hint, "chain": list(f.chain)}


def model_to_json(m: ModelResult) -> dict:
    return {
        "entry": m.entry, "file": m.file, "line": m.line, "protocol": m.protocol,
        "verdict": m.verdict, "reason": m.reason,
        "chain": [hop_to_json(h) for h in m.chain],
        "state_owner": m.state_owner, "state_attribute": m.state_attribute,
        "findings": sorted({f.slug for f in m.findings}),
        "draft": m.draft,
    }


def call_site_to_json(s: CallSite) -> dict:
    return {"protocol": s.protocol, "caller": s.caller, "file": s.file, "line": s.line,
            "passes_ids": s.passes_ids, "before_graph_capture": s.before_graph_capture, "order": s.order}


def hop_to_json(hop) -> dict:
    data = {"kind": hop.kind, "qualname": hop.qualname, "file": hop.file, "line": hop.line,
            "resolved_by": hop.resolved_by}
    if hop.call_line:
        data.update(call_file=hop.call_file, call_line=hop.call_line, passes_ids=hop.passes_ids)
    if hop.reason:
        data["reason"] = hop.reason
    return data


def scan_json_memoised(path: str | Path, packs: list[Protocol] | None, cache_dir=None, use_cache: bool = True,
                       jobs: int = 0) -> dict:
    """The scan JSON, answered from a whole-result cache when no file in the
    protocols' scope changed (same paths, sizes and modification times, same
    packs, same tracer) -- the rescan a user makes most often. Anything else
    runs the scan (which still reuses per-method summaries)."""
    started = time.perf_counter()
    all_protocols = packs or load_protocols()
    if not use_cache:
        return result_to_json(scan(path, all_protocols, cache_dir, False, jobs).result)
    cache = SummaryCache(Path(cache_dir) if cache_dir else default_cache_dir())
    layout = detect_layout(path, all_protocols)
    chosen = [p for p in all_protocols if p.framework == layout.framework]
    files, _ = list_sources(layout)
    digest = hashlib.sha256()
    digest.update(str(layout.scan_root).encode())
    # tracer's own code is part of the answer: a changed tracer must not reuse old results
    for own in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        st = own.stat()
        digest.update(f"{own.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for proto in chosen:
        digest.update(repr(proto).encode())
    for source in files:
        if not any(p.in_scope(source.module) for p in chosen):
            continue
        try:
            st = os.stat(source.abspath)
        except OSError:
            digest.update(f"{source.path}:missing".encode())
            continue
        digest.update(f"{source.path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    key = entry_key(digest.digest(), "", "", "scan-result")
    stored = cache.get_json(key)
    if isinstance(stored, dict) and stored.get("tool", {}).get("version") == __version__ and "models" in stored:
        stored["stats"] = dict(stored.get("stats", {}), seconds=round(time.perf_counter() - started, 3),
                               result_cache=True)
        return stored
    data = result_to_json(scan(path, all_protocols, cache_dir, True, jobs).result)
    cache.put_json(key, data)
    return data


def scan_to_json(path: str, protocols: list[str] | None = None, cache_dir=None, use_cache: bool = True,
                 jobs: int = 0) -> dict:
    packs = load_protocols(protocols) if protocols else None
    return result_to_json(scan(path, packs, cache_dir, use_cache, jobs).result)


__all__ = ["scan", "scan_to_json", "result_to_json", "ScanResult", "ScanContext", "UsageError"]
