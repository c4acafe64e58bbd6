"""Runner side: where the runner, not the setter, puts layer ids of its own in
place of the draft's, and says nothing.

The pack says where the ids come from (``[config] runner_ids_keys``, else
``draft_ids_keys``) and what the runner guesses with (``[runner] fallback_calls``
and ``[defaults] methods``); the runner modules are the pack's. A handler that
swallows any error around a read of such a key, or a branch that calls such a
guesser, is a silent fallback unless it calls one of the pack's logging
functions (or the handler re-raises).
"""

from __future__ import annotations

from tracer.checks import finding
from tracer.index.fallback_sites import fallback_sites
from tracer.index.project import Project
from tracer.model.errors import InputError
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.summary import FallbackSite


def _leaf(key: str) -> str:
    return key.rpartition(".")[2]


def _qualnames(project: Project, module: str) -> list[str]:
    summary = project.module(module)
    if summary is None or summary.error:
        return []
    names = [name for name, _, _ in summary.spans()]
    names += [f"{c.qualname}.{name}" for c in summary.classes for name, _, _ in c.spans()]
    return names


def runner_fallback_sites(project: Project, proto: Protocol) -> list[tuple[str, FallbackSite]]:
    """(module, site) for every fallback site in the pack's runner modules, logged or not."""
    keys = tuple(dict.fromkeys(_leaf(k) for k in (proto.runner_ids_keys or proto.draft_ids_keys)))
    calls = tuple(dict.fromkeys(proto.runner_fallback_calls + proto.default_methods))
    tokens = keys + calls
    if not tokens or not proto.runner_modules:
        return []
    found: list[tuple[str, FallbackSite]] = []
    for module in sorted(project.by_module):
        if not (proto.in_scope(module) and proto.is_runner_module(module) and not proto.is_entry_module(module)):
            continue
        if not any(project.mentions(module, t) for t in tokens):
            continue
        text = project.text(module)
        if text is None:
            continue
        for qualname in _qualnames(project, module):
            body = project.function_text(module, qualname) or ""
            if not any(t in body for t in tokens):
                continue
            span = project.span(module, qualname)
            if span is None:
                continue
            try:
                sites = fallback_sites(text, span[0], span[1], qualname, keys, calls)
            except InputError:
                continue  # the function's own summary reports what cannot be parsed
            found.extend((module, site) for site in sites)
    # a nested def is inside its owner's span too: one site per place
    unique = {(m, s.kind, s.line, s.col): (m, s) for m, s in found}
    return [unique[k] for k in sorted(unique)]


def runner_fallback_findings(project: Project, proto: Protocol) -> list[Finding]:
    findings = []
    ids_keys = proto.runner_ids_keys or proto.draft_ids_keys
    for module, site in runner_fallback_sites(project, proto):
        if site.raises or any(proto.is_logging_call(c) for c in site.calls):
            continue
        source = project.by_module.get(module)
        path = source.path if source else module
        function = ".".join(f"{module}.{site.function}".split(".")[-2:])
        if site.kind == "except":
            key = next((k for k in ids_keys if _leaf(k) == site.what), site.what)
            findings.append(finding(
                "silent-fallback", "runner-except", protocol=proto.name, file=path, line=site.line, col=site.col,
                chain=(f"{module}.{site.function}",), setter=proto.setter, function=function, key=key,
                condition=site.condition, value=site.value or "nothing",
                fallback=proto.fallback_description or "the setter's default layers"))
        else:
            findings.append(finding(
                "silent-fallback", "runner-branch", protocol=proto.name, file=path, line=site.line, col=site.col,
                chain=(f"{module}.{site.function}",), setter=proto.setter, function=function,
                key=" / ".join(ids_keys) or "layer ids", condition=site.condition, value=site.value))
    return findings


__all__ = ["runner_fallback_findings", "runner_fallback_sites"]
