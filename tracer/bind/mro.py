"""One MRO and one ``super()`` rule for every engine of tracer.

``linearize`` is Python's C3 (the order ``type.__mro__`` gives); where the bases admit
no consistent order (Python would refuse to create the class) it falls back to depth
first, left to right, so a broken tree still yields an answer and the caller can say so.
``after`` is the ``super()`` rule: the search starts after the class that *defines*
the method holding the ``super()`` call, in the MRO of the receiver's class."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

C = TypeVar("C", bound=Hashable)


def linearize(cls: C, bases: Sequence[C], mro_of: Callable[[C], Sequence[C]]) -> tuple[list[C], bool]:
    """(the C3 linearisation of ``cls`` with direct ``bases``, whether it is consistent).

    ``mro_of(base)`` gives each base's own linearisation (the caller memoises it and
    breaks cycles). An inconsistent hierarchy yields depth-first order and False."""
    seqs = [list(mro_of(b)) for b in bases]
    seqs.append(list(bases))
    result = [cls]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return result, True
        head = None
        for seq in seqs:
            candidate = seq[0]
            if not any(candidate in s[1:] for s in seqs):
                head = candidate
                break
        if head is None:  # no consistent order: depth first, left to right
            for seq in seqs:
                result.extend(c for c in seq if c not in result)
            return result, False
        if head not in result:
            result.append(head)
        seqs = [s[1:] if s[0] == head else s for s in seqs]


def after(order: Sequence[C], defining: C | None) -> list[C]:
    """The part of ``order`` (a receiver class's MRO) that ``super()`` inside a method of
    ``defining`` searches: the classes after ``defining``; all of it when ``defining`` is
    None; nothing when ``defining`` is not in the MRO (``super()`` would raise)."""
    if defining is None:
        return list(order)
    if defining not in order:
        return []
    return list(order[list(order).index(defining) + 1:])
