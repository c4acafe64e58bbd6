"""Arguments and results narrowed: a parameter annotated with classes of the tree
(``state: BlockState``, ``Optional["C"]``, ``A | B``) takes, of what its callers pass, no
instance of a class defined beside those (in the same module) that is none of them nor a
subclass. A mixin of the solver.

Without it one shared dispatcher (a base class's ``parse_method(m, state)`` called by a block
parser with block states and by an inline parser with inline states) hands every state to
every parse function, and each of them calls the other state's methods: edges Python never
makes. The annotation is the author's own statement of what arrives; where it says less than
a plain union of classes (``list[C]``, ``Callable``, ``Any``, a class outside the tree, a
Protocol, a name bound to something else than the class of that name: ``X = Union[...]``)
nothing is narrowed; an instance of a class whose bases are not all known (one
may be the annotated class) is kept, and so is one of a class from another module: annotations
lie where code duck-types (a plugin's algorithm object handed to parameters annotated with
the built-in algorithms' enum, another model's norm class to ``q_norm: RMSNorm``), and a
stand-in is defined elsewhere, not beside the class it stands in for. What is held back is counted
(``stats.arguments_narrowed_by_annotations``), never silently dropped: a value held back while the
annotation is unresolved is let through once the fixpoint leaves it so.

Results too, per receiver (bounded): a method of a base class returning a bound method of
``self`` (``return getattr(self, name)``, ``self._get_method(kind)``) returns, to a call on
one receiver, the bound methods of that receiver only, not those of every other instance
the method was called on (an HTML renderer's dispatch never returns a Markdown renderer's
methods). At most ``MAX_RECEIVERS`` receivers per method are kept apart; the others share
the unfiltered result.
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import Heap, Value
from tracer.callgraph.prefixes import NAME_TESTS, name_test
from tracer.callgraph.typetests import TYPE_TESTS, type_test

MAX_RECEIVERS = 8  # receivers of one method whose results are kept apart


class Narrow(Heap):
    deferred: list[tuple[bool, Any, Any]]
    scopes: list[Any]
    class_module: list[str]

    def owner_cid(self, uid: int) -> int:
        raise NotImplementedError

    def init_narrow(self) -> None:
        self.narrowed: dict[int, tuple[int, ...]] = {}  # parameter var -> the vars of its annotation's classes
        self.narrowed_names: dict[int, tuple[str, ...]] = {}  # parameter var -> the names its annotation writes
        self.gates: dict[int, int] = {}  # parameter var -> the var its callers' arguments go into
        self.held: dict[int, list[Value]] = {}  # parameter var -> instances the annotation does not admit
        self.results: dict[tuple[int, Value], int] = {}  # (method, receiver) -> its result as that receiver sees it
        self.receivers: dict[int, int] = {}  # method -> receivers kept apart
        self.results_narrowed = 0

    def returned_to(self, uid: int, ret: int, recv: Value | None) -> int:
        """The variable of what method ``uid`` returns to a call on ``recv``."""
        if recv is None or recv[0] != "i" or self.scopes[uid].method != "instance":
            return ret
        key = (uid, recv)
        var = self.results.get(key)
        if var is None:
            if self.receivers.get(uid, 0) >= MAX_RECEIVERS:
                return ret
            self.receivers[uid] = self.receivers.get(uid, 0) + 1
            var = self.results[key] = self.new_var()
            self.on(ret, ("", Narrow.result_for, var, recv, self.owner_cid(uid)))
        return var

    def result_for(self, v: Value, var: int, recv: Value, owner: int) -> None:
        """Keep ``v`` unless it is a bound method of another instance that may be ``self`` here."""
        if v[0] == "b" and v[2] != recv and v[2][0] == "i" and owner in self.mro(v[2][1]):
            self.results_narrowed += 1
            return
        self.add(var, (v,))

    def narrow_instr(self, param: int, classes: tuple[int, ...], names: tuple[str, ...]) -> None:
        if names and names[0] in NAME_TESTS:  # a local narrowed by a name test: prefixes.py
            return name_test(self, names[0], param, classes[0], names[1])
        if names and names[0] in TYPE_TESTS:  # a local narrowed by a type test: typetests.py
            return type_test(self, names[0], param, classes[0], classes[1:], names[1:])
        self.narrowed[param] = classes
        self.narrowed_names[param] = names

    def param_in(self, param: int) -> int:
        """The variable a caller's argument for ``param`` flows into (the parameter itself, or
        its gate when an annotation narrows it)."""
        classes = self.narrowed.get(param)
        if classes is None:
            return param
        gate = self.gates.get(param)
        if gate is None:
            gate = self.gates[param] = self.new_var()
            self.on(gate, ("", Narrow.admit, param, classes, self.narrowed_names[param]))
            for cls in classes:
                self.on(cls, lambda _vals, param=param: self.recheck(param))
                self.when_empty(cls, (Narrow.release, param), late=True)
        return gate

    def admit(self, v: Value, param: int, classes: tuple[int, ...], names: tuple[str, ...]) -> None:
        if param not in self.narrowed or self.admits(v, classes, names):
            self.add(param, (v,))
            return
        held = self.held.get(param)
        if held is None:
            held = self.held[param] = []
            self.deferred.append((False, lambda: bool(self.held.get(param)), (Narrow.recheck_later, param)))
        if v not in held:
            held.append(v)

    def recheck_later(self, param: int) -> None:
        """A base resolved late may make a held instance admissible: checked again every round."""
        self.recheck(param)
        if self.held.get(param):
            self.deferred.append((False, lambda: bool(self.held.get(param)), (Narrow.recheck_later, param)))

    def arguments_narrowed(self) -> int:
        return sum(len(held) for held in self.held.values())

    def admits(self, v: Value, classes: tuple[int, ...], names: tuple[str, ...]) -> bool | None:
        """True / False; None while the annotation is not resolved yet."""
        if v[0] != "i":
            return True
        allowed: set[int] = set()
        for var, name in zip(classes, names):
            vals = self.pts.get(var, ())
            if not vals:
                return None
            for c in vals:
                if c[0] != "c" or self.open_class(c[1], protocol=True) or self.class_names[c[1]].rsplit(".", 1)[-1] != name:
                    return True  # outside the tree, a builtin, a Protocol, an alias (X = Union[...]): no narrowing
                allowed.add(c[1])
        order = self.mro(v[1])
        if allowed.intersection(order) or any(self.open_class(k) for k in order):
            return True
        # held back only beside the annotated class: a class of the module that defines it, which
        # the annotation's author saw and did not name; a class from elsewhere may stand in for
        # it by duck typing (a plugin's algorithm for an enum, another package's RMSNorm)
        return not any(self.class_module[c] == self.class_module[v[1]] for c in allowed)

    def open_class(self, cid: int, protocol: bool = False) -> bool:
        """A class with a base not known to be a class of the tree (``protocol``: or a
        ``typing.Protocol``, which admits what does not inherit it)."""
        for var in self.class_bases[cid]:
            vals = self.pts.get(var, ())
            if not vals:
                return True
            if protocol and any(b[0] == "x" and b[1].rsplit(".", 1)[-1] == "Protocol" for b in vals):
                return True
        return False

    def recheck(self, param: int) -> None:
        held = self.held.get(param)
        if not held or param not in self.narrowed:
            return
        classes, names = self.narrowed[param], self.narrowed_names[param]
        keep = [v for v in held if not self.admits(v, classes, names)]
        let = [v for v in held if v not in keep]
        self.held[param] = keep
        if let:
            self.add(param, let)

    def release(self, param: int) -> None:
        """An annotation class that never resolved: nothing is narrowed."""
        held = self.held.pop(param, [])
        if held:
            self.add(param, held)
        self.narrowed.pop(param, None)
