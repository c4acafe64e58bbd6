"""How the solver stores what each variable holds (a mixin of solve.Solver): the memory of
``graph --all`` is mostly these sets. Variables are indexed lists (:class:`VarMap`), a
variable's values a tuple while few (the tuple of one value, and a copy's tuple, shared),
then a dict (insertion order: what the budget cuts must not depend on how a set of tuples
of str iterates, it changes with PYTHONHASHSEED), and a full one (:data:`MAX_VALUES`) one
:class:`Full` shared by every variable holding the same values in the same order."""

from __future__ import annotations

from array import array
from typing import Any

Value = tuple[Any, ...]

MAX_KEYS = 48  # constants one variable may hold
MAX_VALUES = 256  # values one variable may hold
SMALL_VALUES = 8  # values kept in a tuple before a dict


class VarMap(list):  # type: ignore[type-arg]
    """Something per variable, indexed by the variable (None: nothing): a dict of a million int
    keys was ~40 MB, and each key another int object; a list is 8 bytes a variable. ``get`` reads
    as a dict's does (a negative variable is none)."""

    __slots__ = ()

    def get(self, var: int, default: Any = None) -> Any:
        if var < 0:
            return default
        found = self[var]
        return default if found is None else found


class Values(dict):  # type: ignore[type-arg]
    """The values of a variable holding more than :data:`SMALL_VALUES` (keys only, in order)."""

    __slots__ = ()


class Full(Values):
    """Values shared by several variables, copied before any change: a full variable's (the budget
    fills it, it takes no more: the variables holding the same values in the same order share one;
    sglang/srt: ~18,000 full variables, a few thousand distinct, ~130 MB), and a copy's, holding
    what its source holds in the same order (most variables of 9-255 values are copies: ~60 MB)."""

    __slots__ = ()


class ValueSets:
    pts: VarMap
    unbudgeted: set[int]
    key_count: bytearray
    values_cut: int
    values: dict[Value, tuple[Value]]

    def init_value_sets(self) -> None:
        self.full: dict[bytes, Full] = {}  # the shared full value sets, by their values' ids (a tuple of ints was 5x)

    def keep(self, var: int, have: Any, new: list[Value], whole: Any) -> None:
        """``var`` holds ``have`` and ``new`` from now on; ``whole``: every value of the variable
        they come from, shared where ``var`` ends up holding the same in the same order (most
        variables are copies of another: sglang/srt's ~760,000 small tuples were ~170,000 distinct)."""
        if have.__class__ is tuple and len(have) + len(new) <= SMALL_VALUES:
            if not have and len(new) == 1:
                self.pts[var] = self.single(new[0])
            elif whole is not None and len(whole) == len(have) + len(new) and whole == (*have, *new):
                self.pts[var] = whole
            else:
                self.pts[var] = (*have, *new)
            return
        if whole is not None and whole.__class__ is not tuple and self.same_values(whole, have, new):
            self.pts[var] = whole
            return
        if have.__class__ is tuple:
            self.pts[var] = have = Values.fromkeys((*have, *new))
        elif have.__class__ is Full:
            self.pts[var] = have = Values(have)  # shared: this variable's own copy from now on
            have.update(dict.fromkeys(new))
        else:
            have.update(dict.fromkeys(new))
        if len(have) >= MAX_VALUES and var not in self.unbudgeted:
            ids = array("Q", map(id, have)).tobytes()  # values are interned (V): the same ids are the same values
            shared = self.full.get(ids)
            if shared is None:
                shared = self.full[ids] = Full(have)
            self.pts[var] = shared

    def same_values(self, whole: Values, have: Any, new: list[Value]) -> bool:
        """Whether ``have`` and ``new`` are ``whole`` in order (the variable is a copy of the one
        ``whole`` is of): then ``var`` shares it, and each copies it before a change."""
        if len(whole) != len(have) + len(new) or list(whole) != [*have, *new]:
            return False
        whole.__class__ = Full
        return True

    def single(self, value: Value) -> tuple[Value]:
        """The one tuple of ``value`` alone (two thirds of the variables hold one value), kept
        beside the interned value (``Solver.V``)."""
        found = self.values.get(value)
        return found if found is not None and found[0] is value else (value,)

    def within_budget(self, var: int, have: Any, new: list[Value]) -> list[Value]:
        """What of ``new`` a variable may still take: at most MAX_KEYS constants (a key or a name
        that many ways is no lookup anyone can follow) and MAX_VALUES values in all. What is cut is
        counted (``stats.values_cut``): it is a bound on the fixpoint's cost, paid in recall."""
        counts = self.key_count  # a byte a variable (at most MAX_KEYS): a dict of ints was ~11 MB
        keys = counts[var] if var < len(counts) else 0
        kept: list[Value] = []
        for v in new:
            if v[0] == "k":
                if keys >= MAX_KEYS:
                    self.values_cut += 1
                    continue
                keys += 1
            if len(have) + len(kept) >= MAX_VALUES:
                self.values_cut += 1
                continue
            kept.append(v)
        if var >= len(counts):
            counts.extend(bytes(var + 1 - len(counts)))
        counts[var] = keys
        return kept


def first_call(memo: dict[int, Any], site: int, v: Value) -> bool:
    """Whether call site ``site`` meets ``v`` for the first time (then it is noted): per site its one
    value, a tuple while few, then a set (a set of (site, value) pairs was ~22 MB on sglang/srt)."""
    seen = memo.get(site)
    if seen is None:
        memo[site] = v
    elif seen.__class__ is set:
        if v in seen:
            return False
        seen.add(v)
    elif seen[0].__class__ is str:  # one value
        if seen is v or seen == v:
            return False
        memo[site] = (seen, v)
    elif v in seen:
        return False
    else:
        memo[site] = (*seen, v) if len(seen) < SMALL_VALUES else {*seen, v}
    return True
