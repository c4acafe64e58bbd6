"""Small readers solved apart per argument value (tracer/callgraph/argclones.py).

A function returning what it reads out of a parameter (``table[key]``, ``x.attr``,
``getattr(obj, name)``, ``t.get(k)``), solved with one set of variables, returns every caller's
table's values to every caller; split per argument value, each caller gets its own."""

from __future__ import annotations

from pathlib import Path

from callgraph_cli import graph

from tracer.callgraph import argclones

READERS = '''
def on_a(): pass
def on_b(): pass

def get(table, key):
    return table[key]

def lookup(table, key):
    return table.get(key)

def named(obj, name):
    return getattr(obj, name)

def first(x):
    return x.attr

class A:
    def __init__(self):
        self.attr = on_a
class B:
    def __init__(self):
        self.attr = on_b

def item_a():
    get({"x": on_a}, "x")()
def item_b():
    get({"x": on_b}, "x")()
def get_a():
    lookup({"x": on_a}, "x")()
def get_b():
    lookup(key="x", table={"x": on_b})()
def attr_a():
    first(A())()
def attr_b():
    first(B())()
def named_a():
    named(A(), "attr")()
def named_b():
    named(B(), "attr")()
'''


def edges(data: dict) -> set[tuple[str, str]]:
    return {(u, v) for u, v in data["edges"]}


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "main.py").write_text(text)
    return tmp_path


OWN = {(f"main.{kind}_{c}", f"main.on_{c}") for kind in ("item", "get", "attr", "named") for c in "ab"}
OTHERS = {(f"main.{kind}_{c}", f"main.on_{d}") for kind in ("item", "get", "attr", "named") for c, d in ("ab", "ba")}


def test_each_caller_gets_only_what_its_own_argument_holds(tmp_path):
    data = graph(write(tmp_path, READERS))
    found = edges(data)
    assert OWN <= found
    assert found & OTHERS == set()
    assert {("main.item_a", "main.get"), ("main.item_b", "main.get"), ("main.named_b", "main.named")} <= found
    assert data["stats"]["functions_cloned_per_argument"] == 4  # one copy each: the second table / instance
    assert data["stats"]["methods_cloned_per_receiver"] == 0
    assert sum(n == "main.get" for n in data["nodes"]) == 1  # a copy is the function's own node


def test_without_copies_the_callers_meet(tmp_path, monkeypatch):
    monkeypatch.setattr(argclones, "MAX_ARG_CLONES", 0)
    data = graph(write(tmp_path, READERS))
    assert edges(data) & OTHERS == OTHERS  # the merge the copies avoid (the test can fail)
    assert data["stats"]["functions_cloned_per_argument"] == 0
    assert data["stats"]["arg_clones_refused"] == 4


FIVE = "\n".join([f"def on_{i}(): pass" for i in range(5)] + [
    "def get(table, key):", "    return table[key]"] + [
    f"def caller_{i}():\n    get({{'x': on_{i}}}, 'x')()" for i in range(5)]) + "\n"


def test_beyond_three_copies_the_rest_share_the_function_own_variables(tmp_path):
    data = graph(write(tmp_path, FIVE))
    found = edges(data)
    assert {(f"main.caller_{i}", f"main.on_{i}") for i in range(5)} <= found
    # callers 1-3 have their copies; 0 (the first) and 4 (beyond the cap) share get's own variables
    assert {(f"main.caller_{i}", f"main.on_{j}") for i in range(5) for j in range(5) if i != j} & found == {
        ("main.caller_0", "main.on_4"), ("main.caller_4", "main.on_0")}
    assert data["stats"]["functions_cloned_per_argument"] == argclones.MAX_ARG_CLONES == 3
    assert data["stats"]["arg_clones_refused"] == 1


RECURSIVE = '''
def on_a(): pass
def on_b(): pass

def find(tree, key):
    if key in tree:
        return tree[key]
    return find(tree["sub"], key)

def caller_a():
    find({"sub": {"y": on_a}}, "y")()

def caller_b():
    find({"sub": {"y": on_b}}, "y")()
'''


def test_a_recursive_reader_is_split_at_each_level(tmp_path):
    data = graph(write(tmp_path, RECURSIVE))
    found = edges(data)
    assert {("main.caller_a", "main.on_a"), ("main.caller_b", "main.on_b"), ("main.find", "main.find")} <= found
    assert {("main.caller_a", "main.on_b"), ("main.caller_b", "main.on_a")} & found == set()
    # the second outer dict and both inner ones (called from find and from its copy)
    assert data["stats"]["functions_cloned_per_argument"] == 3


STORED = '''
class Holder:
    pass

holder = Holder()

def on_a(): pass
def on_b(): pass

def get(table, key):
    holder.last = table
    return table[key]

def caller_a():
    get({"x": on_a}, "x")()

def caller_b():
    get({"x": on_b}, "x")()
'''


def test_a_function_storing_the_parameter_is_not_split(tmp_path):
    data = graph(write(tmp_path, STORED))
    found = edges(data)
    assert {("main.caller_a", "main.on_a"), ("main.caller_a", "main.on_b"), ("main.caller_b", "main.on_a")} <= found
    assert data["stats"]["functions_cloned_per_argument"] == 0
    assert data["stats"]["arg_clones_refused"] == 0


GUARDED = '''
def on_a(): pass
def on_b(): pass

def get(table, key):
    if isinstance(table, dict) and len(table) and hasattr(table, "get"):
        return table[key]
    return None

def keep(table, key):
    register(table)
    return table[key]

def register(t):
    pass

def caller_a():
    get({"x": on_a}, "x")()

def caller_b():
    get({"x": on_b}, "x")()

def keep_a():
    keep({"x": on_a}, "x")()

def keep_b():
    keep({"x": on_b}, "x")()
'''


def test_a_parameter_only_checked_by_builtins_is_split_one_passed_on_is_not(tmp_path):
    data = graph(write(tmp_path, GUARDED))
    found = edges(data)
    assert {("main.caller_a", "main.on_a"), ("main.caller_b", "main.on_b")} <= found
    assert {("main.caller_a", "main.on_b"), ("main.caller_b", "main.on_a")} & found == set()
    assert {("main.keep_a", "main.on_b"), ("main.keep_b", "main.on_a")} <= found  # passed on: merged
    assert data["stats"]["functions_cloned_per_argument"] == 1  # get's copy for the second table; keep has none
    assert data["stats"]["arg_clones_refused"] == 0
