"""Run-time replacement of a model's forward: ``obj.forward = f``, ``obj.forward =
make()(...).__get__(obj, type(obj))``, ``setattr(obj, "forward", f)``, ``Class.forward = f``.

A plugin (vllm-ascend's ``patch_eagle3_pp_aux.py``) may replace the decoder's forward while
the model runs; where the replacement applies, it is the forward that runs, so it is the
reader of the captured layers. The replacement is followed to the functions it can install
(a name, a factory's returned nested function, a local bound on ``isinstance`` branches),
each with the classes its branch tests; a model's chain gets one hop for each replacement
that applies to its state owner: a ``read`` when the replacement reads the state (itself or
through a method of the owner), else an ``unresolved`` hop saying that nothing is captured
where it applies. The hop names the patch, its function and the tests it sits under.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from tracer.analysis.readers import readers_of
from tracer.index.project import Project
from tracer.model.protocol import Protocol
from tracer.model.results import Hop, ModelResult
from tracer.resolve.resolver import ClassRef, Resolver


@dataclass(frozen=True)
class Replacement:
    module: str
    qualname: str  # "factory.inner" or "func"
    line: int
    classes: tuple[str, ...]  # dotted names of the isinstance tests that choose it (): any object
    self_calls: tuple[str, ...]  # methods it calls on self
    self_reads: tuple[str, ...]  # attributes it reads on self


@dataclass(frozen=True)
class Patch:
    module: str
    path: str
    function: str  # the function that installs it
    line: int
    method: str
    target: str  # source of the patched object
    condition: str  # the tests the patch sits under, in its function
    replacements: tuple[Replacement, ...]
    callers: tuple[str, ...] = ()  # "Class.method at path:line when <tests>": where the installer is called


def patch_sites(project: Project, proto: Protocol) -> list[Patch]:
    """Every replacement of one of the pack's forward methods in the plugins' modules (a host's own
    are not followed yet: its trees patch layers for other reasons, and no case is known)."""
    found: list[Patch] = []
    methods = proto.forward_methods
    for module in sorted(project.by_module):
        if not proto.in_plugin(module) or not any(project.mentions(module, f".{m} =") for m in methods) and not (
                project.mentions(module, "setattr(") and any(project.mentions(module, f'"{m}"') for m in methods)):
            continue
        text = project.text(module)
        try:
            tree = ast.parse(text or "")
        except SyntaxError:
            continue
        found += _Collector(module, project.by_module[module].path, tree, methods).patches
    return [dataclasses.replace(p, callers=tuple(_callers(project, proto, p.function))) for p in found]


def _callers(project: Project, proto: Protocol, function: str) -> list[str]:
    """Where the plugins call ``function``, with the tests the call sits under."""
    found: list[str] = []
    for module in sorted(project.by_module):
        if not proto.in_plugin(module) or not project.mentions(module, f"{function}("):
            continue
        try:
            tree = ast.parse(project.text(module) or "")
        except SyntaxError:
            continue
        owners: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owners.append((node.name, node))
            elif isinstance(node, ast.ClassDef):
                owners += [(f"{node.name}.{m.name}", m) for m in node.body
                           if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for name, fn in owners:
            for stmt, tests in _statements(fn.body, ()):
                part = stmt.test if isinstance(stmt, (ast.If, ast.While)) else stmt
                if isinstance(stmt, (ast.For, ast.With, ast.Try)) or not any(
                        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == function
                        for n in ast.walk(part)):
                    continue
                when = f" when {' and '.join(ast.unparse(t) for t in tests)}" if tests else ""
                found.append(f"{name} at {project.by_module[module].path}:{stmt.lineno}{when}")
    return found[:3]


class _Collector:
    def __init__(self, module: str, path: str, tree: ast.Module, methods: tuple[str, ...]):
        self.module, self.path, self.methods = module, path, methods
        self.top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.patches: list[Patch] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(node)

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        imports = {a.asname or a.name: f"{n.module}.{a.name}" for n in ast.walk(fn) if isinstance(n, ast.ImportFrom)
                   and n.module and not n.level for a in n.names}
        locals_by: dict[str, list[tuple[str, tuple[str, ...]]]] = {}  # local -> (function name, isinstance classes)
        for stmt, tests in _statements(fn.body, ()):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Name):
                classes = tuple(imports.get(c, c) for t in tests for c in _isinstance_classes(t))
                locals_by.setdefault(stmt.targets[0].id, []).append((stmt.value.id, classes))
            target, value = _replaced(stmt, self.methods)
            if target is None or value is None:
                continue
            method = target[1]
            replacements = self._replacements(value, locals_by)
            if replacements:
                condition = " and ".join(ast.unparse(t) for t in tests)
                self.patches.append(Patch(self.module, self.path, fn.name, stmt.lineno, method, target[0], condition,
                                          tuple(replacements)))

    def _replacements(self, value: ast.expr, locals_by: dict[str, list[tuple[str, tuple[str, ...]]]]
                      ) -> list[Replacement]:
        # f.__get__(obj, type(obj)) / types.MethodType(f, obj): the function is f
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "__get__":
            value = value.func.value
        elif isinstance(value, ast.Call) and ast.unparse(value.func).endswith("MethodType") and value.args:
            value = value.args[0]
        factory = isinstance(value, ast.Call)
        name = value.func if isinstance(value, ast.Call) else value
        if not isinstance(name, ast.Name):
            return []
        bound = locals_by.get(name.id) or [(name.id, ())]
        found = []
        for function, classes in bound:
            node = self.top.get(function)
            if node is None:
                continue
            installed = _returned_function(node) if factory else node
            if installed is not None:
                qualname = f"{node.name}.{installed.name}" if factory else node.name
                calls, reads = _self_uses(installed)
                found.append(Replacement(self.module, qualname, installed.lineno, classes, calls, reads))
        return found


def _statements(body: Sequence[ast.stmt], tests: tuple[ast.expr, ...]):
    """Every statement with the if-tests it sits under (an elif's test after the negated ones before)."""
    for stmt in body:
        yield stmt, tests
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body, tests + (stmt.test,))
            yield from _statements(stmt.orelse, tests + (ast.UnaryOp(ast.Not(), stmt.test),))
        elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(stmt, field, []) or [], tests)
            for handler in getattr(stmt, "handlers", []):
                yield from _statements(handler.body, tests)


def _isinstance_classes(test: ast.expr) -> list[str]:
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
            and len(test.args) == 2:
        kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        return [ast.unparse(k) for k in kinds]
    return []


def _replaced(stmt: ast.stmt, methods: tuple[str, ...]) -> tuple[tuple[str, str] | None, ast.expr | None]:
    """(patched object, method) and the value of `obj.method = value` / `setattr(obj, "method", value)`."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute) \
            and stmt.targets[0].attr in methods:
        return (ast.unparse(stmt.targets[0].value), stmt.targets[0].attr), stmt.value
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) \
            and stmt.value.func.id == "setattr" and len(stmt.value.args) == 3:
        name = stmt.value.args[1]
        if isinstance(name, ast.Constant) and name.value in methods:
            return (ast.unparse(stmt.value.args[0]), str(name.value)), stmt.value.args[2]
    return None, None


def _returned_function(factory: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    inner = {n.name: n for n in factory.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for stmt in ast.walk(factory):
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) and stmt.value.id in inner:
            return inner[stmt.value.id]
    return None


def _self_uses(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    first = fn.args.args[0].arg if fn.args.args else "self"
    calls, reads = [], []
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == first:
            reads.append(node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == first:
            calls.append(node.func.attr)
    return tuple(dict.fromkeys(calls)), tuple(dict.fromkeys(reads))


def with_patches(resolver: Resolver, proto: Protocol, model: ModelResult, patches: Sequence[Patch]) -> ModelResult:
    """The model's chain with a hop for each run-time replacement of its state owner's forward."""
    if not patches or not model.state_owner or model.verdict in ("missing",):
        return model
    owner = _class_ref(resolver.project, model.state_owner)
    if owner is None:
        return model
    classes, _ = resolver.mro(owner)
    mro = [c.fullname for c in classes]
    hops = []
    for patch in patches:
        # only a replacement its branch's isinstance test chooses for this owner: an untyped patched
        # object (a layer, a module of any kind) is not known to be the state owner
        chosen = next((r for r in patch.replacements if r.classes and any(_names_class(c, mro) for c in r.classes)),
                      None)
        if chosen is None:
            continue
        when = f" when {patch.condition}" if patch.condition else ""
        callers = "".join(f"; called from {c}" for c in patch.callers)
        where = (f"run-time replacement of {patch.target}.{patch.method} at {patch.path}:{patch.line} "
                 f"({patch.function}{when}{callers})")
        reads = model.state_attribute in chosen.self_reads or any(
            readers_of(resolver, owner, model.state_attribute, (name,)).readers for name in chosen.self_calls
            if resolver.find_method(owner, name) is not None)
        qualname = f"{chosen.module}.{chosen.qualname}"
        if reads:
            hops.append(Hop("read", qualname, patch.path, chosen.line, f"{where}: it reads {model.state_attribute}"))
        else:
            hops.append(Hop("unresolved", qualname, patch.path, chosen.line, where,
                            reason=f"{where}: the replacement never reads {model.state_attribute}, so nothing is "
                                   "captured where it applies"))
    if not hops:
        return model
    return dataclasses.replace(model, chain=model.chain + tuple(hops))


def _names_class(dotted: str, mro: list[str]) -> bool:
    return any(full == dotted or full.endswith("." + dotted) for full in mro)


def _class_ref(project: Project, fullname: str) -> ClassRef | None:
    parts = fullname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in project.by_module:
            return ClassRef(module, ".".join(parts[cut:]))
    return None
