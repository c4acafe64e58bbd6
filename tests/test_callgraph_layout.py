"""The solver's memory layout (tracer/callgraph/valuesets.py, solve.py): shared value sets are
copied before a change, a call site meets each value once, a variable's watchers fire in the
order they were added whether it has one or many."""

from __future__ import annotations

from tracer.callgraph.solve import Solver
from tracer.callgraph.valuesets import Full, first_call


def classes(s: Solver, n: int, start: int = 0) -> list[tuple]:
    return [s.V("c", i) for i in range(start, start + n)]


def test_a_copy_shares_its_sources_values_until_either_changes() -> None:
    s = Solver([])
    a, b, c = s.new_var(), s.new_var(), s.new_var()
    s.edge(a, b)
    s.add(a, classes(s, 12))
    s.run()
    assert s.pts[b] is s.pts[a] and s.pts[a].__class__ is Full  # one dict for both
    s.add(b, classes(s, 1, 100))  # b alone grows: its own copy, a keeps its twelve
    s.run()
    assert list(s.pts[b]) == classes(s, 12) + classes(s, 1, 100)
    assert list(s.pts[a]) == classes(s, 12)
    s.add(a, classes(s, 1, 200))  # a grows: b follows (its successor), c never shared anything
    s.run()
    assert list(s.pts[a]) == classes(s, 12) + classes(s, 1, 200)
    assert list(s.pts[b]) == classes(s, 12) + classes(s, 1, 100) + classes(s, 1, 200)
    assert s.pts[c] is None


def test_a_call_site_meets_each_value_once() -> None:
    memo: dict = {}
    values = [("c", i) for i in range(20)]
    assert [first_call(memo, 7, v) for v in values] == [True] * 20  # one value, a tuple, then a set
    assert [first_call(memo, 7, v) for v in values] == [False] * 20
    assert first_call(memo, 8, values[0]) and not first_call(memo, 8, ("c", 0))  # equal, not the same object


def test_watchers_fire_in_order_one_or_many() -> None:
    s = Solver([])
    one, many = s.new_var(), s.new_var()
    seen: list[tuple] = []
    s.each(one, lambda v: seen.append(("single", v)))
    for k in range(10):  # a tuple of watchers, then a list
        s.on(many, ("", lambda solver, v, k: seen.append((k, v)), k))
    s.add(one, [s.V("c", 1)])
    s.add(many, [s.V("c", 2)])
    s.run()
    assert seen == [(k, ("c", 2)) for k in range(10)] + [("single", ("c", 1))]  # the queue is a stack
