"""Which modules a computation read: what a cached chain result depends on.

The project reports every module it hands out (its summary, a method, its text or
bytes) to the recordings open at that moment; a memo of a later stage (a resolved
name, an MRO, a getter's value) keeps the modules its computation read and reports
them again to whoever takes the memoised answer, so a chain that reuses another
chain's work still learns that it depends on the modules behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

V = TypeVar("V")


def fact(kind: str, *parts: str) -> str:
    """A read that depends on one derived answer, not on a module's bytes: ``kind`` names
    how it is checked again (see chain_cache), the last part is the answer."""
    return "\0".join((kind, *parts))


def parse_fact(read: str) -> tuple[str, ...] | None:
    """(kind, part, ..., answer) of a fact; None for a module read."""
    parts = read.split("\0")
    return tuple(parts) if len(parts) > 1 else None


def mention_fact(module: str, word: str, found: bool) -> str:
    """Whether ``module`` contains ``word`` (see Project.mentions)."""
    return fact("mention", module, word, str(int(found)))


class Reads:
    def __init__(self) -> None:
        self._open: list[set[str]] = []
        self._floor = 0  # recordings below this index are paused (see ``only_facts``)

    def touch(self, module: str) -> None:
        for recording in self._open[self._floor:]:
            recording.add(module)

    def touch_all(self, modules: Iterable[str]) -> None:
        for recording in self._open[self._floor:]:
            recording.update(modules)

    @contextmanager
    def only_facts(self) -> Iterator[None]:
        """Inside, the recordings open now learn nothing: the caller reports the derived
        answer as a fact instead (recordings opened inside still see every read)."""
        saved, self._floor = self._floor, len(self._open)
        try:
            yield
        finally:
            self._floor = saved

    @contextmanager
    def record(self) -> Iterator[set[str]]:
        """The modules read inside the ``with`` block (nested recordings all see them)."""
        recording: set[str] = set()
        self._open.append(recording)
        try:
            yield recording
        finally:  # by identity: two recordings may be equal sets
            for index in range(len(self._open) - 1, -1, -1):
                if self._open[index] is recording:
                    del self._open[index]
                    break


class Memo(Generic[V]):
    """A memo whose answers carry the modules they were computed from."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads
        self._answers: dict[Hashable, tuple[V, frozenset[str]]] = {}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._answers

    def get(self, key: Hashable) -> V | None:
        found = self._answers.get(key)
        if found is None:
            return None
        self.reads.touch_all(found[1])
        return found[0]

    def put(self, key: Hashable, value: V, modules: Iterable[str] = ()) -> None:
        self._answers[key] = (value, frozenset(modules))

    def compute(self, key: Hashable, make: Callable[[], V]) -> V:
        """The memoised answer for ``key``, else ``make()`` (its reads recorded with it)."""
        found = self._answers.get(key)
        if found is not None:
            self.reads.touch_all(found[1])
            return found[0]
        with self.reads.record() as modules:
            value = make()
        self._answers[key] = (value, frozenset(modules))
        return value
