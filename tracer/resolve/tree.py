"""A scanned tree opened for the later stages: its Project (files, summaries, cache) and
its Resolver, built the way the scan builds them, without tracing anything (explain on
a cached result, the convention probe)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tracer.index.cache import summary_cache
from tracer.index.discover import detect_layout, list_sources
from tracer.index.project import Project
from tracer.model.protocol import Protocol
from tracer.resolve.resolver import ClassRef, Resolver

__all__ = ["classes_named", "open_project", "summary_cache"]  # summary_cache: tracer.index.cache's, imported here still


def open_project(path: str | Path, protocols: Sequence[Protocol], cache_dir: str | Path | None = None,
                 use_cache: bool = True, jobs: int = 0) -> tuple[Project, Resolver]:
    """The tree's Project and Resolver without tracing anything."""
    layout = detect_layout(path, list(protocols))
    files, _ = list_sources(layout)
    project = Project(files, summary_cache(cache_dir, use_cache), jobs)
    return project, Resolver(project)


def classes_named(project: Project, proto: Protocol, names: Sequence[str]) -> list[ClassRef]:
    """The classes of the protocol's scope with one of these names (a pack's metadata classes),
    ordered as ``names`` lists them. Every in-scope module that names one is looked at, not
    only those loaded so far (which depends on what was traced before, and on what a warm run
    took from the chain memo)."""
    order = {name: i for i, name in enumerate(names)}
    found = []
    for module in sorted(project.by_module):
        if not proto.in_scope(module) or not any(project.mentions(module, n) for n in names):
            continue
        summary = project.module(module)
        for definition in summary.classes if summary is not None and not summary.error else ():
            if definition.name in order:
                found.append(ClassRef(module, definition.qualname))
    return sorted(found, key=lambda r: (order[r.name], r.fullname))
