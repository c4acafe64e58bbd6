"""One module's source (stdlib ``ast``) to its :class:`ModuleIR`: statements, SSA
joins at branches and loops, definitions with their decorators and defaults,
classes, imports. Nothing is imported or run."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from tracer.callgraph.abstract import abstract_attr
from tracer.callgraph.exprs import ExprCompiler, Shape, const_key
from tracer.callgraph.guards import narrowings
from tracer.callgraph.ir import ClassIR, ModuleIR, ScopeIR
from tracer.callgraph.prefixes import prefix_narrowings
from tracer.callgraph.protocols import BINOPS
from tracer.callgraph.scopes import Scope, assigned_names
from tracer.callgraph.typetests import type_narrowings
from tracer.callgraph.typing_only import IMPLICIT_CLASSMETHODS, implicit_classmethod, type_checking, typing_block
from tracer.index.source import resolve_relative

MUTATORS = {"append", "update", "extend"}
IN_PLACE = MUTATORS | {"setdefault", "insert", "add", "appendleft", "pop", "popitem"}


class Compiler(ExprCompiler):
    # -- blocks ---------------------------------------------------------------------------
    def block(self, scope: Scope, body: list[ast.stmt]) -> bool:
        """Compile statements; False when the block cannot fall through (return/raise)."""
        for stmt in body:
            if not self.stmt(scope, stmt):
                return False
        return True

    def merge(self, scope: Scope, envs: list[dict[str, frozenset[int]]]) -> None:
        if not envs:
            return
        names = dict.fromkeys(n for e in envs for n in e)  # in order: a set of str iterates by hash seed
        scope.env = {n: frozenset().union(*(e.get(n, frozenset()) for e in envs)) for n in names}

    def branches(self, scope: Scope, bodies: list[list[ast.stmt]], fallthrough_start: bool = False,
                 narrowed: list[tuple[str, int]] | None = None,
                 narrowed_else: list[tuple[str, int]] | None = None) -> bool:
        start = dict(scope.env)
        ends = [dict(start)] if fallthrough_start else []
        for i, body in enumerate(bodies):
            scope.env = dict(start)
            if i == 0 and narrowed:  # the first body runs only where the test holds (guards.py)
                scope.env.update((name, frozenset((var,))) for name, var in narrowed)
            if i == 1 and narrowed_else:  # the else only where it fails (prefixes.py)
                scope.env.update((name, frozenset((var,))) for name, var in narrowed_else)
            if self.block(scope, body):
                ends.append(scope.env)
        if not ends:
            scope.env = start
            return False
        self.merge(scope, ends)
        return True

    def loop(self, scope: Scope, body: list[ast.stmt], orelse: list[ast.stmt], head: Any = None) -> bool:
        phis: dict[str, int] = {}
        for name in sorted(assigned_names(body)):
            phi = self.var()
            for v in scope.env.get(name, ()):
                self.copy(phi, v)
            phis[name] = phi
            scope.env[name] = frozenset((phi,))
        if head is not None:
            head()
        self.__dict__.setdefault("loop_phis", []).append(phis)  # continue/break join here (jumped)
        self.block(scope, body)
        self.__dict__["loop_phis"].pop()
        for name, phi in phis.items():
            for v in scope.env.get(name, ()):
                self.copy(phi, v)
            scope.env[name] = frozenset((phi,))
        self.block(scope, orelse)
        return True

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, scope: Scope, node: ast.stmt) -> bool:  # noqa: C901 - one dispatch
        if isinstance(node, ast.Expr):
            if not isinstance(node.value, ast.Constant):
                if not self.mutation_call(scope, node.value):
                    self.untracked_mutation(scope, node.value)
                    self.expr(scope, node.value)
        elif isinstance(node, ast.Assign):
            value = self.expr(scope, node.value)
            for target in node.targets:
                self.assign(scope, target, value, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(scope, node.target, self.expr(scope, node.value), node.value)
            elif isinstance(node.target, ast.Name) and scope.kind != "class":
                pass
        elif isinstance(node, ast.AugAssign):
            self.aug_assign(scope, node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind(scope, node.name, self.function(scope, node))
        elif isinstance(node, ast.ClassDef):
            self.bind(scope, node.name, self.class_def(scope, node))
        elif isinstance(node, ast.Return):
            self.returns(scope, node)
            return False
        elif isinstance(node, ast.If):
            if type_checking(node.test) is not None:  # never run: typing_only.py
                return typing_block(self, scope, node)
            self.expr(scope, node.test)
            return self.branches(scope, [node.body, node.orelse],
                                 narrowed=narrowings(self, scope, node.test) + prefix_narrowings(self, scope, node.test)
                                 + type_narrowings(self, scope, node.test),
                                 narrowed_else=prefix_narrowings(self, scope, node.test, negated=True)
                                 + type_narrowings(self, scope, node.test, negated=True))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            source = self.expr(scope, node.iter)

            def head(node: ast.For | ast.AsyncFor = node, source: int = source) -> None:
                element = self.var()
                self.element_vars.add(element)  # a name bound here holds what a container held
                if source >= 0:
                    self.emit("aiter" if isinstance(node, ast.AsyncFor) else "iter", element, source, scope.edge,
                              node.lineno)
                self.assign(scope, node.target, element)
            return self.loop(scope, node.body, node.orelse, head)
        elif isinstance(node, ast.While):
            self.expr(scope, node.test)
            return self.loop(scope, node.body, node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            enter, exit_ = ("__aenter__", "__aexit__") if isinstance(node, ast.AsyncWith) else ("__enter__", "__exit__")
            managers = []
            for item in node.items:
                value = self.expr(scope, item.context_expr)
                if value >= 0:
                    entered = self.var()  # what __enter__ returns, and (outside the tree) the manager itself
                    self.emit("dunder", entered, value, (enter,), (), scope.edge, node.lineno)
                    self.copy(entered, value)
                    managers.append(value)
                    value = entered
                if item.optional_vars is not None:
                    self.assign(scope, item.optional_vars, value)
            ok = self.block(scope, node.body)
            for value in reversed(managers):
                self.emit("dunder", -1, value, (exit_,), (-1, -1, -1), scope.edge, node.lineno)
            return ok
        elif isinstance(node, (ast.Continue, ast.Break)) and self.__dict__.get("loop_phis"):
            # what follows ``if not ok: continue`` runs only where ok held (prefixes.py narrows it)
            for name, phi in self.__dict__["loop_phis"][-1].items():
                for v in scope.env.get(name, ()):
                    self.copy(phi, v)
            return False
        elif isinstance(node, ast.Raise):
            exc = self.expr(scope, node.exc)
            self.expr(scope, node.cause)
            if exc >= 0:
                self.emit("raise", exc, scope.edge, node.lineno)
            return False
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.try_(scope, node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                dst = self.var()
                if alias.asname:
                    self.emit("import", dst, alias.name)
                    self.bind(scope, alias.asname, dst)
                else:
                    self.emit("import", dst, alias.name.split(".")[0])
                    self.bind(scope, alias.name.split(".")[0], dst)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(self.module, self.is_package, node.level or 0, node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    self.emit("star", base)
                    continue
                dst = self.var()
                self.emit("from", dst, base, alias.name)
                self.bind(scope, alias.asname or alias.name, dst)
        elif isinstance(node, ast.Match):
            subject = self.expr(scope, node.subject)
            bodies = []
            for case in node.cases:
                for sub in ast.walk(case.pattern):
                    if isinstance(sub, ast.MatchAs) and sub.name and sub.pattern is None:
                        self.bind(scope, sub.name, subject)
                bodies.append(case.body)
            return self.branches(scope, bodies, fallthrough_start=True)
        elif isinstance(node, ast.Assert):
            self.expr(scope, node.test)
            self.expr(scope, node.msg)
            scope.env.update((n, frozenset((v,))) for n, v in narrowings(self, scope, node.test) + type_narrowings(self, scope, node.test))
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    obj, key = self.expr(scope, target.value), self.expr(scope, target.slice)
                    if obj >= 0:
                        self.emit("dunder", -1, obj, ("__delitem__",), (key,), scope.edge, node.lineno)
                elif not isinstance(target, ast.Name):
                    self.expr(scope, target)
        return True

    def try_(self, scope: Scope, node: Any) -> None:
        start = dict(scope.env)
        body_ok = self.block(scope, node.body)
        after_body = dict(scope.env)
        self.merge(scope, [start, after_body])
        handler_start = dict(scope.env)
        ends = []
        if body_ok:
            scope.env = dict(after_body)
            if self.block(scope, node.orelse):
                ends.append(scope.env)
        for handler in node.handlers:
            scope.env = dict(handler_start)
            kinds = self.expr(scope, handler.type)
            if handler.name:
                inst = self.var()
                if kinds >= 0:
                    self.emit("instance", inst, kinds)
                self.bind(scope, handler.name, inst)
            if self.block(scope, handler.body):
                ends.append(scope.env)
        self.merge(scope, ends or [handler_start])
        self.block(scope, node.finalbody)

    def returns(self, scope: Scope, node: ast.Return) -> None:
        value = node.value
        if (isinstance(value, ast.Name) and value.id in scope.params
                and scope.env.get(value.id) == frozenset((scope.params[value.id][1],))):
            scope.passthrough.add(scope.params[value.id][0])  # returned unchanged: per call site
            return
        self.copy(scope.ret, self.expr(scope, value))

    # -- assignment ------------------------------------------------------------------------------
    def assign(self, scope: Scope, target: ast.AST, value: int, source: ast.AST | None = None) -> None:
        if isinstance(target, ast.Name):
            self.bind(scope, target.id, value)
        elif isinstance(target, ast.Attribute):
            obj = self.expr(scope, target.value)
            if obj >= 0:
                self.emit("setattr", obj, target.attr, value, scope.edge, target.lineno)
        elif isinstance(target, ast.Subscript):
            if not self.shaped_setitem(scope, target, value):
                obj = self.expr(scope, target.value)
                key = self.expr(scope, target.slice)
                self.shapes.pop(obj, None)  # written in place: a later constant-key write derives no exact copy
                if isinstance(target.slice, ast.Slice) and value >= 0:  # a[i:j] = xs stores xs's elements
                    elements = self.var()
                    self.emit("iter", elements, value, scope.edge, target.lineno)
                    value = elements
                if obj >= 0:
                    self.emit("setitem", obj, key, value, scope.edge, target.lineno)  # (and __setitem__)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(scope, target, value, source)
        elif isinstance(target, ast.Starred):
            self.assign(scope, target.value, value)

    def unpack(self, scope: Scope, target: ast.Tuple | ast.List, value: int, source: ast.AST | None) -> None:
        elts = target.elts
        starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        shape = self.shapes.get(value)
        if shape is not None and shape.exact and shape.kind in ("list", "tuple") and (
                len(shape.keys) == len(elts) or starred):
            items = [shape.keys.get(i, -1) for i in range(len(shape.keys))]
            if not starred:
                for elt, item in zip(elts, items):
                    self.assign(scope, elt, item)
                return
            star = starred[0]
            after = len(elts) - star - 1
            for i, elt in enumerate(elts[:star]):
                self.assign(scope, elt, items[i] if i < len(items) else -1)
            middle = items[star:len(items) - after]
            self.assign(scope, elts[star], self.alloc("list", dict(enumerate(middle)), True))
            for j, elt in enumerate(elts[star + 1:]):
                k = len(items) - after + j
                self.assign(scope, elt, items[k] if 0 <= k < len(items) else -1)
            return
        for i, elt in enumerate(elts):
            part = self.var()
            if value >= 0:
                if isinstance(elt, ast.Starred):
                    self.emit("star_unpack", part, value, i, len(elts) - i - 1)
                elif starred and i > starred[0]:
                    self.emit("unpack", part, value, -1, len(elts))
                else:
                    self.emit("unpack", part, value, i, len(elts))
            self.assign(scope, elt, part)

    def shaped_root(self, scope: Scope, node: ast.AST) -> tuple[str, list[Any]] | None:
        """``d["a"]["b"]`` -> ("d", ["a", "b"]) when every key is a constant."""
        path: list[Any] = []
        while isinstance(node, ast.Subscript):
            key = const_key(node.slice)
            if key is None:
                return None
            path.append(key)
            node = node.value
        if not isinstance(node, ast.Name) or scope.kind == "class":
            return None
        return node.id, list(reversed(path))

    def derive(self, var: int, path: list[Any], value: int) -> int | None:
        shape = self.shapes.get(var)
        if shape is None or (shape.kind not in ("dict", "list")):
            return None
        keys = dict(shape.keys)
        key = path[0]
        if shape.kind == "list":
            if not shape.exact or not isinstance(key, int) or not -len(keys) <= key < len(keys):
                return None
            key %= len(keys)
        if len(path) == 1:
            keys[key] = value
        else:
            inner = keys.get(key)
            new_inner = self.derive(inner, path[1:], value) if inner is not None else None
            if new_inner is None:
                return None
            keys[key] = new_inner
        return self.alloc(shape.kind, keys, shape.exact)

    def current(self, scope: Scope, name: str) -> int | None:
        versions = scope.env.get(name)
        if versions is None or len(versions) != 1 or name in scope.global_decl or name in scope.nonlocal_decl:
            return None
        return next(iter(versions))

    def shaped_setitem(self, scope: Scope, target: ast.Subscript, value: int) -> bool:
        root = self.shaped_root(scope, target)
        if root is None:
            return False
        var = self.current(scope, root[0])
        new = self.derive(var, root[1], value) if var is not None else None
        if new is None:
            return False
        self.bind(scope, root[0], new)
        return True

    def mutation_call(self, scope: Scope, node: ast.AST) -> bool:
        """``ls.append(f)`` / ``d.update({...})`` / ``ls.extend([...])`` on a shaped local."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name)):
            return False
        var = self.current(scope, node.func.value.id) if scope.kind != "class" else None
        shape = self.shapes.get(var) if var is not None else None
        if shape is None or not shape.exact:
            return False
        keys = dict(shape.keys)
        method = node.func.attr
        if method == "append" and shape.kind == "list" and len(node.args) == 1 and not node.keywords:
            keys[len(keys)] = self.expr(scope, node.args[0])
        elif method == "extend" and shape.kind == "list" and len(node.args) == 1:
            other = self.shapes.get(self.expr(scope, node.args[0]))
            if other is None or not other.exact or other.kind not in ("list", "tuple"):
                return False
            for i in range(len(other.keys)):
                keys[len(keys)] = other.keys[i]
        elif method == "update" and shape.kind == "dict" and len(node.args) <= 1:
            if node.args:
                other = self.shapes.get(self.expr(scope, node.args[0]))
                if other is None or not other.exact or other.kind != "dict":
                    return False
                keys.update(other.keys)
            for kw in node.keywords:
                if kw.arg is None:
                    return False
                keys[kw.arg] = self.expr(scope, kw.value)
        else:
            return False
        self.calls += 1
        self.bind(scope, node.func.value.id, self.alloc(shape.kind, keys, True))
        return True

    def untracked_mutation(self, scope: Scope, node: ast.AST) -> None:
        """``d.update(other)`` / ``d.setdefault(k, v)`` the shape cannot follow: the container changes in
        place, so a later ``d["k"] = v`` must not derive an exact copy that forgets it."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
                and isinstance(node.func.value, ast.Name) and scope.kind != "class"):
            var = self.current(scope, node.func.value.id)
            if var is not None:
                self.shapes.pop(var, None)

    def aug_assign(self, scope: Scope, node: ast.AugAssign) -> None:
        right = self.expr(scope, node.value)
        target = node.target
        names = (f"__i{BINOPS[type(node.op)][2:]}", BINOPS[type(node.op)])
        if isinstance(target, ast.Name):
            left = self.read(scope, target.id)
            if left >= 0:
                self.emit("dunder", -1, left, names, (right,), scope.edge, node.lineno)
            if isinstance(node.op, ast.Add) and left >= 0 and right >= 0:
                dst = self.var()
                self.emit("binop", dst, left, right)
                self.bind(scope, target.id, dst)
            elif left < 0:
                self.bind(scope, target.id, -1)
        elif isinstance(target, ast.Attribute):
            obj = self.expr(scope, target.value)
            if obj >= 0:
                current = self.var()
                self.emit("attr", current, obj, target.attr, scope.edge, target.lineno)
                self.emit("dunder", -1, current, names, (right,), scope.edge, node.lineno)
                if isinstance(node.op, ast.Add) and right >= 0:
                    self.emit("setattr", obj, target.attr, right, scope.edge, target.lineno)
        else:
            self.expr(scope, target)

    # -- definitions ------------------------------------------------------------------------------
    def decorators(self, scope: Scope, nodes: list[ast.expr]) -> list[tuple[int, int]]:
        return [(self.expr(scope, d), d.lineno) for d in nodes]

    def decorate(self, scope: Scope, value: int, decs: list[tuple[int, int]]) -> int:
        for dec, line in reversed(decs):
            if dec < 0:
                continue  # a decorator of no known value: the name keeps the function
            dst = self.var()
            self.emit("decorate", dst, dec, value, scope.edge, line)
            value = dst
        return value

    def function(self, scope: Scope, node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
        decs = self.decorators(scope, node.decorator_list) + implicit_classmethod(self, scope, node)
        qual = scope.child_qual(node.name)
        start = (len(self.instrs), self.nvars, len(self.scope_irs))
        inner = self.new_scope("function", qual, scope, node.body, node.lineno)
        method = ""
        if scope.kind == "class":
            names = {d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else ""
                     for d in node.decorator_list}
            method = "static" if "staticmethod" in names else "class" if "classmethod" in names or (
                node.name in IMPLICIT_CLASSMETHODS) else "instance"
            inner.owner = scope.owner
        params = self.params(inner, node.args, scope)
        if method in ("instance", "class") and params and params[0].kind in ("pos", "posonly"):
            inner.first_param = params[0].var
        if node.returns is not None:
            self.copy(inner.ret, self.annotation(scope, node.returns))
        self.block(inner, node.body)
        self.finish_scope(inner, "function", node.lineno, params, inner.owner, method)
        if method != "class":  # its code, to be installed again per receiver class (clones.py)
            span = (start[0], len(self.instrs), start[1], self.nvars, len(self.scope_irs))
            self.scope_irs[inner.edge] = dataclasses.replace(self.scope_irs[inner.edge], span=span)  # type: ignore[type-var]
        dst = self.var()
        self.emit("func", dst, inner.edge)
        return self.decorate(scope, dst, decs)

    def class_def(self, scope: Scope, node: ast.ClassDef) -> int:
        decs = self.decorators(scope, node.decorator_list)
        # ``class C(Base[T])``: the base is Base (what ``__class_getitem__``/``__mro_entries__`` give back)
        bases = tuple(self.expr(scope, b.value if isinstance(b, ast.Subscript) else b) for b in node.bases)
        for kw in node.keywords:
            self.expr(scope, kw.value)
        index = len(self.classes)
        self.classes.append(None)
        body = Scope("class", scope.child_qual(node.name), scope.edge, scope)
        from tracer.callgraph.scopes import analyse_scope

        analyse_scope(body, node.body)
        body.owner = index
        self.block(body, node.body)
        attrs = tuple(sorted((*((name, self.phi(versions)) for name, versions in body.env.items()), *abstract_attr(self, node))))
        self.classes[index] = ClassIR(f"{self.module}.{body.qual}", node.lineno, bases, attrs)
        dst = self.var()
        self.emit("class", dst, index)
        return self.decorate(scope, dst, decs)

    # -- the module ---------------------------------------------------------------------------------
    def module_ir(self, tree: ast.Module, path: str) -> ModuleIR:
        top = self.new_scope("module", "", None, tree.body, 1)  # type: ignore[arg-type]
        self.block(top, tree.body)
        self.finish_scope(top, "module", 1, ())
        for name, versions in top.env.items():
            for v in versions:
                self.copy(self.ns_var(name), v)
        for scope in self.scopes_all:  # closures see every version of the names they read
            for name, whole in scope.whole.items():
                for v in scope.versions.get(name, ()):
                    self.copy(whole, v)
        scopes = tuple(s for s in self.scope_irs if s is not None)
        assert len(scopes) == len(self.scope_irs)
        return ModuleIR(self.module, path, self.is_package, self.nvars, scopes, tuple(self.classes),
                        tuple(sorted(self.ns.items())), tuple(self.instrs), self.calls)


def compile_module(module: str, path: str, is_package: bool, source: str) -> ModuleIR:
    """The module's IR; a module that does not parse (or is too deep) is an IR with ``error``."""
    try:
        tree = ast.parse(source, filename=path)
        return Compiler(module, is_package).module_ir(tree, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        top = ScopeIR(module, "module", 1)
        return ModuleIR(module, path, is_package, 0, (top,), (), (), (), 0, f"{type(exc).__name__}: {exc}")


__all__ = ["Compiler", "Shape", "compile_module"]
