"""Receivers per object: classes only the outside creates (tracer/callgraph/inherited.py) and the
per-receiver copies (clones.py) at their full size.

outside_inherited (tests/data/callgraph): A, B and C are created by no code of the program (a
framework's loader builds them); each stores its model through Base.__init__, and Base.forward,
which no call reaches, runs on A and B (they inherit it), not on C (it overrides it). With one set of
variables for every receiver of Base.__init__, Base's own abstract instance held every subclass's
model and Base.forward called all three; solved apart per receiver (32-instruction copies), the
abstract instance holds none, and the edges were lost until the inherited method ran on A and B."""

from __future__ import annotations

import re

from callgraph_cli import DATA, graph

from tracer.callgraph import clones, objects
from tracer.callgraph.build import solve_tree
from tracer.callgraph.compile import compile_module


def edges(data: dict) -> set[tuple[str, str]]:
    return {(u, v) for u, v in data["edges"]}


def test_copies_are_made_at_their_designed_size():
    assert clones.MAX_CLONE_INSTRS == 32


def test_an_inherited_method_runs_on_each_class_only_the_outside_creates():
    found = edges(graph(DATA / "outside_inherited"))
    assert {("main.Base.forward", "main.ModelA.run"), ("main.Base.forward", "main.ModelB.run")} <= found
    assert ("main.Base.forward", "main.ModelC.run") not in found  # C overrides forward


def test_without_the_rule_the_copies_lose_the_edges(monkeypatch):
    monkeypatch.setattr("tracer.callgraph.seeds.seed_inherited", lambda solver, outside, unreached: None)
    found = edges(graph(DATA / "outside_inherited"))
    assert not any(u == "main.Base.forward" for u, _ in found)  # what 32-instruction copies alone gave


def _solve(source: str, module_calls: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    irs = [compile_module("main", "main.py", False, source)]
    _, found, _ = solve_tree(irs, module_calls=module_calls)
    return {(u, v) for u, v, _ in found}


REACHED = '''
class LM:
    def __init__(self, config):
        self.model = self._init_model(config)

    def _init_model(self, config):
        return Decoder()

    def forward(self, x):
        return self.model(x)


class Decoder:
    def forward(self, x):
        return x


class Decoder4:
    def forward(self, x):
        return x


class LM4(LM):
    def _init_model(self, config):
        return Decoder4()


class Mistral(LM):
    def __init__(self, config):
        super().__init__(config)


class Wrapper:
    def __init__(self, config):
        self.language_model = LM4(config)

    def forward(self, x):
        return self.language_model(x)


Wrapper(None).forward(1)
'''


def test_the_module_call_runs_on_a_class_only_the_outside_creates(monkeypatch):
    """LM.forward is reached, from the wrapper, with LM4 only; Mistral (built by a loader) inherits
    it and its model is the base factory's Decoder: the pack's module call (forward) runs on it."""
    found = _solve(REACHED, ("forward",))
    assert {("main.LM.forward", "main.Decoder4.forward"), ("main.LM.forward", "main.Decoder.forward"),
            ("main.Wrapper.forward", "main.LM.forward")} <= found
    # LM4's own factory is the only one its __init__ runs: LM4 never holds a Decoder, and the wrapper
    # calls no Decoder itself
    assert ("main.Wrapper.forward", "main.Decoder.forward") not in found
    # the edge examples/ok lost with 32-instruction copies (tests/test_binder.py): without the rule
    monkeypatch.setattr("tracer.callgraph.seeds.seed_inherited", lambda solver, outside, unreached: None)
    assert ("main.LM.forward", "main.Decoder.forward") not in _solve(REACHED, ("forward",))


TYPED_IN_A_COPY = '''
class Plugin:
    def __call__(self, md):
        md.block.register(self.parse)

    def parse(self):
        pass


class A(Plugin):
    def __call__(self, md):
        super().__call__(md)

    def parse(self):
        pass


class B(Plugin):
    def __call__(self, md):
        super().__call__(md)

    def parse(self):
        pass


class C(Plugin):
    def __call__(self, md):
        pass

    def parse(self):
        pass


class Block:
    def register(self, fn):
        fn()


class Markdown:
    def __init__(self):
        self.block = Block()


Markdown()
'''


def test_a_parameter_no_call_fills_is_typed_in_each_copy_of_its_method():
    """Plugin.__call__'s ``md`` is filled by no call (plugins are handed to the package by its users):
    it is an instance of the class having ``block`` (seeds.seed_params), in the method's copy for
    each receiver class too (A's and B's, through super()), so each registers its own parse."""
    found = _solve(TYPED_IN_A_COPY)
    assert {("main.Block.register", "main.A.parse"), ("main.Block.register", "main.B.parse")} <= found
    assert ("main.Block.register", "main.C.parse") not in found  # C never calls the base's __call__


REGISTRY_WRONG = {("main.Markdown.run_pre", "main.Post.run"), ("main.Markdown.run_post", "main.Pre.run")}


def test_each_allocation_site_of_a_registry_class_is_its_own_object():
    data = graph(DATA / "object_registries")
    found = edges(data)
    assert {("main.Markdown.run_pre", "main.Pre.run"), ("main.Markdown.run_post", "main.Post.run")} <= found
    assert found & REGISTRY_WRONG == set()
    assert data["stats"]["objects_by_allocation_site"] == 2


def test_one_object_per_class_merges_the_registries(monkeypatch):
    monkeypatch.setattr(objects, "MAX_OBJECTS", 0)
    data = graph(DATA / "object_registries")
    assert edges(data) & REGISTRY_WRONG == REGISTRY_WRONG  # what the objects keep apart (the test can fail)
    assert data["stats"]["objects_by_allocation_site"] == 0


def test_every_instruction_the_solver_installs_is_renamed_in_a_copy():
    """A copy installs the method's instructions over its own variables: an opcode whose variables
    are not renamed reads the first module's variables instead (isinstance narrowing and slices did)."""
    import inspect

    from tracer.callgraph.solve import Solver

    source = inspect.getsource(Solver.install)
    ops = set(re.findall(r'op == "(\w+)"', source))
    assert ops and ops - {"call"} <= set(clones.VAR_OPERANDS)


NARROWED_IN_A_COPY = '''
class Node:
    def visit(self):
        pass


class Leaf:
    def visit(self):
        pass


class Base:
    def walk(self, x):
        if isinstance(x, Node):
            x.visit()


class A(Base):
    pass


class B(Base):
    pass


A().walk(Leaf())
B().walk(Node())
'''


def test_isinstance_narrows_in_a_methods_copy():
    found = _solve(NARROWED_IN_A_COPY)  # walk: A's own variables, B's copy
    assert ("main.Base.walk", "main.Node.visit") in found
    assert ("main.Base.walk", "main.Leaf.visit") not in found
