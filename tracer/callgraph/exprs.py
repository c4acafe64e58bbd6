"""Expressions to instructions: each expression that can hold a function, class,
instance, module or container gets a variable; the rest are compiled only for the
calls inside them (and give -1, "no value of interest")."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from tracer.bind.syntax import super_call, super_method
from tracer.callgraph.ir import Instr, Param, ScopeIR
from tracer.callgraph.prefixes import prefix_narrowings
from tracer.callgraph.protocols import OperatorCompiler
from tracer.callgraph.scopes import Scope, analyse_scope
from tracer.callgraph.typing_only import annotation_expr, format_dunders


@dataclass
class Shape:
    """A container literal bound to a local, known key by key at compile time, so a
    mutation through the name (``d["a"] = f``, ``ls.append(f)``, ``d.update({...})``)
    makes a new version instead of changing the one earlier readers saw."""

    kind: str  # "list" | "tuple" | "dict" | "set"
    keys: dict[Any, int]  # constant key -> var of its value
    exact: bool  # the keys are all there is (no ``*x``/``**x``, no unknown key)


def const_key(node: ast.AST) -> Any:
    """The key a constant subscript names (None when it is not a constant): a short string
    without blanks (messages and docstrings are no keys) or a small int."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if len(node.value) <= 64 and not any(c.isspace() for c in node.value) else None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value if -64 <= node.value <= 1024 else None
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int)):
        return -node.operand.value
    return None




def key_value(key: Any) -> tuple[str, str, Any]:
    return ("k", type(key).__name__, key)


class ExprCompiler(OperatorCompiler):
    def __init__(self, module: str, is_package: bool):
        self.module = module
        self.is_package = is_package
        self.nvars = 0
        self.instrs: list[Instr] = []
        self.scope_irs: list[ScopeIR | None] = []
        self.classes: list[Any] = []
        self.ns: dict[str, int] = {}  # module-level name -> its namespace var
        self.glob_cache: dict[str, int] = {}
        self.const_cache: dict[Any, int] = {}
        self.phi_cache: dict[frozenset[int], int] = {}
        self.shapes: dict[int, Shape] = {}
        self.annotation_names: tuple[str, ...] = ()  # the names the last annotation_classes() read
        self.calls = 0
        self.scopes_all: list[Scope] = []
        self.element_vars: set[int] = set()  # loop variables: a function called through one was passed around

    # -- variables -----------------------------------------------------------------
    def var(self) -> int:
        self.nvars += 1
        return self.nvars - 1

    def emit(self, *instr: Any) -> None:
        self.instrs.append(instr)

    def copy(self, dst: int, src: int) -> None:
        if src >= 0 and dst >= 0 and src != dst:
            self.emit("copy", dst, src)

    def const(self, key: Any) -> int:
        found = self.const_cache.get((type(key), key))
        if found is None:
            found = self.const_cache[(type(key), key)] = self.var()
            self.emit("const", found, key_value(key))
        return found

    def phi(self, versions: frozenset[int]) -> int:
        live = frozenset(v for v in versions if v >= 0)
        if not live:
            return -1
        if len(live) == 1:
            return next(iter(live))
        found = self.phi_cache.get(live)
        if found is None:
            found = self.phi_cache[live] = self.var()
            for v in sorted(live):
                self.copy(found, v)
        return found

    def ns_var(self, name: str) -> int:
        found = self.ns.get(name)
        if found is None:
            found = self.ns[name] = self.var()
        return found

    def glob(self, name: str) -> int:
        found = self.glob_cache.get(name)
        if found is None:
            found = self.glob_cache[name] = self.var()
            self.emit("glob", found, name)
        return found

    def whole(self, scope: Scope, name: str) -> int:
        found = scope.whole.get(name)
        if found is None:
            found = scope.whole[name] = self.var()
        return found

    # -- names -----------------------------------------------------------------------
    def read(self, scope: Scope, name: str) -> int:
        s: Scope | None = scope
        if scope.kind == "class":
            if name in scope.env:
                return self.phi(scope.env[name])
            s = scope.function_parent()
            if s is not None and s.kind != "module" and name in s.env:
                return self.whole(s, name)
        elif name in scope.global_decl:
            return self.glob(name)
        elif name in scope.env:
            return self.phi(scope.env[name])
        elif name in scope.bound or name in scope.params:
            return self.glob(name) if scope.kind == "module" else -1
        else:
            s = scope.function_parent()
        while s is not None:
            if s.kind == "module":
                return self.glob(name)
            if name in s.global_decl:
                return self.glob(name)
            if name in s.bound or name in s.params:
                return self.whole(s, name)
            s = s.function_parent()
        return self.glob(name)

    def bind(self, scope: Scope, name: str, var: int) -> None:
        if scope.kind != "class" and name in scope.global_decl:
            self.copy(self.ns_var(name), var)
            return
        if scope.kind != "class" and name in scope.nonlocal_decl:
            s = scope.function_parent()
            while s is not None and s.kind != "module" and name not in s.bound:
                s = s.function_parent()
            if s is not None and s.kind != "module":
                self.copy(self.whole(s, name), var)
            return
        if var < 0:
            var = self.var()  # a binding to nothing of interest still hides older versions
        scope.env[name] = frozenset((var,))
        scope.versions.setdefault(name, []).append(var)

    # -- expressions ---------------------------------------------------------------------
    def expr(self, scope: Scope, node: ast.AST | None) -> int:  # noqa: C901 - one dispatch
        if node is None:
            return -1
        if isinstance(node, ast.Name):
            return self.read(scope, node.id)
        if isinstance(node, ast.Attribute):
            obj = self.expr(scope, node.value)
            if obj < 0:
                return -1
            dst = self.var()
            self.emit("attr", dst, obj, node.attr, scope.edge, node.lineno)
            return dst
        if isinstance(node, ast.Call):
            return self.call(scope, node)
        if isinstance(node, ast.Constant):
            key = const_key(node)
            return self.const(key) if key is not None else -1
        if isinstance(node, ast.Subscript):
            return self.subscript(scope, node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return self.sequence(scope, node)
        if isinstance(node, ast.Dict):
            return self.dict_literal(scope, node)
        if isinstance(node, ast.Lambda):
            return self.lambda_(scope, node)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(scope, node)
        if isinstance(node, ast.BoolOp):
            return self.phi(frozenset(self.expr(scope, v) for v in node.values))
        if isinstance(node, ast.IfExp):
            self.expr(scope, node.test)
            return self.phi(frozenset((self.expr(scope, node.body), self.expr(scope, node.orelse))))
        if isinstance(node, ast.NamedExpr):
            value = self.expr(scope, node.value)
            target = scope
            while target.kind == "class" and target.parent is not None:
                target = target.parent
            self.bind(target, node.target.id, value)
            return value
        if isinstance(node, ast.Await):
            return self.expr(scope, node.value)
        if isinstance(node, ast.Yield):
            value = self.expr(scope, node.value)
            if scope.yields >= 0:
                self.copy(scope.yields, value)
            return -1
        if isinstance(node, ast.YieldFrom):
            value = self.expr(scope, node.value)
            if value >= 0 and scope.yields >= 0:
                self.emit("iter", scope.yields, value, scope.edge, node.lineno)
            return -1
        found = self.operator(scope, node)
        if found is not None:
            return found
        if isinstance(node, ast.Starred):
            return self.expr(scope, node.value)
        for child in ast.iter_child_nodes(node):  # comparisons, f-strings, unary operators, ...
            self.expr(scope, child)
        return -1

    def subscript(self, scope: Scope, node: ast.Subscript) -> int:
        obj = self.expr(scope, node.value)
        if isinstance(node.slice, ast.Slice):
            lo = const_key(node.slice.lower) if node.slice.lower is not None else 0
            hi = const_key(node.slice.upper) if node.slice.upper is not None else None
            for part in (node.slice.lower, node.slice.upper, node.slice.step):
                self.expr(scope, part)
            shape = self.shapes.get(obj)
            if (shape and shape.exact and node.slice.step is None and isinstance(lo, int)
                    and (hi is None or isinstance(hi, int)) and shape.kind in ("list", "tuple")):
                items = [shape.keys[i] for i in range(len(shape.keys))][lo:hi]
                return self.alloc(shape.kind, dict(enumerate(items)), True)
            if obj < 0:
                return -1
            dst = self.var()  # a list's slice holds (some of) the same elements (generators.slice_value)
            self.emit("slice", dst, obj, scope.edge, node.lineno)
            return dst
        key = self.expr(scope, node.slice)
        if obj < 0:
            return -1
        dst = self.var()
        self.emit("item", dst, obj, key, scope.edge, node.lineno)  # (an instance's __getitem__ runs)
        return dst

    def alloc(self, kind: str, keys: dict[Any, int], exact: bool) -> int:
        dst = self.var()
        self.emit("alloc", dst, kind, len(keys) if exact else -1)
        for key, value in keys.items():
            if value >= 0 or kind == "dict":  # a dict's key is there (``for k in d``) whatever its value
                self.emit("setitem", dst, self.const(key), value)
        self.shapes[dst] = Shape(kind, dict(keys), exact)
        return dst

    def sequence(self, scope: Scope, node: ast.List | ast.Tuple | ast.Set) -> int:
        kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(node)]
        keys: dict[Any, int] = {}
        spread: list[int] = []
        for i, elt in enumerate(node.elts):
            if isinstance(elt, ast.Starred):
                spread.append(self.expr(scope, elt.value))
            else:
                keys[i] = self.expr(scope, elt)
        if spread:
            dst = self.var()
            self.emit("alloc", dst, kind, -1)
            for value in keys.values():
                if value >= 0:
                    self.emit("setitem", dst, -1, value)
            for value in spread:
                if value >= 0:
                    elements = self.var()
                    self.emit("iter", elements, value, scope.edge, node.lineno)
                    self.emit("setitem", dst, -1, elements)
            return dst
        return self.alloc(kind, keys, True)

    def dict_literal(self, scope: Scope, node: ast.Dict) -> int:
        keys: dict[Any, int] = {}
        others: list[tuple[int, int]] = []
        merged: list[int] = []
        for k, v in zip(node.keys, node.values):
            if k is None:
                merged.append(self.expr(scope, v))
                continue
            key, kvar, value = const_key(k), self.expr(scope, k), self.expr(scope, v)
            if key is not None:
                keys[key] = value
            else:
                others.append((kvar, value))
        dst = self.alloc("dict", keys, not others and not merged)
        for kvar, value in others:
            if value >= 0:
                self.emit("setitem", dst, kvar, value)
        for src in merged:
            if src >= 0:
                self.emit("merge", dst, src)
        return dst

    def comprehension(self, scope: Scope, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> int:
        saved = dict(scope.env)
        for gen in node.generators:
            source = self.expr(scope, gen.iter)
            element = self.var()
            if source >= 0:
                self.emit("iter", element, source, scope.edge, gen.iter.lineno)
            self.assign(scope, gen.target, element)
            for cond in gen.ifs:
                self.expr(scope, cond)
                # the element past ``if name.startswith("p_")`` is a name of that start (prefixes.py)
                scope.env.update((name, frozenset((var,))) for name, var in prefix_narrowings(self, scope, cond))
        dst = self.var()
        self.emit("alloc", dst, {ast.DictComp: "dict", ast.SetComp: "set"}.get(type(node), "list"), -1)  # `in`: keyeq
        if isinstance(node, ast.DictComp):
            key, value = self.expr(scope, node.key), self.expr(scope, node.value)
            if value >= 0:
                self.emit("setitem", dst, key, value)
        else:
            value = self.expr(scope, node.elt)
            if value >= 0:
                self.emit("setitem", dst, -1, value)
        for name in list(scope.env):  # the comprehension's own names do not leak
            if name not in saved:
                del scope.env[name]
            else:
                scope.env[name] = saved[name]
        return dst

    def call(self, scope: Scope, node: ast.Call) -> int:
        self.calls += 1
        func = node.func
        if super_call(node) is not None and "super" not in self.ns:
            return self.super_call(scope, node)
        fn = self.expr(scope, func)
        args = tuple((self.expr(scope, a.value), True) if isinstance(a, ast.Starred) else (self.expr(scope, a), False)
                     for a in node.args)
        kwargs = tuple((kw.arg, self.expr(scope, kw.value)) for kw in node.keywords)
        dst = self.var()
        kind, shape = self.call_kind(scope, func)
        self.emit("call", dst, fn, args, kwargs, scope.edge, node.lineno, kind, shape)
        if (isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant)
                and isinstance(func.value.value, str) and "{" in func.value.value):
            self.copy(dst, self.prefix(func.value.value[:func.value.value.index("{")]))  # "_do_{}".format(x)
            format_dunders(self, scope, args, kwargs, node.lineno)  # each argument formatted (typing_only.py)
        return dst

    def call_kind(self, scope: Scope, func: ast.AST) -> tuple[str, str]:
        if super_method(func) is not None:
            return "super", "super"
        if isinstance(func, ast.Name):
            s: Scope | None = scope
            while s is not None and s.kind == "class":
                s = s.parent
            if s is not None and func.id in s.params and s.env.get(func.id) == frozenset((s.params[func.id][1],)):
                return "callback", "parameter"
            versions = s.env.get(func.id) if s is not None else None
            if versions and versions <= self.element_vars:
                return "callback", "element"
            return "call", "name"
        if isinstance(func, ast.Attribute):
            base = func.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                return "call", "self-attribute"
            return "call", "attribute"
        if isinstance(func, ast.Call):
            return "call", "call-result"
        if isinstance(func, ast.Subscript):
            return "call", "subscript"
        return "call", "expression"

    def super_call(self, scope: Scope, node: ast.Call) -> int:
        dst = self.var()
        if len(node.args) >= 2:
            cls_var, self_var = self.expr(scope, node.args[0]), self.expr(scope, node.args[1])
            self.emit("super", dst, -1, self_var, cls_var)
            return dst
        s: Scope | None = scope
        while s is not None and s.kind in ("lambda", "function") and s.owner < 0:
            s = s.function_parent()  # a nested function or comprehension inside the method
        if s is None or s.owner < 0 or s.first_param < 0:
            return -1
        self_var = s.first_param if s is scope else self.whole(s, next(iter(s.params)))
        self.emit("super", dst, s.owner, self_var, -1)
        return dst

    # -- functions -----------------------------------------------------------------------
    def new_scope(self, kind: str, qual: str, parent: Scope, body: list[Any], line: int) -> Scope:
        index = len(self.scope_irs)
        self.scope_irs.append(None)
        scope = Scope(kind, qual, index, parent)
        analyse_scope(scope, body)
        scope.ret = self.var()
        if scope.generator:
            scope.yields = self.var()
        self.scopes_all.append(scope)
        return scope

    def params(self, scope: Scope, args: ast.arguments, defaults_scope: Scope) -> tuple[Param, ...]:
        out: list[Param] = []
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        rows: list[tuple[ast.arg, str, ast.expr | None]] = [
            (a, "posonly" if i < len(args.posonlyargs) else "pos", d) for i, (a, d) in enumerate(zip(positional, defaults))]
        if args.vararg:
            rows.append((args.vararg, "star", None))
        rows += [(a, "kw", d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
        if args.kwarg:
            rows.append((args.kwarg, "dstar", None))
        for index, (arg, kind, default) in enumerate(rows):
            var = self.var()
            self.copy(var, self.expr(defaults_scope, default))
            if arg.annotation is not None:
                classes, plain = self.annotation_classes(defaults_scope, arg.annotation)
                self.copy(var, self.instances_of(classes))
                if plain and kind not in ("star", "dstar"):  # an argument is kept where the annotation admits it
                    self.emit("narrow", var, tuple(classes), self.annotation_names)
            scope.params[arg.arg] = (index, var)
            scope.env[arg.arg] = frozenset((var,))
            scope.versions.setdefault(arg.arg, []).append(var)
            out.append(Param(arg.arg, var, kind))
        return tuple(out)

    def annotation(self, scope: Scope, node: ast.expr) -> int:
        """Instances of the classes an annotation names (``C``, ``"C"``, ``Optional[C]``, ``C | None``)."""
        return self.instances_of(self.annotation_classes(scope, node)[0])

    def instances_of(self, classes: list[int]) -> int:
        if not classes:
            return -1
        dst = self.var()
        for cls in classes:
            self.emit("instance", dst, cls)
        return dst

    def annotation_classes(self, scope: Scope, node: ast.expr) -> tuple[list[int], bool]:
        """The vars of the names an annotation is a union of (``C``, ``"C"``, ``Optional[C]``,
        ``C | None``), and whether that is all it says: False when some part is no plain name
        (``list[C]``, ``Callable[...]``, a string that does not parse), which narrows nothing."""
        names: list[ast.expr] = []
        plain = True
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, ast.Constant) and isinstance(cur.value, str):
                try:
                    stack.append(ast.parse(cur.value, mode="eval").body)
                except SyntaxError:
                    plain = False
            elif isinstance(cur, ast.Subscript):
                if isinstance(cur.value, (ast.Name, ast.Attribute)) and (
                        (cur.value.id if isinstance(cur.value, ast.Name) else cur.value.attr) in ("Optional", "Union")):
                    inner = cur.slice
                    stack.extend(inner.elts if isinstance(inner, ast.Tuple) else [inner])
                else:
                    plain = False
            elif isinstance(cur, ast.BinOp) and isinstance(cur.op, ast.BitOr):
                stack.extend((cur.left, cur.right))
            elif isinstance(cur, (ast.Name, ast.Attribute)):
                names.append(cur)
            elif not (isinstance(cur, ast.Constant) and cur.value is None):
                plain = False
        out = [cls for cls in (annotation_expr(self, scope, name) for name in names) if cls >= 0]  # typing_only.py
        self.annotation_names = tuple(n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in names)
        return out, plain and bool(out) and len(out) == len(names)

    def lambda_(self, scope: Scope, node: ast.Lambda) -> int:
        name = self.owner_of_lambdas(scope).lambdas.get(id(node), "<lambda>")
        qual = self.owner_of_lambdas(scope).child_qual(name)
        inner = self.new_scope("lambda", qual, scope, [node.body], node.lineno)
        params = self.params(inner, node.args, scope)
        self.copy(inner.ret, self.expr(inner, node.body))
        self.finish_scope(inner, "lambda", node.lineno, params)
        dst = self.var()
        self.emit("func", dst, inner.edge)
        return dst

    def owner_of_lambdas(self, scope: Scope) -> Scope:
        return scope

    def finish_scope(self, scope: Scope, kind: str, line: int, params: tuple[Param, ...],
                     owner: int = -1, method: str = "") -> None:
        name = f"{self.module}.{scope.qual}" if scope.qual else self.module
        self.scope_irs[scope.edge] = ScopeIR(name, kind, line, params, scope.ret, scope.yields,
                                             tuple(sorted(scope.passthrough)), owner, method)

    def assign(self, scope: Scope, target: ast.AST, value: int) -> None:
        raise NotImplementedError  # statements.py
