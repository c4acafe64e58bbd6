"""The whole call graph of any Python tree (`tracer graph --all`): every module body,
function, method and lambda is a node; an edge is a call the values prove, with its
kind (call, constructor, super, decorator, callback, implicit). Files are parsed with
the stdlib ``ast`` in parallel and cached by content hash; calls that cannot be bound
are counted by cause, never guessed."""

from __future__ import annotations

import gc
import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.callgraph.ir import ModuleIR
from tracer.callgraph.registry import RegistryRule
from tracer.callgraph.store import Store, decode, encode, file_key, tree_key
from tracer.index.cache import SummaryCache
from tracer.index.discover import list_sources
from tracer.index.gcpause import paused_gc
from tracer.index.source import decode_source
from tracer.model.errors import InputError, UsageError
from tracer.model.tree import Layout, SourceFile
from tracer.safeio.read import TreeReader

if TYPE_CHECKING:
    import networkx as nx

MAX_FILE_BYTES = 16 * 1024 * 1024
IN_PROCESS_BYTES = 64 * 1024


def _package_prefix(root: Path) -> str:
    """``a.b`` when root is the folder of package ``a.b``: it or its parent holds an __init__.py
    (a wheel's ``sglang/srt`` has none of its own: a namespace package inside ``sglang``)."""
    parts = []
    current = root
    while ((current / "__init__.py").is_file() or (current.parent / "__init__.py").is_file()) and (
            current.name.isidentifier() and current.parent != current):
        parts.append(current.name)
        current = current.parent
    return ".".join(reversed(parts))


def _worker_start() -> None:
    """A parse worker collects cycles rarely: an ``ast`` tree is thousands of new objects and no
    cycle, and the collector's young-generation passes over them cost time for nothing."""
    gc.set_threshold(100_000, 50, 50)


def _compile(job: tuple[str, str, bool, bytes]) -> bytes:
    from tracer.callgraph.compile import compile_module  # not imported by a warm run (~35 ms)

    module, path, is_package, data = job
    try:
        text = decode_source(data)
    except InputError as exc:
        return encode(ModuleIR(module, path, is_package, 0, (), (), (), (), 0, str(exc)))
    return encode(compile_module(module, path, is_package, text))


def tree_layout(path: str | Path) -> tuple[Layout, str]:
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"{path}: not a directory")
    root = root.resolve()
    prefix = _package_prefix(root)
    if not prefix:
        return Layout(root, root, "", "", "python"), ""
    base = root
    for _ in prefix.split("."):
        base = base.parent
    return Layout(root, base, prefix.split(".")[0], "", "python"), prefix


def read_all(files: list[SourceFile], root: Path) -> tuple[list[str], list[bytes | None]]:
    """Each file's cache key (its content hash; "" when unreadable) and bytes."""
    keys: list[str] = []
    datas: list[bytes | None] = []
    reader = TreeReader(root)  # the root's and each folder's real path found once, not per file
    for f in files:
        data = reader.read_or_none(f.abspath, MAX_FILE_BYTES - 1, cut=True)  # read_regular_bytes' rule
        datas.append(data)
        keys.append(file_key(data, f.module, f.path, f.is_package) if data is not None else "")
    return keys, datas


def compile_all(files: list[SourceFile], keys: list[str], datas: list[bytes | None], store: Store, jobs: int,
                 progress: Callable[[str], None] | None) -> tuple[list[ModuleIR], dict[str, int]]:
    with paused_gc():  # millions of small tuples decoded and kept, none of them a cycle
        return _compile_all(files, keys, datas, store, jobs, progress)


def _compile_all(files: list[SourceFile], keys: list[str], datas: list[bytes | None], store: Store, jobs: int,
                 progress: Callable[[str], None] | None) -> tuple[list[ModuleIR], dict[str, int]]:
    counts = {"cache_hits": 0, "files_parsed": 0, "unreadable": 0}
    # each entry decoded as it comes (its marshalled instructions kept, the rest of the blob freed):
    # holding every blob until the end was ~90 MB of sglang/srt on top of the decoded modules
    decoded: dict[int, ModuleIR] = {}

    def decode_entry(i: int, blob: bytes) -> None:
        try:
            decoded[i] = decode(blob)
        except (ValueError, EOFError, TypeError):  # an entry of another shape: compile again
            decoded[i] = decode(_compile((files[i].module, files[i].path, files[i].is_package, datas[i] or b"")))
    todo: list[tuple[int, str, tuple[str, str, bool, bytes]]] = []
    for i, (f, key, data) in enumerate(zip(files, keys, datas)):
        if data is None:
            counts["unreadable"] += 1
            continue
        cached = store.load(key)
        if cached is not None:
            decode_entry(i, cached)
            counts["cache_hits"] += 1
        else:
            todo.append((i, key, (f.module, f.path, f.is_package, data)))
    if progress and todo:
        progress(f"parsing {len(todo)} of {len(files)} files")
    workers = jobs if jobs > 0 else min(os.cpu_count() or 1, 8)
    # a big file is parsed in a worker even alone: ast.parse holds the GIL for seconds on a
    # megabyte, and in-process an interrupt could not end the command within a second
    if (len(todo) > 8 and workers > 1) or any(len(job[3]) > IN_PROCESS_BYTES for _, _, job in todo):
        with ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))), initializer=_worker_start) as pool:
            for (i, key, _), blob in zip(todo, pool.map(_compile, [job for _, _, job in todo], chunksize=8)):
                store.store(key, blob)
                decode_entry(i, blob)
    else:
        for i, key, job in todo:
            blob = _compile(job)
            store.store(key, blob)
            decode_entry(i, blob)
    counts["files_parsed"] = len(todo)
    return [decoded[i] for i in sorted(decoded)], counts


def solve_tree(irs: list[ModuleIR], prefix: str = "", entry_seeds: dict[str, str] | None = None,
               module_calls: tuple[str, ...] = (), seed_modules: tuple[str, ...] = (),
               registries: tuple[RegistryRule, ...] = (),
               ) -> tuple[list[str], list[tuple[str, str, str]], dict[str, Any]]:
    """(nodes, edges as (caller, callee, kind), call statistics) of compiled modules (``irs`` is
    emptied: the modules are the solver's from then on); ``prefix``:
    the package the scanned folder is, against which an absolute import is also tried;
    ``entry_seeds``: protocol method -> the module variable that names entry classes (a
    receiver of that method no class of the tree reaches is taken to be one of them);
    ``module_calls``: the method a call of an instance runs without an in-tree ``__call__``;
    ``seed_modules``: where such a receiver may be seeded (the runner's modules; empty: anywhere);
    ``registries``: the classes a model registry builds by name (callgraph/registry.py).
    ``stats["edges_assumed"]`` lists ``[caller, callee, why]`` for the edges no value proves (made
    only through a seeded receiver: :data:`tracer.callgraph.seeds.ENTRY_CLASSES`, ``ATTRIBUTES``)."""
    from tracer.callgraph.solve import Solver  # not imported by a warm run (~50 ms)

    solver = Solver([ir for ir in irs if not ir.error], prefix, entry_seeds, registries)
    solver.module_calls = tuple(module_calls)
    solver.seed_modules = tuple(seed_modules)
    irs.clear()  # the solver drops each module's instructions once installed: nothing else may hold them
    # millions of small containers live until the end: the cyclic collector walking them again and
    # again was a third of the fixpoint's time, and nothing it could free is garbage before the end
    with paused_gc():
        solver.solve()
    names, pairs = [s.name for s in solver.scopes], solver.edges
    status = Counter(solver.site_status(site) for site in solver.sites)
    unbound = {k: n for k, n in sorted(status.items()) if k not in ("bound", "external")}
    stats = {"calls_total": len(solver.sites), "calls_bound": status.get("bound", 0),
             "calls_external": status.get("external", 0), "calls_unbound": sum(unbound.values()),
             "unbound_by_cause": unbound, "values_cut": solver.values_cut,
             "receivers_seeded_with_entry_classes": solver.entry_seeded,
             "params_typed_by_attributes": solver.ducks_seeded,
             "edges_assumed": sorted([names[u], names[v], why] for (u, v), why in solver.assumed_edges.items()),
             "arguments_narrowed_by_annotations": solver.arguments_narrowed(),
             "results_narrowed_by_receiver": solver.results_narrowed,
             "methods_cloned_per_receiver": solver.clones_made, "clones_refused": solver.clones_refused,
             "objects_by_allocation_site": sum(solver.object_count.values()),
             "functions_cloned_per_argument": solver.arg_clones_made, "arg_clones_refused": solver.arg_clones_refused}
    # its closures hold it in cycles: freed now, not at the next collection, and before the answer is built
    solver.__dict__.clear()
    nodes = sorted(set(names))
    edges = sorted({(names[u], names[v], kind) for (u, v), kind in pairs.items()})
    return nodes, edges, stats


def seeding_modules(files: list[SourceFile], seed_modules: tuple[str, ...]) -> tuple[str, ...]:
    """The runner's modules a receiver may be seeded in, as the solver takes them: a tree holding
    none of them (a fork under another package name) is seeded anywhere, as it was before."""
    if any(fnmatchcase(f.module, p) for f in files for p in seed_modules):
        return tuple(seed_modules)
    return ()


def graph_of(nodes: list[str], edges: list[tuple[str, str, str]], call_stats: dict[str, Any],
             short: Callable[[str], str] = str) -> nx.DiGraph:
    """The DiGraph of a solve's answer: every edge with its ``kind`` and its ``proof`` ("values", or
    why no value proves it: the seed its receiver rests on)."""
    import networkx as nx  # imported once the fixpoint is over: ~19 MB not under its peak

    assumed = {(u, v): why for u, v, why in call_stats.get("edges_assumed", ())}
    names = {n: short(n) for n in nodes}  # once per node, not twice per edge (a warm answer's cost)
    graph = nx.DiGraph()
    graph.add_nodes_from(names.values())
    graph.add_edges_from((names.get(u) or short(u), names.get(v) or short(v),
                          {"kind": kind, "proof": assumed.get((u, v), "values")}) for u, v, kind in edges)
    return graph


def public_stats(call_stats: dict[str, Any]) -> dict[str, Any]:
    """The solve's statistics as the JSON shows them: the assumed edges counted by why (each edge's
    own ``proof`` is on the edge)."""
    out = {k: v for k, v in call_stats.items() if k != "edges_assumed"}
    out["edges_assumed_by_reason"] = dict(sorted(Counter(why for _, _, why in call_stats.get("edges_assumed", ())).items()))
    return out


def whole_call_graph(path: str | Path, cache: SummaryCache, jobs: int = 0,
                     progress: Callable[[str], None] | None = None,
                     entry_seeds: dict[str, str] | None = None,
                     module_calls: tuple[str, ...] = (),
                     seed_modules: tuple[str, ...] = (),
                     registries: tuple[RegistryRule, ...] = ()) -> tuple[nx.DiGraph, dict[str, Any]]:
    tree = Tree(path, cache, entry_seeds, module_calls, seed_modules, registries)
    nodes, edges, call_stats, ir_errors, counts = tree_answer(tree, jobs, progress, entry_seeds, module_calls, registries)
    graph = graph_of(nodes, edges, call_stats, tree.short)
    return graph, tree.stats(counts, ir_errors, public_stats(call_stats))


class Tree:
    """A tree read for ``graph --all``: its files, their bytes and keys, the answer's key."""

    def __init__(self, path: str | Path, cache: SummaryCache, entry_seeds: dict[str, str] | None,
                 module_calls: tuple[str, ...], seed_modules: tuple[str, ...], registries: tuple[RegistryRule, ...]):
        self.started = self.parsed = time.perf_counter()
        self.layout, self.prefix = tree_layout(path)
        self.files, self.problems = list_sources(self.layout)
        self.seed_modules = seeding_modules(self.files, seed_modules)
        self.store = Store(cache.directory)
        self.keys, self.datas = read_all(self.files, self.layout.base)
        self.key = tree_key(self.keys + [f"seed:{m}={v}" for m, v in sorted((entry_seeds or {}).items())]
                            + [f"module-call:{m}" for m in module_calls] + [f"seed-in:{m}" for m in self.seed_modules]
                            + [r.key() for r in registries])

    def short(self, name: str) -> str:
        prefix = self.prefix
        return name[len(prefix) + 1:] if prefix and name.startswith(prefix + ".") else name

    def stats(self, counts: dict[str, int], ir_errors: int, public: dict[str, Any]) -> dict[str, Any]:
        return {"files_total": len(self.files), "files_parsed": counts["files_parsed"],
                "cache_hits": counts["cache_hits"], "answer_cached": bool(counts["answer_cached"]),
                "input_errors": len(self.problems) + counts["unreadable"] + ir_errors, **public,
                "seconds_parse": round(self.parsed - self.started, 3),
                "seconds": round(time.perf_counter() - self.started, 3)}

    def cached_counts(self) -> dict[str, int]:
        return {"cache_hits": len(self.files), "files_parsed": 0, "unreadable": self.keys.count(""), "answer_cached": 1}



def tree_answer(tree: Tree, jobs: int, progress: Callable[[str], None] | None, entry_seeds: dict[str, str] | None,
                module_calls: tuple[str, ...], registries: tuple[RegistryRule, ...],
                ) -> tuple[list[str], list[tuple[str, str, str]], dict[str, Any], int, dict[str, int]]:
    """(nodes, edges, call statistics, files not compiled, counts): the stored answer of an unchanged
    tree (no entry decoded, nothing solved), else each file compiled (or its entry read) and solved."""
    answer = tree.store.load_value(tree.key)
    if isinstance(answer, tuple) and len(answer) == 4:
        nodes, edges, call_stats, ir_errors = answer
        tree.datas.clear()
        tree.parsed = time.perf_counter()
        return nodes, edges, call_stats, ir_errors, tree.cached_counts()
    irs, counts = compile_all(tree.files, tree.keys, tree.datas, tree.store, jobs, progress)
    tree.datas.clear()  # the sources are compiled: not held through the fixpoint
    tree.parsed = time.perf_counter()
    if progress:
        progress(f"solving {len(irs)} modules")
    ir_errors = sum(1 for ir in irs if ir.error)
    nodes, edges, call_stats = solve_tree(irs, tree.prefix, entry_seeds, module_calls, tree.seed_modules, registries)
    tree.store.store_value(tree.key, (nodes, edges, call_stats, ir_errors))
    counts["answer_cached"] = 0
    return nodes, edges, call_stats, ir_errors, counts
