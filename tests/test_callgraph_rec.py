"""Recall mechanisms of the whole call graph (issue #24, helper rec): the standard library calling
back into the program (``re.sub`` with a function), dicts and sets hashing their keys, a dict's
keys read through ``items()``. Each program is in tests/data/callgraph/<category>/
(its expected.json is checked whole by test_callgraph.py); these tests name the edges each
mechanism adds, their kind, and the plausible wrong ones that must stay absent. Also sorting
(``sorted``, ``min``/``max``, ``list.sort``, ``heapq``, ``bisect``) comparing the elements."""

from __future__ import annotations

import json
import textwrap
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import main

DATA = Path(__file__).resolve().parent / "data" / "callgraph"


@cache
def graph_of(folder: str) -> dict:
    result = CliRunner().invoke(main, ["graph", folder, "--all", "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def kinds(category: str) -> dict[tuple[str, str], str]:
    g = graph_of(str(DATA / category))
    return {(u, v): g["edge_kinds"].get(f"{u}->{v}", "call") for u, v in g["edges"]}


def inline(tmp_path: Path, source: str) -> dict[tuple[str, str], str]:
    (tmp_path / "main.py").write_text(textwrap.dedent(source))
    return kinds(str(tmp_path))


@pytest.mark.parametrize(("caller", "callee"), [
    ("main.tabs", "main.expand"),  # a module constant re.compile(...).sub(fn, s)
    ("main.words", "main.upper"),  # re.sub(p, fn, s)
    ("main.kw", "main.lowered"),  # from re import sub; sub(p, repl=fn, string=s)
    ("main.Cleaner.clean", "main.squash"),  # a pattern kept on the instance
    ("main.Cleaner.count", "main.squash"),  # subn
])
def test_re_sub_calls_its_function_repl(caller, callee):
    assert kinds("regex_callbacks").get((caller, callee)) == "callback"


@pytest.mark.parametrize(("caller", "callee"), [
    ("main.Cleaner.find", "main.squash"),  # match() calls nothing
    ("main.plain", "main.never"),  # a string repl is no call
    ("main.tabs", "main.upper"), ("main.words", "main.expand"),  # each site its own repl
])
def test_re_sub_draws_nothing_else(caller, callee):
    assert (caller, callee) not in kinds("regex_callbacks")


@pytest.mark.parametrize("caller", ["main.store", "main.lookup", "main.has", "main.fetch", "main.remember",
                                    "main.unique"])
def test_a_dict_or_set_key_is_hashed(caller):
    assert kinds("hashed_keys").get((caller, "main.Key.__hash__")) == "implicit"


@pytest.mark.parametrize(("caller", "callee"), [
    ("main.listed", "main.Ordered.__hash__"),  # `k in [1, 2]`: a list compares, it does not hash
    ("main.indexed", "main.Ordered.__hash__"),  # an instance's __getitem__ is its own call
    ("main.store", "main.Ordered.__hash__"),  # no Ordered is ever a key
    ("main.store", "main.Key.__eq__"),  # __eq__ only on a collision
    ("main.names", "main.Handlers.on_c"),  # no table names it
])
def test_hashing_and_keys_draw_nothing_else(caller, callee):
    assert (caller, callee) not in kinds("hashed_keys")


def test_items_give_no_literal_keys():
    # a literal's constant keys are not the pair's first (heap.pair_keys: at scale every key met
    # every value); the call stays unbound, never guessed
    found = kinds("hashed_keys")
    assert ("main.names", "main.Handlers.on_a") not in found  # for name, _ in first.items()
    assert ("main.names", "main.Handlers.on_b") not in found


def test_a_key_read_off_a_module_table_is_hashed(tmp_path):
    # a registry keyed by what getattr(module, name) gives, names from the table's items()
    found = inline(tmp_path, '''
        from importlib import import_module

        class Curried:
            def __hash__(self):
                return 1

            def __eq__(self, other):
                return self is other

        memo = Curried()
        info = {"main": dict(memo=[1])}
        registry = {}

        def register():
            for module, names in info.items():
                module = import_module(module)
                for name, sigs in names.items():
                    registry[getattr(module, name)] = sigs

        def known(f):
            return f in registry
    ''')
    # the names come from a literal's items(): not known (heap.pair_keys), so nothing is guessed
    assert ("main.register", "main.Curried.__hash__") not in found
    assert ("main.known", "main.Curried.__hash__") not in found  # f holds no value: not guessed
    assert ("main.register", "main.Curried.__eq__") not in found


@pytest.mark.parametrize(("caller", "callee"), [
    ("main.ordered", "main.Version.__lt__"),  # sorted(xs)
    ("main.newest", "main.Version.__lt__"),  # max: x > best, reflected to __lt__ (no __gt__)
    ("main.smaller", "main.Version.__lt__"),  # min(a, b)
    ("main.in_place", "main.Version.__lt__"),  # list.sort()
    ("main.queue", "main.Version.__lt__"),  # heapq.heappush / heappop
    ("main.insert", "main.Version.__lt__"),  # bisect.insort
    ("main.reflected", "main.Greater.__gt__"),  # a < b with no __lt__: b > a
    ("main.largest", "main.Both.__gt__"),  # max compares with >
    ("main.least", "main.Both.__lt__"),  # min with <
])
def test_sorting_compares_the_elements(caller, callee):
    assert kinds("sorting_compares").get((caller, callee)) == "implicit"


@pytest.mark.parametrize(("caller", "callee"), [
    ("main.by_key", "main.Version.__lt__"),  # with key= the keys are compared
    ("main.largest", "main.Both.__lt__"), ("main.least", "main.Both.__gt__"),  # one operator each
    ("main.plain", "main.Unordered.__eq__"),  # sorting does not test equality
    ("main.queue", "main.Greater.__gt__"),  # no Greater is queued
])
def test_sorting_draws_nothing_else(caller, callee):
    assert (caller, callee) not in kinds("sorting_compares")


def test_next_of_a_dicts_iterator_is_a_key_not_a_value(tmp_path):
    """``next(iter(d))`` is one of d's keys: a value of d taken for it drew its ``__str__``
    (sglang/srt 0.5.23 ``LoRARegistry.lru_lora_name``; found by helper hash)."""
    edges = inline(tmp_path, """
        class Ref:
            def __str__(self):
                return "r"

        def first():
            refs = {"name": Ref()}
            return next(iter(refs), None)

        def show():
            return f"{first()}"

        def first_item():
            return next(iter([Ref()]))

        def show_item():
            return f"{first_item()}"
        """)
    assert ("main.show", "main.first") in edges and ("main.show", "main.Ref.__str__") not in edges
    assert ("main.show_item", "main.Ref.__str__") in edges


def test_max_takes_the_reflected_lt_only_where_no_base_outside_the_tree_answers(tmp_path):
    """``max(xs)`` asks ``x > best``: a class without ``__gt__`` has its reflected ``__lt__`` run,
    unless a base outside the tree (``int`` of an ``IntEnum``) answers ``__gt__`` first."""
    edges = inline(tmp_path, """
        class LessOnly:
            def __lt__(self, other):
                return True

        class IntLess(int):
            def __lt__(self, other):
                return True

        def plain():
            return max([LessOnly(), LessOnly()])

        def with_int():
            return max([IntLess(1), IntLess(2)])

        def lowest():
            return min([IntLess(1), IntLess(2)])
        """)
    assert edges.get(("main.plain", "main.LessOnly.__lt__")) == "implicit"
    assert ("main.with_int", "main.IntLess.__lt__") not in edges
    assert edges.get(("main.lowest", "main.IntLess.__lt__")) == "implicit"
