"""Expressions and calls of the flow: receivers typed, calls resolved against the
receiver's class and MRO, calls that carry the ids followed into the callee."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tracer.analysis.flow_values import (
    NONE,
    Atom,
    Call,
    ClassObj,
    Const,
    Env,
    Evaluator,
    Ids,
    Inst,
    Method,
    Opaque,
    Problem,
    Values,
    carries_config,
    closest,
    tainted,
    union_values,
)
from tracer.bind.syntax import BOOLEAN_BUILTINS, super_call, super_method
from tracer.resolve.resolver import ClassRef

if TYPE_CHECKING:
    from tracer.analysis.flow_values import Flow
    from tracer.resolve.resolver import Resolver

_PURE_BUILTINS = {"list", "tuple", "set", "sorted", "frozenset", "reversed", "min", "max", "sum", "int", "len",
                  "range", "enumerate", "zip", "map", "filter", "abs", "any", "all", "str", "dict", "iter", "next"}


class Expressions:
    """Mixin of the body walker: evaluating expressions."""

    a: Evaluator
    flow: Flow
    owner: ClassRef
    concrete: ClassRef
    value_mode: bool
    resolver: Resolver
    offset: int  # file line of the method's first line, minus one

    def line(self, node: ast.AST) -> int:
        raise NotImplementedError

    def truth(self, node: ast.expr, env: Env) -> bool | None:
        raise NotImplementedError

    def has(self, values: Values, name: str) -> bool | None:
        raise NotImplementedError

    def assign(self, target: ast.expr, value: Values, env: Env, node: ast.stmt) -> None:
        raise NotImplementedError

    def expr(self, node: ast.expr | None, env: Env) -> Values:
        if node is None:
            return NONE
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in ("True", "False", "None"):
                return (Const({"True": True, "False": False, "None": None}[node.id]),)
            found = self.resolver.resolve_class(self.owner.module, node.id)
            return (ClassObj(found),) if isinstance(found, ClassRef) else (Opaque(f"the name {node.id}"),)
        if isinstance(node, ast.Constant):
            return (Const(node.value),)
        if isinstance(node, ast.Attribute):
            return self.a.attribute(self.expr(node.value, env), node.attr)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.IfExp):
            decided = self.truth(node.test, env)
            if decided is True:
                return self.expr(node.body, env)
            if decided is False:
                return self.expr(node.orelse, env)
            return union_values(self.expr(node.body, env), self.expr(node.orelse, env))
        if isinstance(node, ast.BoolOp):
            return union_values(*(self.expr(v, env) for v in node.values))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = Env(env)
            any_ids = False
            for gen in node.generators:
                items = self.expr(gen.iter, inner)
                any_ids = any_ids or tainted(items)
                self.assign(gen.target, (Ids("an element of the ids"),) if tainted(items) else (Opaque("item"),),
                            inner, ast.Pass())
            elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            any_ids = any_ids or any(tainted(self.expr(e, inner)) for e in elements)
            return (Ids("computed from the ids"),) if any_ids else (Opaque("a comprehension"),)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            parts = [self.expr(e, env) for e in node.elts]
            return (Ids("a list holding the ids"),) if any(tainted(p) for p in parts) else (Const("a literal"),)
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        values = [self.expr(c, env) for c in children]
        if any(tainted(v) for v in values):
            return (Ids("computed from the ids"),)
        return (Opaque(type(node).__name__),)

    def call(self, node: ast.Call, env: Env) -> Values:
        args = [self.expr(a.value if isinstance(a, ast.Starred) else a, env) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords if k.arg}
        # `f(*args, **kwargs)`: carries the ids unless what is spread was built here from other values
        spread = [a.value for a in node.args if isinstance(a, ast.Starred)] + [
            k.value for k in node.keywords if k.arg is None]
        star = any(_may_hold_ids(self.expr(v, env)) for v in spread)
        carries = any(tainted(v) for v in args) or any(tainted(v) for v in kwargs.values()) or star
        # a config carrying the ids: calls receiving it are followed (to the reads of its
        # attribute), but its other attributes are not the ids
        config = any(carries_config(v) for v in args) or any(carries_config(v) for v in kwargs.values())
        func = node.func
        if isinstance(func, ast.Name) and func.id in env and any(isinstance(a, Method) for a in env[func.id]):
            return self.bound_call(node, env[func.id], args, kwargs, carries)
        if isinstance(func, ast.Name):
            if func.id == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                name = str(node.args[1].value)
                return self.getattr_value(args[0], name, args[2] if len(args) > 2 else None,
                                          f"{ast.unparse(node.args[0])}.{name}", node)
            if func.id in BOOLEAN_BUILTINS:
                return (Const("a bool"),)
            if super_call(node) is not None:
                return (Opaque("super()"),)
            if func.id in _PURE_BUILTINS or carries:
                return (Ids(f"{func.id}(...) of the ids"),) if carries else (Opaque(f"{func.id}(...)"),)
            found = self.resolver.resolve_class(self.owner.module, func.id)
            if isinstance(found, ClassRef):
                if config and not self.value_mode:
                    self.construct(node, found, args, kwargs)
                return (Inst(found, f"{func.id}(...)"),)
            return (Opaque(f"{func.id}(...)"),)
        if isinstance(func, ast.Attribute):
            method = func.attr
            source = ast.unparse(func)
            if super_method(func) is not None:
                return self.method_call(node, source, ((Inst(self.concrete, "super()"),)), method, args, kwargs,
                                        carries, after=self.owner, config=config)
            receivers = self.expr(func.value, env)
            return self.method_call(node, source, receivers, method, args, kwargs, carries, config=config)
        callee = self.expr(func, env)
        if any(isinstance(a, Method) for a in callee):
            return self.bound_call(node, callee, args, kwargs, carries)
        return (Ids("computed from the ids"),) if carries else (Opaque("a call"),)

    def construct(self, node: ast.Call, cls: ClassRef, args: list[Values], kwargs: dict[str, Values]) -> None:
        """``Cls(config, ...)`` with the config that carries the ids: its ``__init__`` is followed."""
        found = self.resolver.find_method(cls, "__init__")
        if found is None:
            return
        owner, _ = found
        how = "constructed here with the config" + ("" if owner == cls else f"; __init__ inherited from {owner.name}")
        call = Call(self.line(node), node.col_offset, ast.unparse(node.func), "__init__", owner, cls, how, True)
        self.flow.calls.append(call)
        call.flow = self.a.run(owner, cls, "__init__", args, kwargs)

    def bound_call(self, node: ast.Call, callee: Values, args: list[Values], kwargs: dict[str, Values],
                   carries: bool) -> Values:
        """Calling a method fetched by name: a call of that method on its object."""
        result: list[Atom] = []
        for atom in callee:
            if isinstance(atom, Method):
                at = node
                if atom.line:  # report at the lookup, where the name is written
                    at = ast.Call(func=node.func, args=node.args, keywords=node.keywords)
                    at.lineno, at.col_offset = atom.line - self.offset, atom.col
                result.extend(self.method_call(at, atom.source, (atom.inst,), atom.name, args, kwargs, carries))
            else:
                result.append(Ids("computed from the ids") if carries else Opaque("a call"))
        return tuple(dict.fromkeys(result))

    def getattr_value(self, base: Values, name: str, default: Values | None, source: str = "",
                      at: ast.expr | None = None) -> Values:
        out: list[Atom] = []
        for atom in base:
            if isinstance(atom, Inst) and default is None \
                    and not isinstance(self.resolver.attribute_types(atom.cls, name), list):
                # not an attribute the class is known to have: a method (or a missing one, which
                # the call then reports, as getattr would raise AttributeError there)
                out.append(Method(atom, name, source or name, self.line(at) if at is not None else 0,
                                  at.col_offset if at is not None else 0))
                continue
            has = self.has((atom,), name) if isinstance(atom, Inst) else None
            if has is False and default is not None:
                out.extend(Inst(v.cls, f"{v.how}; no {name} on {atom.cls.name}, getattr default")  # type: ignore[union-attr]
                           if isinstance(v, Inst) else v for v in default)
            else:
                found = self.a.attribute((atom,), name)
                out.extend(Inst(v.cls, f"getattr(..., {name!r}): {v.how}") if isinstance(v, Inst) else v for v in found)
        return tuple(dict.fromkeys(out))

    def method_call(self, node: ast.Call, source: str, receivers: Values, method: str, args: list[Values],
                    kwargs: dict[str, Values], carries: bool, after: ClassRef | None = None,
                    config: bool = False) -> Values:
        result: list[Atom] = []
        checked = carries or method in self.a.carriers  # a missing method here breaks the chain
        follows = checked or config
        for atom in self.a.typed(receivers):
            if isinstance(atom, Inst):
                found = self.resolver.find_method(atom.cls, method, after=after)
                if found is None:
                    typed = self.resolver.attribute_types(atom.cls, method) if after is None else None
                    if isinstance(typed, list):  # a callable attribute (a sub-module): calling it is its forward
                        result.extend(Opaque(f"{source}(...)") for _ in typed[:1])
                        continue
                    _, incomplete = self.resolver.mro(atom.cls)
                    if checked and not self.value_mode:
                        names = self.resolver.method_names_in_mro(atom.cls)
                        if incomplete:
                            self.flow.problems.append(Problem(
                                "opaque-receiver", self.line(node), node.col_offset, source,
                                f"{atom.cls.name} has no {method} in the part of its MRO that could be traced "
                                f"({incomplete[0]})", _receiver(source), method))
                        else:
                            self.flow.problems.append(Problem(
                                "missing-method", self.line(node), node.col_offset, source,
                                f"{_receiver(source)}, a {atom.cls.name} ({atom.how}), which has no {method}",
                                _receiver(source), method, closest(method, names)))
                    result.append(Opaque(f"{atom.cls.name} has no {method}"))
                    continue
                owner, _ = found
                if follows and not self.value_mode:
                    how = atom.how if owner == atom.cls else (
                        f"{atom.how}; inherited from {owner.name}" if atom.how not in ("self", "super()")
                        else f"inherited from {owner.name}")
                    given = bool(args or kwargs or node.args or node.keywords)
                    call = Call(self.line(node), node.col_offset, source, method, owner, atom.cls, how,
                                given and not _only_none(args, kwargs))
                    self.flow.calls.append(call)
                    bound_args = [a if tainted(a) else a for a in args]
                    if method in self.a.carriers and not carries:
                        bound_args = [(Ids("the ids the callee falls back to"),)]
                    call.flow = self.a.run(owner, atom.cls, method, bound_args, kwargs)
                    if call.flow is not None:
                        result.extend(call.flow.returns)
                else:
                    result.extend(self.a.method_value(atom.cls, method) if not args and not kwargs
                                  else (Opaque(f"{source}(...)"),))
            elif isinstance(atom, Ids):
                result.append(Ids(f"{method}() of the ids"))
            elif isinstance(atom, ClassObj):
                result.append(Opaque(f"{atom.cls.name}.{method}(...)"))
            else:
                if checked and (atom.rooted_at_self if isinstance(atom, Opaque) else False) and not self.value_mode:
                    self.flow.problems.append(Problem(
                        "opaque-receiver", self.line(node), node.col_offset, source,
                        atom.why if isinstance(atom, Opaque) else "not an object", _receiver(source), method))
                result.append(Ids(f"{method}(...) of the ids") if carries else Opaque(f"{source}(...)"))
        return tuple(dict.fromkeys(result)) or (Opaque(f"{source}(...)"),)




def _may_hold_ids(values: Values) -> bool:
    return tainted(values) or any(isinstance(a, Opaque) and a.why.startswith(("parameter ", "the name "))
                                  for a in values)


def _receiver(source: str) -> str:
    return source.rpartition(".")[0] or source


def _only_none(args: list[Values], kwargs: dict[str, Values]) -> bool:
    given = args + list(kwargs.values())
    return bool(given) and all(v == NONE for v in given)


def dotted_source(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_source(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


