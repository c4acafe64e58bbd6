"""The call graph of the part of a tree that names some words (the report's picture of
the capture setters): the files whose text holds one of them, and the tree's modules
those files import, ``import_depth`` imports deep, solved alone. It is the value-flow
graph of ``graph --all`` on fewer files: an edge is still a call the values prove, but
a call whose target lies in a file left out stays unbound, so the graph is a readable
neighbourhood, not the whole program (sglang/srt: about a tenth of the files and of the
time). The answer is cached by the chosen files' contents, like the whole graph's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from tracer.callgraph.build import _compile_all, _layout, _read_all, solve_tree
from tracer.callgraph.ir import ModuleIR
from tracer.callgraph.store import Store, tree_key
from tracer.index.cache import SummaryCache
from tracer.index.discover import list_sources


def imported_modules(ir: ModuleIR, prefix: str) -> set[str]:
    """The absolute module names ``ir`` imports (``from a import b``: ``a`` and ``a.b``), each
    also as the scanned package's (``prefix``) where a script's import means that."""
    names: set[str] = set()
    for ins in ir.instrs:
        if ins[0] == "from":
            names.update((ins[2], f"{ins[2]}.{ins[3]}"))
        elif ins[0] == "import":
            names.add(ins[2])
        elif ins[0] == "star":
            names.add(ins[1])
    if prefix:
        names |= {f"{prefix}.{n}" for n in names}
    return names


def focused_call_graph(path: str | Path, cache: SummaryCache, words: Iterable[str], jobs: int = 0,
                       import_depth: int = 1, entry_seeds: dict[str, str] | None = None,
                       module_calls: tuple[str, ...] = (),
                       progress: Callable[[str], None] | None = None) -> tuple[nx.DiGraph, dict[str, Any]]:
    started = time.perf_counter()
    layout, prefix = _layout(path)
    files, _ = list_sources(layout)
    store = Store(cache.directory)
    keys, datas = _read_all(files, layout.base)
    wanted = [w.encode() for w in words if w]
    by_module = {f.module: i for i, f in enumerate(files) if datas[i] is not None}
    chosen = {i for i, data in enumerate(datas) if data is not None and any(w in data for w in wanted)}
    irs: dict[int, ModuleIR] = {}
    frontier = sorted(chosen)
    for level in range(import_depth + 1):
        compiled, _ = _compile_all([files[i] for i in frontier], [keys[i] for i in frontier],
                                   [datas[i] for i in frontier], store, jobs, progress)
        irs.update(zip(frontier, compiled))
        if level == import_depth:
            break
        found = {by_module[n] for i in frontier for n in imported_modules(irs[i], prefix) if n in by_module}
        frontier = sorted(found - set(irs))
        if not frontier:
            break
    order = sorted(irs)
    key = tree_key([keys[i] for i in order] + ["focus"] + [f"seed:{m}={v}" for m, v in sorted((entry_seeds or {}).items())]
                   + [f"module-call:{m}" for m in module_calls])
    answer = store.load_value(key)
    cached = isinstance(answer, tuple) and len(answer) == 3
    if cached:
        nodes, edges, call_stats = answer
    else:
        modules = [irs[i] for i in order]
        irs.clear()
        datas.clear()  # compiled: neither the sources nor the modules outlive the solve
        nodes, edges, call_stats = solve_tree(modules, prefix, entry_seeds, module_calls)
        store.store_value(key, (nodes, edges, call_stats))

    def short(name: str) -> str:
        return name[len(prefix) + 1:] if prefix and name.startswith(prefix + ".") else name

    graph = nx.DiGraph()
    graph.add_nodes_from(short(n) for n in nodes)
    for u, v, kind in edges:
        graph.add_edge(short(u), short(v), kind=kind)
    stats = {"files_total": len(files), "files_solved": len(order), "files_naming": len(chosen),
             "answer_cached": cached, **call_stats, "seconds": round(time.perf_counter() - started, 3)}
    return graph, stats
