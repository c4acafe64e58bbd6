"""Type tests narrow the tested local: ``type(x) is C`` / ``in (A, B)`` / ``x.__class__ is C``, their
negations, the negation of ``isinstance``, ``assert`` (tracer/callgraph/typetests.py)."""

from __future__ import annotations

from tracer.callgraph.build import solve_tree
from tracer.callgraph.compile import compile_module

CLASSES = '''
class A:
    def run(self):
        pass


class B(A):
    def run(self):
        pass


class C:
    def run(self):
        pass


def make(n):
    return A() if n == 1 else B() if n == 2 else C()
'''


def _solve(body: str) -> set[tuple[str, str]]:
    irs = [compile_module("main", "main.py", False, CLASSES + body)]
    _, found, _ = solve_tree(irs)
    return {(u, v) for u, v, _ in found if v.endswith(".run")}


def _runs(body: str, caller: str = "main.f") -> set[str]:
    return {v.rsplit(".", 2)[-2] for u, v in _solve(body + "\nf(make(0))\n") if u == caller}


def test_without_a_test_every_class_runs():
    assert _runs("def f(x):\n    x.run()\n") == {"A", "B", "C"}


def test_type_is_keeps_the_exact_class_only():
    assert _runs("def f(x):\n    if type(x) is A:\n        x.run()\n") == {"A"}  # not the subclass B
    assert _runs("def f(x):\n    if type(x) == C:\n        x.run()\n") == {"C"}
    assert _runs("def f(x):\n    if x.__class__ is B:\n        x.run()\n") == {"B"}
    assert _runs("def f(x):\n    if A is type(x):\n        x.run()\n") == {"A"}


def test_type_in_a_tuple_and_builtin_types():
    assert _runs("def f(x):\n    if type(x) in (A, C):\n        x.run()\n") == {"A", "C"}
    assert _runs("def f(x):\n    if type(x) in (set, frozenset):\n        x.run()\n") == set()
    assert _runs("def f(x):\n    if type(x) not in (set, frozenset):\n        x.run()\n") == {"A", "B", "C"}


def test_negations_drop_the_exact_class():
    assert _runs("def f(x):\n    if type(x) is not A:\n        x.run()\n") == {"B", "C"}
    assert _runs("def f(x):\n    if type(x) is A:\n        return\n    x.run()\n") == {"B", "C"}
    assert _runs("def f(x):\n    if type(x) is not C:\n        return\n    x.run()\n") == {"C"}
    assert _runs("def f(x):\n    if type(x) in (A, B):\n        pass\n    else:\n        x.run()\n") == {"C"}


def test_not_isinstance_narrows_what_follows_and_the_else():
    assert _runs("def f(x):\n    if not isinstance(x, A):\n        return\n    x.run()\n") == {"A", "B"}
    assert _runs("def f(x):\n    if isinstance(x, A):\n        pass\n    else:\n        x.run()\n") == {"C"}
    assert _runs("def f(x):\n    if not isinstance(x, A):\n        x.run()\n") == {"C"}


def test_assert_narrows_what_follows():
    assert _runs("def f(x):\n    assert isinstance(x, C)\n    x.run()\n") == {"C"}
    assert _runs("def f(x):\n    assert type(x) is B\n    x.run()\n") == {"B"}


def test_a_name_bound_to_two_classes_drops_nothing_when_negated():
    body = "def f(x, n):\n    K = A if n else C\n    if type(x) is not K:\n        x.run()\n"
    assert {v.rsplit(".", 2)[-2] for u, v in _solve(body + "\nf(make(0), 1)\n") if u == "main.f"} == {"A", "B", "C"}


def test_an_unknown_class_proves_nothing():
    body = "import numpy\ndef f(x):\n    if type(x) is numpy.ndarray:\n        x.run()\n"
    assert _runs(body) == {"A", "B", "C"}


ATTRS = '''
class P:
    def __init__(self):
        self.name = 1

    def run(self):
        pass


class Q:
    def run(self):
        pass


class R:
    name = "r"

    def run(self):
        pass


class S:
    def __getattr__(self, key):
        return 1

    def run(self):
        pass


def make2(n):
    return P() if n == 1 else Q() if n == 2 else R() if n == 3 else S()
'''


def _attr_runs(body: str) -> set[str]:
    irs = [compile_module("main", "main.py", False, ATTRS + body + "\nf(make2(0))\n")]
    _, found, _ = solve_tree(irs)
    return {v.rsplit(".", 2)[-2] for u, v, _ in found if u == "main.f" and v.endswith(".run")}


def test_after_an_attribute_test_fails_out_the_classes_lacking_it_are_dropped():
    assert _attr_runs("def f(x):\n    x.run()\n") == {"P", "Q", "R", "S"}
    assert _attr_runs("def f(x):\n    if not hasattr(x, 'name'):\n        return\n    x.run()\n") == {"P", "R", "S"}
    assert _attr_runs("def f(x):\n    if getattr(x, 'name', None) is None:\n        return\n    x.run()\n") == {"P", "R", "S"}
    assert _attr_runs("def f(x):\n    if hasattr(x, 'name'):\n        x.run()\n") == {"P", "R", "S"}
    assert _attr_runs("def f(x):\n    if getattr(x, 'name', None):\n        x.run()\n") == {"P", "R", "S"}


def test_an_attribute_no_class_has_proves_nothing_of_what_the_test_cannot_see():
    # a getattr default other than None, and an attribute set from outside the class
    assert _attr_runs("def f(x):\n    if getattr(x, 'name', 0) is None:\n        return\n    x.run()\n") == {
        "P", "Q", "R", "S"}
    body = "def f(x):\n    if not hasattr(x, 'extra'):\n        return\n    x.run()\nq = Q()\nq.extra = 1\nf(q)\n"
    assert _attr_runs(body) == {"Q", "S"}


def test_a_class_of_unknown_bases_is_kept_by_the_negations():
    body = ("from elsewhere import Base\n\nclass D(Base):\n    def run(self):\n        pass\n\n"
            "def f(x):\n    if isinstance(x, A):\n        return\n    x.run()\n\n"
            "def g(x):\n    if not hasattr(x, 'name'):\n        return\n    x.run()\n\nf(D())\ng(D())\n")
    found = _solve(body + "\nf(make(0))\n")
    assert {v.rsplit(".", 2)[-2] for u, v in found if u == "main.f"} == {"C", "D"}  # bases not known: kept
    assert {v.rsplit(".", 2)[-2] for u, v in found if u == "main.g"} == {"D"}  # Base may have the name
