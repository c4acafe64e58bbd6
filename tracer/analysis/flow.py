"""Value flow through one method body (the stdlib ast), demand-driven from the setter.

The layer ids are a value (:class:`Ids`): bound to the setter's ids parameter,
carried through locals, comprehensions, builtins and any call that receives them,
into whatever attribute stores them. Receivers are values too (:class:`Inst`, an
instance of a class of the tree, typed by the resolver): every call is resolved
against its receiver's class and MRO, so a method that is not there is found
whatever its name, and a call carrying the ids is followed whatever its name. Tests
the code can decide statically (``hasattr``/``isinstance`` on a known class, ``x is
None`` on an object) pick their branch; the others run both branches. Nothing here
knows a framework: the caller says which names carry the ids without taking them
(``carriers``) and what a getter returns when its body cannot be read (``hints``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from tracer.analysis.flow_body import BodyWalker
from tracer.analysis.flow_values import (
    NONE,
    Atom,
    Call,
    Carrier,
    ClassObj,
    Const,
    Env,
    Flow,
    Ids,
    Inst,
    Method,
    Opaque,
    Problem,
    Values,
    Write,
    closest,
    tainted,
)
from tracer.index.project import Project
from tracer.index.reads import Memo
from tracer.resolve.resolver import ClassRef, Resolver

MAX_DEPTH = 12  # followed calls, one inside the other


class FlowAnalysis:
    """Evaluates methods of the tree for one entry class's chain."""

    def __init__(self, resolver: Resolver, carriers: set[str], hints: dict[str, str],
                 path_of: Callable[[str], str]):
        self.resolver = resolver
        self.project: Project = resolver.project
        self.carriers = carriers
        self.hints = hints
        self.path_of = path_of
        self._stack: list[tuple[ClassRef, str]] = []
        self._parsed: dict[tuple[str, str], tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None] = {}
        self._values: Memo[Values] = Memo(self.project.reads)  # getters' values, with the modules behind them

    # -- sources --------------------------------------------------------------------------------
    def function(self, cls: ClassRef, name: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
        """The ast of a method and the offset that turns its lines into file lines."""
        key = (cls.module, f"{cls.qualname}.{name}")
        self.project.reads.touch(cls.module)
        if key not in self._parsed:
            parsed = self.project.function_ast(*key)  # parsed where it stands: the file's lines and columns
            found = None
            node = parsed[0].body[0] if parsed is not None and parsed[0].body else None
            if parsed is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found = (node, parsed[1])
            self._parsed[key] = found
        return self._parsed[key]

    # -- running a method -------------------------------------------------------------------------
    def run(self, owner: ClassRef, concrete: ClassRef, name: str, args: list[Values] | None = None,
            kwargs: dict[str, Values] | None = None, ids_param: str = "", value_mode: bool = False) -> Flow | None:
        """Evaluate ``owner.name`` on an instance of ``concrete`` with the given arguments
        (the first positional parameter after self receives ``args[0]``...)."""
        found = self.function(owner, name)
        if found is None:
            return None
        node, offset = found
        flow = Flow(owner, concrete, name, self.path_of(owner.module), node.lineno + offset, node.col_offset,
                    ids_param)
        key = (concrete, f"{owner.fullname}.{name}")
        if key in self._stack:
            flow.problems.append(Problem("cycle", flow.line, 0, f"{owner.name}.{name}",
                                         f"{owner.name}.{name} is reached again from itself"))
            return flow
        if len(self._stack) > MAX_DEPTH:
            flow.problems.append(Problem("depth", flow.line, 0, f"{owner.name}.{name}", "delegation deeper than the bound"))
            return flow
        env = Env()
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        if params and params[0] in ("self", "cls"):
            env[params[0]] = (Inst(concrete, "self"),)
            params = params[1:]
        defaults = dict(zip(reversed(params), reversed(node.args.defaults)))
        given = list(args or [])
        for index, param in enumerate(params):
            if index < len(given):
                env[param] = given[index]
            elif kwargs and param in kwargs:
                env[param] = kwargs[param]
            elif param in defaults:
                env[param] = self._default(defaults[param], owner)
            else:
                env[param] = (Opaque(f"parameter {param}"),)
        for arg in node.args.kwonlyargs:
            env[arg.arg] = (kwargs or {}).get(arg.arg, (Opaque(f"parameter {arg.arg}"),))
        self._stack.append(key)
        try:
            BodyWalker(self, flow, owner, concrete, offset, value_mode, node).run(node.body, env)
        finally:
            self._stack.pop()
        return flow

    def _default(self, node: ast.expr, owner: ClassRef) -> Values:
        if isinstance(node, ast.Constant):
            return (Const(node.value),)
        return (Opaque("a default value"),)

    def method_value(self, concrete: ClassRef, name: str) -> Values:
        """What ``self.name()`` returns on an instance of ``concrete`` (a getter)."""
        found = self.resolver.find_method(concrete, name)
        if found is None:
            return (Opaque(f"{concrete.name} has no {name}()"),)
        owner, _ = found
        key = (concrete, owner, name)
        known = self._values.get(key)
        if known is not None:
            return known
        self._values.put(key, (Opaque("a getter that returns itself"),))
        with self.project.reads.record() as modules:
            flow = self.run(owner, concrete, name, value_mode=True)
            values: Values = flow.returns if flow is not None and flow.returns else (Opaque(f"{name}() returns nothing readable"),)
            if any(isinstance(v, Opaque) for v in values) and name in self.hints:
                # the body could not be read to the end: the pack's statement of what it returns
                values = self._hinted(concrete, name) or values
        self._values.put(key, values, modules)
        return values

    def _hinted(self, concrete: ClassRef, name: str) -> Values:
        """A protocol pack's statement of what a getter returns: ``name=self.attr``, or
        ``name=with self.ctx`` (the attributes ``__init__`` assigns inside ``with
        self.ctx(...):``); several, ``|``-separated, are tried in order."""
        for path in self.hints[name].split("|"):
            path = path.strip()
            if path.startswith("with "):
                attrs = self._assigned_within(concrete, path[len("with "):].strip())
                how = f"assigned inside `with {path[5:].strip()}(...)`"
            elif path.startswith("self."):
                attrs, how = [path[len("self."):]], path
            else:
                continue
            found: list[Atom] = []
            for dotted in attrs:  # what the attribute holds, untyped ones (and why) included
                current: Values = (Inst(concrete, "self"),)
                for attr in dotted.split("."):
                    current = self.attribute(current, attr)
                found.extend(Inst(v.cls, f"{name}() returns self.{dotted} ({how}, the protocol pack says so); {v.how}")
                             if isinstance(v, Inst) else v for v in current)
            typed = [v for v in found if isinstance(v, Inst)]
            if typed:  # the sub-modules of the tree (a tensor assigned beside them is no child)
                return tuple(dict.fromkeys(typed))
            if found:
                return tuple(dict.fromkeys(found))
        return ()

    def _assigned_within(self, concrete: ClassRef, context: str) -> list[str]:
        """``self.X`` assigned inside ``with <context>(...):`` in the MRO's ``__init__``s."""
        names: list[str] = []
        classes, _ = self.resolver.mro(concrete)
        for cls in classes:
            parsed = self.function(cls, "__init__")
            if parsed is None:
                continue
            for node in ast.walk(parsed[0]):
                if not isinstance(node, (ast.With, ast.AsyncWith)):
                    continue
                if not any(isinstance(item.context_expr, ast.Call) and ast.unparse(item.context_expr.func) == context
                           for item in node.items):
                    continue
                for sub in ast.walk(node):
                    targets = sub.targets if isinstance(sub, ast.Assign) else \
                        [sub.target] if isinstance(sub, ast.AnnAssign) else []
                    for target in targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                                and target.value.id == "self" and target.attr not in names:
                            names.append(target.attr)
        return names

    def attribute(self, base: Values, attr: str) -> Values:
        out: list[Atom] = []
        for atom in base:
            if isinstance(atom, Inst):
                typed = self.resolver.attribute_types(atom.cls, attr, jedi=False)
                if isinstance(typed, list):
                    out.extend(_held(atom, typed))
                elif self.resolver.find_method(atom.cls, attr) is not None:
                    out.append(Opaque(f"the bound method {atom.cls.name}.{attr}"))
                else:
                    out.append(Opaque(typed.why, rooted_at_self=True, retry=(atom, attr)))
            elif isinstance(atom, Ids):
                out.append(atom)
            elif isinstance(atom, Carrier):
                if attr == atom.attr:
                    out.append(Ids(f"{atom.how}.{attr}"))
                elif attr in atom.nested:
                    out.append(Carrier(atom.attr, atom.nested, f"{atom.how}.{attr}"))
                else:
                    out.append(Opaque(f"{atom.how}.{attr}"))
            elif isinstance(atom, ClassObj):
                out.append(Opaque(f"an attribute of the class {atom.cls.name}"))
            elif isinstance(atom, Opaque):
                out.append(Opaque(atom.why, atom.rooted_at_self))
            elif isinstance(atom, Method):
                out.append(Opaque(f"an attribute of the bound method {atom.source}"))
            else:
                out.append(Opaque(f"an attribute of {atom.value!r}"))
        return tuple(dict.fromkeys(out))

    def typed(self, values: Values) -> Values:
        """``values`` with the attributes typed without jedi asked again with it: where a value
        is a call's receiver or a write's owner (jedi costs a parse of the module; asked for
        every ``self.layers`` of a forward it cost a second of a cold scan and answered nothing)."""
        if not any(isinstance(v, Opaque) and v.retry for v in values):
            return values
        out: list[Atom] = []
        for atom in values:
            if isinstance(atom, Opaque) and atom.retry:
                inst, attr = atom.retry
                typed = self.resolver.attribute_types(inst.cls, attr)
                if isinstance(typed, list):
                    out.extend(_held(inst, typed))
                    continue
            out.append(atom)
        return tuple(dict.fromkeys(out))


def _held(owner: Inst, typed: list) -> list[Atom]:
    """The instances an attribute of ``owner`` holds, each saying how it was found."""
    return [Inst(t.cls, t.how if owner.how == "self" else f"{owner.how}; {t.how}") for t in typed]


__all__ = ["NONE", "Call", "Carrier", "ClassObj", "Const", "Flow", "FlowAnalysis", "Ids", "Inst", "Opaque", "Problem", "Values",
           "Write", "closest", "tainted"]
