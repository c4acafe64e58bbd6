"""The whole call graph of any Python tree: every function, method and module body,
parsed in parallel; calls that cannot be bound are counted, never guessed."""

from __future__ import annotations

import time
from pathlib import Path

import networkx as nx

from tracer.index.cache import SummaryCache
from tracer.index.discover import list_sources
from tracer.index.project import Project
from tracer.model.errors import UsageError
from tracer.model.summary import Call, Function
from tracer.model.tree import Layout
from tracer.resolve.resolver import ClassRef, Resolver


def _package_prefix(root: Path) -> str:
    """``a.b`` when root is the folder of package ``a.b`` (its parents hold __init__.py)."""
    parts = []
    current = root
    while (current / "__init__.py").is_file():
        parts.append(current.name)
        current = current.parent
    return ".".join(reversed(parts))


def whole_call_graph(path: str | Path, cache: SummaryCache, jobs: int = 0) -> tuple[nx.DiGraph, dict]:
    started = time.perf_counter()
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"{path}: not a directory")
    root = root.resolve()
    prefix = _package_prefix(root)
    base = root
    for _ in prefix.split(".") if prefix else ():
        base = base.parent
    layout = Layout(root, base, prefix.split(".")[0] if prefix else "", "", "python")
    if not prefix:
        layout = Layout(root, root, "", "", "python")
    files, problems = list_sources(layout)
    project = Project(files, cache, jobs)
    project.load({f.module: "full" for f in project.by_module.values()})
    resolver = Resolver(project)

    def short(name: str) -> str:
        return name[len(prefix) + 1:] if prefix and name.startswith(prefix + ".") else name

    graph = nx.DiGraph()
    bound = unbound = 0
    for module in sorted(project.by_module):
        summary = project.summaries.get(module)
        if summary is None or summary.error:
            continue
        graph.add_node(short(module))
        scopes: list[tuple[ClassRef | None, Function | None, tuple[Call, ...], str]] = [
            (None, None, summary.module_calls, short(module))]
        for fn in summary.functions:
            scopes.append((None, fn, fn.calls, short(f"{module}.{fn.qualname}")))
        for cls in summary.classes:
            ref = ClassRef(module, cls.qualname)
            for method in cls.methods:
                scopes.append((ref, method, method.calls, short(f"{module}.{method.qualname}")))
        for cls_ref, _, calls, node in scopes:
            graph.add_node(node)
            for call in calls:
                target = _bind(resolver, module, cls_ref, call.func)
                if target is None:
                    unbound += 1
                    continue
                bound += 1
                graph.add_edge(node, short(target))
    stats = {"files_total": len(files), "files_parsed": project.parsed_full, "cache_hits": cache.hits,
             "input_errors": len(project.input_problems()) + len(problems),
             "calls_bound": bound, "calls_unbound": unbound,
             "seconds": round(time.perf_counter() - started, 3)}
    return graph, stats


def _bind(resolver: Resolver, module: str, cls: ClassRef | None, func: str) -> str | None:
    if not func:
        return None
    if cls is not None and func.startswith("self.") and func.count(".") == 1:
        found = resolver.find_method(cls, func[5:])
        return f"{found[0].fullname}.{func[5:]}" if found else None
    if cls is not None and func.startswith("super()."):
        classes, _ = resolver.mro(cls)
        found = resolver.find_method(cls, func[8:], after=classes[0] if classes else None)
        return f"{found[0].fullname}.{func[8:]}" if found else None
    if func.startswith(("self.", "super()")):
        return None
    symbol = resolver.resolve_name(module, func)
    if symbol.kind == "function":
        return symbol.fullname
    if symbol.kind == "class":
        found = resolver.find_method(ClassRef(symbol.module, symbol.qualname), "__init__")
        return f"{found[0].fullname}.__init__" if found else None
    head, _, method = func.rpartition(".")
    if head:
        owner = resolver.resolve_name(module, head)
        if owner.kind == "class":
            found = resolver.find_method(ClassRef(owner.module, owner.qualname), method)
            return f"{found[0].fullname}.{method}" if found else None
    return None
