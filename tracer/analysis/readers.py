"""Readers that run: a stored value counts as read only when the forward that runs
for the concrete class (its entry methods by MRO, ``super()`` calls, the helpers they
call on ``self``) reaches a read of it. A read in a method no running forward calls
(a base class's forward that an override replaces) is not a reader."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.model.summary import Function
from tracer.resolve.binder import SELF, SUPER, Binder
from tracer.resolve.resolver import ClassRef, Resolver

MAX_METHODS = 60  # methods walked from one class's entry methods
_READER_KINDS = frozenset({SELF, SUPER})  # the forward that runs: its own methods and super()


@dataclass(frozen=True)
class Reader:
    cls: ClassRef  # class defining the method
    function: Function
    line: int  # the first read
    how: str
    # how the running forward gets there: (class, method, line of the call to the next one),
    # from the entry method down to the reader's caller; () when the reader is the entry
    path: tuple[tuple[ClassRef, Function, int], ...] = ()


@dataclass(frozen=True)
class Reach:
    readers: tuple[Reader, ...]
    walked: tuple[tuple[ClassRef, Function], ...]  # every method reached, entry methods first
    entry: tuple[ClassRef, Function] | None  # the entry method that runs (the most derived forward)
    callers: tuple[tuple[tuple[ClassRef, str], tuple[ClassRef, Function, int]], ...] = ()  # method -> first caller

    def path(self, cls: ClassRef, name: str) -> tuple[tuple[ClassRef, Function, int], ...]:
        callers = dict(self.callers)
        out: list[tuple[ClassRef, Function, int]] = []
        key = (cls, name)
        while key in callers and len(out) < MAX_METHODS:
            caller = callers[key]
            out.append(caller)
            key = (caller[0], caller[1].name)
        return tuple(reversed(out))


def reached_methods(resolver: Resolver, concrete: ClassRef, entry_methods: tuple[str, ...],
                    callers: dict[tuple[ClassRef, str], tuple[ClassRef, Function, int]] | None = None
                    ) -> tuple[list[tuple[ClassRef, Function]], tuple[ClassRef, Function] | None]:
    callers = {} if callers is None else callers
    binder = Binder(resolver)
    walked: list[tuple[ClassRef, Function]] = []
    seen: set[tuple[ClassRef, str]] = set()
    queue: list[tuple[ClassRef, Function]] = []
    first = None
    for name in entry_methods:
        found = resolver.find_method(concrete, name)
        if found is not None:
            queue.append(found)
            first = first or found
    while queue and len(walked) < MAX_METHODS:
        cls, fn = queue.pop(0)
        if (cls, fn.name) in seen:
            continue
        seen.add((cls, fn.name))
        walked.append((cls, fn))
        for call in fn.calls:
            for bound in binder.callees(cls.module, concrete, fn, call, kinds=_READER_KINDS):
                assert bound.owner is not None  # a method of the MRO
                if (bound.owner, bound.function.name) not in seen:
                    callers.setdefault((bound.owner, bound.function.name), (cls, fn, call.line))
                    queue.append((bound.owner, bound.function))
    return walked, first


def readers_of(resolver: Resolver, concrete: ClassRef, attribute: str, entry_methods: tuple[str, ...],
               markers: tuple[str, ...] = ()) -> Reach:
    """Methods reached from ``concrete``'s entry methods that read ``self.<attribute>``
    (or, for per-layer markers the setter set, ``<any>.<marker>``)."""
    callers: dict[tuple[ClassRef, str], tuple[ClassRef, Function, int]] = {}
    walked, entry = reached_methods(resolver, concrete, entry_methods, callers)
    reach = Reach((), tuple(walked), entry, tuple(callers.items()))
    readers = []
    for cls, fn in walked:
        read = next((r for r in fn.reads if r.target == f"self.{attribute}"), None)
        if read is not None:
            readers.append(Reader(cls, fn, read.line, f"reads self.{attribute}", reach.path(cls, fn.name)))
        for marker in markers:
            read = next((r for r in fn.reads if r.target == f"*.{marker}"), None)
            if read is not None:
                readers.append(Reader(cls, fn, read.line, f"reads the per-layer marker {marker} the setter sets",
                                      reach.path(cls, fn.name)))
                break
    return Reach(tuple(readers), tuple(walked), entry, reach.callers)


def unreached_readers(resolver: Resolver, concrete: ClassRef, attribute: str, reach: Reach) -> list[Reader]:
    """Methods of the MRO that read the attribute but that no running forward reaches
    (to say which override cuts them off)."""
    reached = {(cls, fn.name) for cls, fn in reach.walked}
    found = []
    classes, _ = resolver.mro(concrete)
    for cls in classes:
        for fn in resolver.methods_mentioning(cls, attribute):
            if (cls, fn.name) in reached or fn.name == "__init__":
                continue
            read = next((r for r in fn.reads if r.target == f"self.{attribute}"), None)
            if read is not None:
                found.append(Reader(cls, fn, read.line, f"reads self.{attribute}"))
    return found
