"""The scan's binder: what a call in a method runs, for every stage that walks calls.

One query interface over the resolver (names, attribute types) and the binding rules of
``tracer.bind.mro`` (C3, ``super()`` from the defining class) -- the rules the call-graph
solver applies too, held to the same answers by tests/test_binder.py:

``callees(module, concrete, function, call)``: what one call of a method runs -- ``self.m()``
on the concrete class, ``super().m()`` after the class that defines the calling method,
``self.a.m()`` on what ``self.a`` holds, a function or a class (its ``__init__``) by name.
(A call of a held module instance runs the pack's ``module_call``; the argument chain asks
that of the resolver, and neither the runner walk nor the readers follow it.)

Stages keep their own pruning (which calls are worth following); none resolves a call itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.model.summary import Call, Function
from tracer.resolve.resolver import ClassRef, Resolver

# what a call may be followed into; a stage picks the kinds it walks
SELF, SUPER, HELD, NAME = "self", "super", "held", "name"
ALL_KINDS = frozenset({SELF, SUPER, HELD, NAME})


@dataclass(frozen=True)
class Bound:
    """One thing a call runs."""

    kind: str  # SELF | SUPER | HELD | NAME
    module: str  # where the callee is defined
    owner: ClassRef | None  # the class defining it (None: a module-level function)
    concrete: ClassRef | None  # the class of the receiver it runs on (a constructor: the class built)
    function: Function
    qualname: str  # full name of what runs (a constructor: Class.__init__ of the class built)


class Binder:
    def __init__(self, resolver: Resolver):
        self.resolver = resolver

    def callees(self, module: str, concrete: ClassRef | None, function: Function, call: Call,
                kinds: frozenset[str] = ALL_KINDS) -> list[Bound]:
        """What ``call`` (in ``function``, defined in ``module``, running on ``concrete``) runs."""
        func = call.func
        if not func:
            return []
        if func.startswith("super().") and func.count(".") == 1:
            if SUPER not in kinds or concrete is None or "." not in function.qualname:
                return []
            defining = ClassRef(module, function.qualname.rsplit(".", 1)[0])
            return self._on(SUPER, concrete, func[len("super()."):], after=defining)
        if func.startswith("self.") and func.count(".") == 1:
            if concrete is None or SELF not in kinds:
                return []
            return self._on(SELF, concrete, func[len("self."):])
        if func.startswith("self."):
            if HELD not in kinds or concrete is None:
                return []
            receiver, _, name = func.rpartition(".")
            return self._held(HELD, concrete, receiver, name)
        if NAME not in kinds or "(" in func:
            return []
        symbol = self.resolver.resolve_name(module, func)
        if symbol.kind == "function":
            target = self.resolver.project.function(symbol.module, symbol.qualname)
            return [Bound(NAME, symbol.module, None, None, target, symbol.fullname)] if target else []
        if symbol.kind == "class":
            ref = ClassRef(symbol.module, symbol.qualname)
            found = self.resolver.find_method(ref, "__init__")
            if found:
                owner, init = found
                return [Bound(NAME, owner.module, owner, ref, init, f"{ref.fullname}.__init__")]
        return []

    def _on(self, kind: str, concrete: ClassRef, name: str, after: ClassRef | None = None) -> list[Bound]:
        found = self.resolver.find_method(concrete, name, after=after)
        if found is None:
            return []
        owner, method = found
        return [Bound(kind, owner.module, owner, concrete, method, f"{owner.fullname}.{method.name}")]

    def _held(self, kind: str, concrete: ClassRef, receiver: str, name: str) -> list[Bound]:
        types = self.resolver.receiver_types(concrete, receiver, jedi=False)
        if not isinstance(types, list):
            return []
        out: list[Bound] = []
        for typed in types:
            out.extend(self._on(kind, typed.cls, name))
        return out
