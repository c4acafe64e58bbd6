"""The call graph of the part of a tree that names some words (the report's picture of
the capture setters): the files whose text holds one of them, and the tree's modules
those files import, ``import_depth`` imports deep, solved alone. It is the value-flow
graph of ``graph --all`` on fewer files: an edge is still a call the values prove, but
a call whose target lies in a file left out stays unbound, so the graph is a readable
neighbourhood, not the whole program (sglang/srt: about a tenth of the files and of the
time). The answer is cached by the chosen files' contents, like the whole graph's."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import networkx as nx

from tracer.callgraph.build import (
    compile_all,
    graph_of,
    public_stats,
    read_all,
    seeding_modules,
    solve_tree,
    tree_layout,
)
from tracer.callgraph.ir import ModuleIR
from tracer.callgraph.registry import RegistryRule
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
                       progress: Callable[[str], None] | None = None,
                       seed_modules: tuple[str, ...] = (),
                       registries: tuple[RegistryRule, ...] = ()) -> tuple[nx.DiGraph, dict[str, Any]]:
    started = time.perf_counter()
    layout, prefix = tree_layout(path)
    files, _ = list_sources(layout)
    seed_modules = seeding_modules(files, seed_modules)
    store = Store(cache.directory)
    keys, datas = read_all(files, layout.base)
    wanted = [w.encode() for w in words if w]
    by_module = {f.module: i for i, f in enumerate(files) if datas[i] is not None}
    chosen = {i for i, data in enumerate(datas) if data is not None and any(w in data for w in wanted)}
    irs: dict[int, ModuleIR] = {}
    frontier = sorted(chosen)
    for level in range(import_depth + 1):
        compiled, _ = compile_all([files[i] for i in frontier], [keys[i] for i in frontier],
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
                   + [f"module-call:{m}" for m in module_calls] + [f"seed-in:{m}" for m in seed_modules]
                   + [r.key() for r in registries])
    answer = store.load_value(key)
    cached = isinstance(answer, tuple) and len(answer) == 3
    if cached:
        nodes, edges, call_stats = answer
    else:
        modules = [irs[i] for i in order]
        irs.clear()
        datas.clear()  # compiled: neither the sources nor the modules outlive the solve
        nodes, edges, call_stats = solve_tree(modules, prefix, entry_seeds, module_calls, seed_modules, registries)
        store.store_value(key, (nodes, edges, call_stats))

    def short(name: str) -> str:
        return name[len(prefix) + 1:] if prefix and name.startswith(prefix + ".") else name

    graph = graph_of(nodes, edges, call_stats, short)
    stats = {"files_total": len(files), "files_solved": len(order), "files_naming": len(chosen),
             "answer_cached": cached, **public_stats(call_stats), "seconds": round(time.perf_counter() - started, 3)}
    return graph, stats



def _scope_modules(ir: ModuleIR, prefix: str) -> dict[int, set[str]]:
    """Scope index -> the modules whose imported names its code reads (a call's function, an
    attribute's object, an argument, ...: a module-level name read through the module's shared
    ``glob`` variable, or, in the module body, the import's own variable)."""
    ns = {var: name for name, var in ir.globals}
    made: dict[int, set[str]] = {}
    for ins in ir.instrs:
        if ins[0] == "from":
            made[ins[1]] = {ins[2], f"{ins[2]}.{ins[3]}"}
        elif ins[0] == "import":
            made[ins[1]] = {ins[2]}
    if prefix:
        made = {v: mods | {f"{prefix}.{m}" for m in mods} for v, mods in made.items()}
    by_name: dict[str, set[str]] = {}
    for ins in ir.instrs:
        if ins[0] == "copy" and ins[1] in ns and ins[2] in made:
            by_name.setdefault(ns[ins[1]], set()).update(made[ins[2]])
    mods_of = dict(made)
    for ins in ir.instrs:
        if ins[0] == "glob" and ins[2] in by_name:
            mods_of[ins[1]] = by_name[ins[2]]
    out: dict[int, set[str]] = {}

    def use(scope: int, *vs: int) -> None:
        for v in vs:
            if v in mods_of:
                out.setdefault(scope, set()).update(mods_of[v])
    for ins in ir.instrs:
        op = ins[0]
        if op == "call":
            use(ins[5], ins[2], *(a for a, _ in ins[3]), *(a for _, a in ins[4]))
        elif op in ("attr", "item") and len(ins) > 4:
            use(ins[4], ins[2])
        elif op == "setattr":
            use(ins[4], ins[1], ins[3])
        elif op == "dunder":
            use(ins[5], ins[2], *ins[4])
        elif op in ("iter", "aiter"):
            use(ins[3], ins[2])
        elif op == "decorate":
            use(ins[4], ins[2], ins[3])
    bases = {b for c in ir.classes for b in c.bases}  # class statements run in the module body
    out.setdefault(0, set()).update(m for v in bases if v in mods_of for m in mods_of[v])
    return out


def _defining(datas: list[bytes | None], names: list[str], modules: Sequence[str] = ()) -> set[int]:
    """The files defining a start: ``class A`` and ``def b`` for ``A.b``, ``def b`` or ``class b``
    for ``b``; where none does (a module's name), the files naming every part; and the module of
    that name or that the name is in (``main.apply``: main.py's text need not hold "main")."""
    out = {i for i, m in enumerate(modules) for n in names if datas[i] is not None
           and (m == n or m.endswith("." + n) or n.startswith(m + "."))}
    for name in names:
        parts = [p.encode() for p in name.split(".")[-2:] if p]
        if len(parts) == 2:
            tests = [[b"class " + parts[0], b"def " + parts[1]]]
        else:
            tests = [[b"def " + parts[0]], [b"class " + parts[0]]] if parts else []
        found = {i for i, d in enumerate(datas) if d is not None and any(all(w in d for w in t) for t in tests)}
        out |= found or {i for i, d in enumerate(datas) if d is not None and parts and all(w in d for w in parts)}
    return out


def _seed_readers(ir: ModuleIR, entry_seeds: dict[str, str], memo: dict[str, set[int]]) -> set[int]:
    """The scopes of ``ir`` reading a pack's setter off something (a receiver the solver may seed)."""
    found = memo.get(ir.module)
    if found is None:
        found = memo[ir.module] = {ins[4] for ins in ir.instrs if ins[0] == "attr" and ins[3] in entry_seeds}
    return found


MAX_DEFINERS = 2  # an attribute name defined in more files than this pulls none of them in (1: srt -1 CPU-s, but mro_cross_module misses a mixin)
MAX_UNDER = 8  # a string naming a package prefix: its modules, when at most this many


def _scope_attrs(ir: ModuleIR, memo: dict[str, dict[int, set[str]]]) -> dict[int, set[str]]:
    """Scope index -> the attribute names its code reads (``x.name``, a method call's name)."""
    found = memo.get(ir.module)
    if found is None:
        found = memo[ir.module] = {}
        for ins in ir.instrs:
            if ins[0] == "attr" and len(ins) > 4 and not ins[3].startswith("__"):
                found.setdefault(ins[4], set()).add(ins[3])
    return found


_DEF = re.compile(rb"\bdef\s+(\w+)\s*\(")


def _definers(datas: list[bytes | None], names: set[str], memo: dict[str, set[int]]) -> set[int]:
    """The files defining one of ``names`` as a function (``def name(``): the classes a value read
    through that attribute may be (the whole graph's solver sees every such class, e.g. the one
    class with ``is_last_rank`` a field's value is typed by); a name defined in more than
    MAX_DEFINERS files adds nothing (a common method name: no single class it points to).
    ``memo`` is the tree's index of them, built on the first call (one scan of every file)."""
    if not memo:
        index: dict[str, set[int]] = {}
        for i, d in enumerate(datas):
            if d is not None:
                for m in set(_DEF.findall(d)):
                    index.setdefault(m.decode("latin-1"), set()).add(i)
        memo.update((n, files) for n, files in index.items() if len(files) <= MAX_DEFINERS)
        memo[""] = set()  # built, even for a tree defining nothing
    return {i for name in names for i in memo.get(name, ())}


_STRING = re.compile(rb"""["']([A-Za-z_][\w.]*)""")


def _named_modules(i: int, datas: list[bytes | None], by_module: dict[str, int], prefix: str,
                   memo: dict[int, set[int]]) -> set[int]:
    """The tree's modules file ``i`` (one holding a reached function) names in a string
    (``import_module("a.b")``, ``sys.modules["t"]``; ``f"a.plugins.{x}"``: every module under
    ``a.plugins``, when at most 8): the whole graph binds such a module's reads, so the
    neighbourhood solves it too. (Every solved file's strings, unbounded: all 2141 of srt's.)"""
    found = memo.get(i)
    if found is None:
        found = memo[i] = set()
        for text in set(_STRING.findall(datas[i] or b"")):
            name = text.decode("latin-1")
            for full in (name, f"{prefix}.{name}" if prefix else name):
                if full.endswith("."):
                    under = [j for m, j in by_module.items() if m.startswith(full)]
                    found.update(under if len(under) <= MAX_UNDER else ())
                elif full in by_module:
                    found.add(by_module[full])
    return found


def _runner_module(module: str, seed_modules: tuple[str, ...]) -> bool:
    """Whether the solver may seed a receiver read in ``module`` (the runner's modules; none named: any)."""
    return not seed_modules or any(fnmatchcase(module, p) for p in seed_modules)


def _within(step: Callable[[str], Iterable[str]], starts: set[str], depth: int) -> set[str]:
    frontier, reached = set(starts), set(starts)
    for _ in range(max(0, depth)):
        frontier = {m for n in frontier for m in step(n)} - reached
        reached |= frontier
    return reached


def neighbourhood_call_graph(path: str | Path, cache: SummaryCache, names: Iterable[str], depth: int,
                             callers: bool = False, jobs: int = 0, entry_seeds: dict[str, str] | None = None,
                             progress: Callable[[str], None] | None = None,
                             module_calls: tuple[str, ...] = (),
                             seed_modules: tuple[str, ...] = (),
                             registries: tuple[RegistryRule, ...] = ()) -> tuple[nx.DiGraph, dict[str, Any]]:
    """The graph ``--from NAME --depth N`` is cut from, solved on demand: the files defining NAME;
    then, round by round, the modules whose imported names the functions reached less than N
    calls deep read (their own code, their class's ``__init__`` and what it calls) and the module
    bodies of the solved files read (base classes), and with
    ``callers`` the files naming a caller found, until nothing is added (at most N + 2 solves: the
    last round's module bodies may name bases two modules away, as a subclass's mixin).
    A call into a module no round chose stays unbound: a neighbourhood, not the whole program.
    Each solve is cached by the chosen files' contents."""
    started = time.perf_counter()
    names = list(names)
    layout, prefix = tree_layout(path)
    files, _ = list_sources(layout)
    seed_modules = seeding_modules(files, seed_modules)
    store = Store(cache.directory)
    keys, datas = read_all(files, layout.base)
    by_module = {f.module: i for i, f in enumerate(files) if datas[i] is not None}
    irs: dict[int, ModuleIR] = {}

    def load(wanted: Iterable[int]) -> None:
        todo = sorted(set(wanted) - set(irs))
        if todo:
            compiled, _ = compile_all([files[i] for i in todo], [keys[i] for i in todo],
                                       [datas[i] for i in todo], store, jobs, progress)
            irs.update(zip(todo, compiled))
    chosen = _defining(datas, names, [f.module for f in files])
    # the files naming a start's class: its subclasses (an override self.f() reaches) and its makers
    owners = {n.split(".")[-2].encode() for n in names if n.count(".") >= 1}
    load(chosen | {i for i, d in enumerate(datas) if d is not None and any(b"(" + o in d or o + b"(" in d
                                                                           for o in owners)})
    seeds = ([f"seed:{m}={v}" for m, v in sorted((entry_seeds or {}).items())] + [f"module-call:{m}" for m in module_calls]
             + [f"seed-in:{m}" for m in seed_modules])
    seeds += [r.key() for r in registries]
    full = [f"{prefix}.{n}" if prefix else n for n in names]
    uses: dict[int, dict[int, set[str]]] = {}
    readers: dict[str, set[int]] = {}
    attrs: dict[str, dict[int, set[str]]] = {}
    defs: dict[str, set[int]] = {}
    named: dict[int, set[int]] = {}
    seeded = False
    rounds = 0
    while True:
        rounds += 1
        order = sorted(irs)
        key = tree_key([keys[i] for i in order] + ["around"] + seeds)
        answer = store.load_value(key)
        cached = isinstance(answer, tuple) and len(answer) == 3
        if cached:
            nodes, edges, call_stats = answer
        else:
            nodes, edges, call_stats = solve_tree([irs[i] for i in order], prefix, entry_seeds, module_calls,
                                                  seed_modules, registries)
            store.store_value(key, (nodes, edges, call_stats))
        graph = graph_of(nodes, edges, call_stats)
        if rounds > max(1, depth) + 1:
            break
        starts = {n for n in graph for f, name in zip(full, names)
                  if n == f or n.endswith("." + name) or n.startswith(f + ".") or f".{name}." in n}
        reached, up = _within(graph.successors, starts, depth - 1), _within(graph.predecessors, starts, depth - 1)
        where = {s.name: (i, si) for i in order for si, s in enumerate(irs[i].scopes)}
        need: set[int] = set()
        # what a reached function's code reads, what its class's __init__ reads (the types of the
        # fields it calls through) and its module body (base classes, decorators)
        inits = {f"{n.rsplit('.', 1)[0]}.__init__" for n in reached} & set(where)
        # ... and the functions those __init__ call (a field's value is what they return)
        inits |= {m for n in inits if n in graph for m in graph.successors(n)} & set(where)
        scopes = {where[n] for n in reached | inits if n in where}
        scopes |= {(i, 0) for i in irs}  # module bodies: every solved class's bases
        for i, si in scopes:
            if i not in uses:
                uses[i] = _scope_modules(irs[i], prefix)
            need.update(by_module[m] for m in uses[i].get(si, ()) if m in by_module)
        need |= _definers(datas, {a for i, si in scopes if si for a in _scope_attrs(irs[i], attrs).get(si, ())}, defs)
        need |= {m for i in {where[n][0] for n in reached | inits if n in where}
                 for m in _named_modules(i, datas, by_module, prefix, named)}
        # a runner's call of a pack's setter reached (its receiver is seeded with the entry classes):
        # the modules naming the entry variable, so that the seed has its classes
        if entry_seeds and not seeded and any(si in _seed_readers(irs[i], entry_seeds, readers) for i, si in scopes
                                              if si and _runner_module(files[i].module, seed_modules)):
            seeded = True
            marks = [v.encode() + b" =" for v in set(entry_seeds.values())]
            need.update(i for i, d in enumerate(datas) if d is not None and any(m in d for m in marks))
        if callers:
            words = {p.rsplit(".", 1)[-1].encode() for n in up for p in graph.predecessors(n)}
            need.update(i for i, d in enumerate(datas) if d is not None and any(w in d for w in words if w[:1] != b"<"))
        if not need - set(irs):
            break
        load(need)

    def short(name: str) -> str:
        return name[len(prefix) + 1:] if prefix and name.startswith(prefix + ".") else name

    out = nx.relabel_nodes(graph, short)
    stats = {"files_total": len(files), "files_solved": len(irs), "files_naming": len(chosen), "rounds": rounds,
             "solved_on_demand": True, "answer_cached": cached, **public_stats(call_stats),
             "seconds": round(time.perf_counter() - started, 3)}
    return out, stats
