"""The one pipeline: discover -> index -> resolve -> chains / runner -> findings.

``scan`` traces every entry class of a tree; ``lint`` calls ``analyse`` with the
entries a change can reach (and the base's runner call sites when the runner was
not touched). Both return the same typed results (tracer.model.results).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tracer import __version__
from tracer.analysis.branches import BranchCheck, with_branch_findings
from tracer.analysis.chain_cache import ChainMemo, memo_key
from tracer.analysis.chains import ChainTracer
from tracer.analysis.entries import Aliases, Alternatives, entry_classes, registry_drafts
from tracer.analysis.graph_capture import graph_capture, with_graph_capture
from tracer.analysis.patches import patch_sites, with_patches
from tracer.analysis.registrations import source_findings
from tracer.analysis.runner import RunnerAnalysis
from tracer.analysis.runner_fallbacks import runner_fallback_findings
from tracer.checks import finding, is_error
from tracer.effective.probe import probe_shadowed
from tracer.effective.sources import Sources
from tracer.index.discover import chosen_protocols, detect_layout, list_plugin_sources, list_sources
from tracer.index.gcpause import paused_gc
from tracer.index.project import Project
from tracer.model.errors import BodyUnreadable, UsageError
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.results import Alternative, CallSite, Framework, InputProblem, ModelResult, ScanResult, ScanStats
from tracer.model.tree import Layout
from tracer.resolve.bindings import Binding
from tracer.resolve.resolver import ClassRef, Resolver
from tracer.resolve.tree import open_project, summary_cache


@dataclass(frozen=True)
class ScanContext:
    """What later stages (graph, explain, report, lint) may reuse from a scan."""

    layout: Layout
    protocols: tuple[Protocol, ...]
    project: Project
    resolver: Resolver
    result: ScanResult
    reads: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # "protocol|entry" -> modules


@dataclass(frozen=True)
class Analysis:
    models: tuple[ModelResult, ...]
    call_sites: tuple[CallSite, ...]
    findings: tuple[Finding, ...]
    # "protocol|entry" -> the modules its chain read (lint's dependencies: the chain memo's record)
    reads: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


def runner_candidates(project: Project, proto: Protocol) -> list[str]:
    """Modules outside the entry modules that call the protocol's setter (none where the ids
    travel on the config: the builders are the runner's part, read by the chain)."""
    if proto.config_attribute or proto.argument_parameter:
        return []
    return sorted(m for m in project.by_module
                  if proto.in_scope(m) and project.mentions(m, proto.setter) and not proto.is_entry_module(m))


def analyse(resolver: Resolver, protocols: Sequence[Protocol], entries: Mapping[str, Sequence[ClassRef]],
            *, runner: bool = True, known_sites: Sequence[CallSite] = (),
            model_classes: set[str] | None = None, alternatives: Alternatives | None = None,
            memo: ChainMemo | None = None, aliases: Aliases | None = None) -> Analysis:
    """Trace ``entries`` (protocol -> entry classes). With ``runner`` the setter's call
    sites outside the models are analysed too; without, ``known_sites`` (the base's)
    stand for them where a finding depends on how often the runner calls the setter.
    ``memo``: earlier runs' chain results, reused where no module they read changed."""
    memo = memo or ChainMemo(resolver.project, None)
    reads: dict[str, tuple[str, ...]] = {}
    models: list[ModelResult] = []
    findings: list[Finding] = []
    call_sites: list[CallSite] = []
    every_model = model_classes if model_classes is not None else {
        ref.fullname for refs in entries.values() for ref in refs}
    for proto in protocols:
        with resolver.project.reads.record() as setup:  # what the tracer reads up front (a config
            drafts = frozenset(registry_drafts(resolver, proto))  # protocol's builders): every chain's too
            tracer = ChainTracer(resolver, proto, drafts)
        branches = BranchCheck(resolver.project, proto)

        def traced_chain(ref: ClassRef, alias: tuple[str, list[Binding]] | None = None) -> ModelResult:
            registered, bindings = alias or (alternatives or {}).get(ref.fullname, ("", []))
            name = f"{proto.name} {ref.fullname} {registered} {bindings!r} {ref.fullname in drafts}"

            def trace() -> ModelResult:
                resolver.project.reads.touch_all(setup)
                model = with_alternatives(tracer, tracer.trace(ref), registered, bindings)
                return with_branch_findings(branches, renamed(model, registered) if alias else model)
            model = memo.get(name, trace, ModelResult)
            reads[f"{proto.name}|{model.entry}"] = memo.modules_read(name)
            return model
        traced = [traced_chain(ref) for ref in entries.get(proto.name, ())]
        traced += [traced_chain(ref, alias) for ref in entries.get(proto.name, ())
                   for alias in (aliases or {}).get(ref.fullname, ())]
        if runner:
            candidates = runner_candidates(resolver.project, proto)

            def walk(candidates: list[str] = candidates) -> tuple[tuple[CallSite, ...], tuple[Finding, ...]]:
                sites, runner_findings = RunnerAnalysis(resolver, proto).analyse(candidates, every_model)
                return tuple(sites), (tuple(runner_findings) + tuple(runner_fallback_findings(resolver.project, proto))
                                      + tuple(source_findings(resolver, proto)))
            setting = hashlib.sha256(repr((candidates, sorted(every_model))).encode()).hexdigest()[:20]
            sites, runner_findings = memo.get(f"{proto.name} runner {setting}", walk, tuple)
            call_sites.extend(sites)
            findings.extend(runner_findings)
        else:
            sites, runner_findings = tuple(s for s in known_sites if s.protocol == proto.name), ()
        graphs = graph_capture(proto, sites, runner_findings)
        stale = stale_tag_findings(proto, traced, sites)
        findings.extend(stale)
        patches = patch_sites(resolver.project, proto)
        for model in traced:
            model = with_patches(resolver, proto, model, patches)
            model = as_draft_head(with_findings(model, [f for f in stale if f.entry == model.entry]))
            model = with_graph_capture(model, graphs)
            models.append(model)
            findings.extend(model.findings)
    memo.save()
    resolver.project.save_outlines()
    heads = {m.entry for m in models if m.draft}
    analysis = Analysis(tuple(models), tuple(call_sites), tuple(without_draft_heads(deduplicate(findings), heads)),
                        reads)
    return with_probes(analysis, probe_shadowed(Sources(resolver.project, resolver), protocols, analysis.models))


def scan(path: str | Path, protocols: Sequence[Protocol], cache_dir: str | Path | None = None,
         use_cache: bool = True, jobs: int = 0, plugins: Sequence[str | Path] = ()) -> ScanContext:
    """``plugins``: folders of plugins of the host's framework (scan HOST --plugin PLUGIN): their
    modules join the host's, their registrations by call and runner subclasses count."""
    with paused_gc():  # a scan's peak memory is bounded by the tree's summaries (index/gcpause.py)
        return _scan(path, protocols, cache_dir, use_cache, jobs, plugins)


def _scan(path: str | Path, protocols: Sequence[Protocol], cache_dir: str | Path | None,
          use_cache: bool, jobs: int, plugins: Sequence[str | Path]) -> ScanContext:
    started = time.perf_counter()
    layout = detect_layout(path, list(protocols))
    chosen = chosen_protocols(layout, protocols)
    files, link_problems = list_sources(layout)
    added: tuple[str, ...] = ()
    for plugin in plugins:
        packages, plugin_files, plugin_problems = list_plugin_sources(plugin, list(chosen), layout)
        added += packages
        files += plugin_files
        link_problems += plugin_problems
    chosen = [p.with_plugins(added) for p in chosen]
    cache = summary_cache(cache_dir, use_cache)
    project = Project(files, cache, jobs)
    resolver = Resolver(project)
    chosen = [with_plugin_roots(project, p) for p in chosen]

    # Lazy indexing: outlines (where definitions are) for the entry modules and
    # the modules that mention a protocol name; method bodies are parsed one
    # at a time, only when a chain or the runner walk needs them.
    tokens = {t.encode() for p in chosen for t in p.tokens}
    in_scope = [m for m in sorted(project.by_module) if any(p.in_scope(m) for p in chosen)]
    requests: dict[str, str] = {}
    for module in in_scope:
        data = project.data(module)
        mentions = data is None or any(t in data for t in tokens)
        if mentions or any(p.is_entry_module(module) for p in chosen):
            requests[module] = "outline"
    project.load(requests)
    # A protocol whose setter no file mentions is not part of this release.
    absent = [p.name for p in chosen if not any(project.mentions(m, p.setter) for m in in_scope)]
    applied = [p for p in chosen if p.name not in absent] or chosen[:1]
    absent = [name for name in absent if name not in {p.name for p in applied}]

    # Outlines are skeletons (function bodies blanked): a body that turns out not to parse
    # makes its module an input error, and the trace starts again without it.
    project.restartable = True
    try:
        while True:
            try:
                memo, analysis = _trace(project, resolver, applied, in_scope, layout)
                break
            except BodyUnreadable:
                resolver = Resolver(project)
    finally:
        project.restartable = False
    problems = project.input_problems() + [InputProblem(p, 1, why) for p, why in link_problems]
    result = ScanResult(
        root=str(layout.scan_root),
        framework=Framework(layout.framework, layout.version, layout.package, layout.fork_of),
        protocols=tuple(p.name for p in applied), models=analysis.models, call_sites=analysis.call_sites,
        findings=tuple(deduplicate(list(analysis.findings) + [input_error_finding(p) for p in problems])),
        input_errors=tuple(sorted(problems, key=lambda p: (p.path, p.line))),
        stats=ScanStats(files_total=len(files), files_parsed=0,
                        files_outlined=project.parsed_outline, functions_parsed=project.parsed_functions,
                        cache_hits=cache.hits, seconds=round(time.perf_counter() - started, 3),
                        chains_traced=memo.traced, chains_reused=memo.reused,
                        jedi_questions=resolver.jedi_questions, jedi_answers=resolver.jedi_answers),
        absent_protocols=tuple(absent), tool_version=__version__, notes=tuple(runtime_notes(project, applied)),
    )
    return ScanContext(layout, tuple(applied), project, resolver, result, analysis.reads)


def _trace(project: Project, resolver: Resolver, applied: list[Protocol], in_scope: list[str],
           layout: Layout) -> tuple[ChainMemo, Analysis]:
    alternatives: Alternatives = {}
    aliases: Aliases = {}
    entries = entry_classes(project, resolver, applied, alternatives, aliases)
    check_packs_match(project, applied, entries, in_scope, layout)
    memo = ChainMemo(project, memo_key(project, applied, [sorted(resolver.registry_factories.items()),
                                                          sorted(resolver.registry_class_keywords)]))
    analysis = analyse(resolver, applied, entries, alternatives=alternatives, memo=memo, aliases=aliases)
    return memo, analysis


def runtime_notes(project: Project, packs: Sequence[Protocol]) -> list[str]:
    """A platform whose runner lives in another distribution (pack ``[runner] external_runtimes``),
    when the tree's module hands the platform to it: the runner call sites shown do not run there."""
    notes: list[str] = []
    for proto in packs:
        for spec in proto.external_runtimes:
            platform, _, rest = spec.partition("=")
            package, _, module = rest.partition("@")
            if package and module in project.by_module and project.mentions(module, package):
                note = (f"on {platform} the runner is {package}'s ({project.by_module[module].path} hands the "
                        f"platform to it), outside this tree: the runner call sites shown do not run there")
                if note not in notes:
                    notes.append(note)
    return notes


def with_plugin_roots(project: Project, proto: Protocol) -> Protocol:
    """A plugin's runner roots (the pack's ``[plugin] runner_roots`` patterns over its classes'
    methods) replace the host's: on the plugin's platform its worker starts the model."""
    if not proto.plugin_packages or not proto.plugin_runner_roots:
        return proto
    methods = {p.rpartition(".")[2] for p in proto.plugin_runner_roots}
    roots = []
    for module in sorted(project.by_module):
        if not proto.in_plugin(module) or not any(project.mentions(module, m) for m in methods):
            continue
        summary = project.module(module)
        for cls in summary.classes if summary is not None and not summary.error else ():
            for name, _, _ in cls.spans():
                dotted = f"{module}.{cls.qualname}.{name}"
                if any(fnmatch.fnmatchcase(dotted, p) for p in proto.plugin_runner_roots):
                    roots.append(dotted)
    return dataclasses.replace(proto, runner_roots=tuple(roots)) if roots else proto


def check_packs_match(project: Project, packs: Sequence[Protocol], entries: Mapping[str, Sequence[ClassRef]],
                      in_scope: Sequence[str], layout: Layout) -> None:
    """A pack that matches nothing in a tree where its setter occurs is an error (exit 2),
    never `No findings.`: its module paths or its entry rule do not fit this tree."""
    for proto in packs:
        if proto.scope and not any(proto.in_scope(m) for m in project.by_module):
            if proto.scope.split(".")[0] == layout.package:
                raise UsageError(f"{layout.scan_root}: no Python file under {proto.scope.replace('.', '/')}/ "
                                 f"(pack {proto.name}'s modules): nothing to scan")
            raise UsageError(f"{proto.source}: pack {proto.name}'s modules ({proto.scope}.*) match no module of "
                             f"this tree (its package is {layout.package}); module paths in a pack start with its "
                             "[detect] package, and a fork gets them relocated")
        if entries.get(proto.name):
            continue
        mentioning = [m for m in in_scope if proto.in_scope(m) and project.mentions(m, proto.setter)]
        if not mentioning:
            continue
        where = ", ".join(project.by_module[m].path for m in mentioning[:3])
        rule = {"module-variable": f"module variable {proto.entry_variable} in {', '.join(proto.entry_modules)}",
                "decorator": f"decorators {', '.join(proto.entry_decorators)} in {', '.join(proto.entry_modules)}"
                }.get(proto.entry_kind, f"tables {', '.join(proto.registry_variables)} in {proto.registry_module}")
        raise UsageError(f"{proto.source}: pack {proto.name} finds no entry class in this tree although its setter "
                         f"{proto.setter} occurs in {len(mentioning)} module(s) ({where}): its entry rule ({rule}) "
                         "matches nothing here")


def with_alternatives(tracer: ChainTracer, model: ModelResult, registered: str,
                      bindings: Sequence[Binding]) -> ModelResult:
    """A name bound on several branches: every binding is traced, and the result is
    named as the registry names it (``registered``). A broken branch makes the model
    broken (its findings name the branch); otherwise the default branch (the pack's
    platform) decides, or, with none, the one verdict all branches share, else unknown
    naming the tests."""
    if not bindings:
        return model
    return renamed(_alternatives(tracer, model, bindings), registered)


def renamed(model: ModelResult, registered: str) -> ModelResult:
    if not registered or registered == model.entry:
        return model

    def rename(f: Finding) -> Finding:
        return dataclasses.replace(f, entry=registered if f.entry == model.entry else f.entry,
                                   entries=tuple(registered if e == model.entry else e for e in f.entries))
    return dataclasses.replace(model, entry=registered, findings=tuple(rename(f) for f in model.findings))


def _alternatives(tracer: ChainTracer, model: ModelResult, bindings: Sequence[Binding]) -> ModelResult:
    alternatives: list[Alternative] = []
    traced_by: list[tuple[Binding, ModelResult | None]] = []
    for binding in bindings:
        if not isinstance(binding.target, ClassRef):
            alternatives.append(Alternative(binding.text, "unknown", "", binding.default))
            traced_by.append((binding, None))
            continue
        traced = model if binding.target.fullname == model.entry else tracer.trace(binding.target)
        alternatives.append(Alternative(binding.text, traced.verdict, traced.entry, binding.default))
        traced_by.append((binding, traced))
    replaced = dataclasses.replace(model, alternatives=tuple(alternatives))
    broken = [(b, t) for b, t in traced_by if t is not None and t.verdict == "broken"]
    if broken:
        findings = set(model.findings) if model.verdict == "broken" else set()
        for binding, traced in broken:
            if traced is not model:
                findings.update(dataclasses.replace(f, message=f"{f.message} (where {binding.text})")
                                for f in traced.findings)
        binding, first = broken[0]
        assert first is not None
        reason = model.reason if first is model else f"{first.reason} (where {binding.text})"
        return dataclasses.replace(replaced, verdict="broken", reason=reason,
                                   findings=tuple(sorted(findings, key=Finding.sort_key)))
    if any(b.default for b in bindings):
        return replaced
    verdicts = {a.verdict for a in alternatives}
    if len(verdicts) == 1:
        return replaced
    tests = "; ".join(a.condition for a in alternatives)
    return dataclasses.replace(replaced, verdict="unknown",
                               reason=f"{model.entry.rsplit('.', 1)[-1]} is bound on several branches, none of "
                                      f"them taken on the pack's platform, and they differ ({tests})")


def with_probes(analysis: Analysis, probed: Mapping[str, list[Finding]]) -> Analysis:
    """The analysis with the convention probe's findings on the models they are about."""
    if not probed:
        return analysis
    models = tuple(with_findings(m, probed.get(f"{m.protocol} {m.entry}", [])) for m in analysis.models)
    extra = [f for found in probed.values() for f in found]
    return dataclasses.replace(analysis, models=models, findings=tuple(deduplicate(list(analysis.findings) + extra)))


def with_findings(model: ModelResult, extra: list[Finding]) -> ModelResult:
    """A model result with findings found after its chain was traced (runner-dependent)."""
    if not extra:
        return model
    verdict, reason = model.verdict, model.reason
    errors = [f for f in extra if is_error(f)]
    if errors and verdict in ("ok", "unknown"):
        verdict, reason = "broken", errors[0].message
    return dataclasses.replace(model, verdict=verdict, reason=reason,
                               findings=tuple(sorted(set(model.findings) | set(extra), key=Finding.sort_key)))


def as_draft_head(model: ModelResult) -> ModelResult:
    """A draft head that has the setter is not judged (verdict ``draft``): the runner
    never calls the setter on a draft worker, so its chain cannot lose the target's
    states; what its chain would be on its own stays in ``chain_verdict``. One without
    the setter stays ``missing`` (the support matrix)."""
    if not model.draft or model.verdict in ("missing", "draft"):
        return model
    chain_verdict = model.verdict
    assert chain_verdict in ("ok", "broken", "unknown")
    return dataclasses.replace(model, verdict="draft", chain_verdict=chain_verdict)


def stale_tag_findings(proto: Protocol, models: Sequence[ModelResult], sites: Sequence[CallSite]) -> list[Finding]:
    """Per-layer tags that are never cleared matter when the runner calls the setter
    more than once: the tags of every call add up."""
    if len(sites) < 2:
        return []
    calls = ", ".join(f"{s.file}:{s.line}" + ("" if s.passes_ids else " (no ids)") for s in sites)
    found = []
    for model in models:
        for tag in model.tags_without_clear:
            item = finding("stale-layer-markers", "", protocol=proto.name, entry=model.entry, file=tag.file,
                           line=tag.line, col=tag.col, chain=tuple(h.qualname for h in model.chain),
                           setter=proto.setter, setter_name=".".join(tag.setter.rsplit(".", 2)[-2:]),
                           count=len(sites), calls=calls)
            if model.draft:
                item = dataclasses.replace(item, severity="info")
            found.append(item)
    return found


def input_error_finding(problem: InputProblem) -> Finding:
    return finding("input-error", "", file=problem.path, line=problem.line, reason=problem.reason)


def without_draft_heads(findings: Sequence[Finding], drafts: set[str]) -> list[Finding]:
    """An error or a warning never lists a draft head among the classes it affects (the runner
    never calls the setter on one: its copy of the finding is info, kept on the draft's row)."""
    if not drafts:
        return list(findings)
    cleaned = []
    for f in findings:
        if f.severity != "info" and drafts & {f.entry, *f.entries}:
            targets = tuple(e for e in f.entries if e not in drafts)
            entry = f.entry if f.entry not in drafts else (targets[0] if targets else f.entry)
            if targets or (f.entry and f.entry not in drafts):
                f = dataclasses.replace(f, entry=entry, entries=targets)
        cleaned.append(f)
    return cleaned


def deduplicate(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per (slug, protocol, place); every affected entry is listed."""
    merged: dict[tuple[object, ...], Finding] = {}
    entries: dict[tuple[object, ...], dict[str, None]] = {}  # an ordered set: a finding may name hundreds
    for f in sorted(findings, key=Finding.sort_key):
        key = (f.slug, f.protocol, f.file, f.line, f.col, f.message)
        if key not in merged:
            merged[key] = f
            entries[key] = {}
        for entry in (f.entry, *f.entries):
            if entry:
                entries[key][entry] = None
    return [dataclasses.replace(f, entries=tuple(entries[k])) for k, f in merged.items()]


__all__ = ["Analysis", "ScanContext", "analyse", "open_project", "deduplicate", "input_error_finding", "scan", "stale_tag_findings",
           "with_findings"]
