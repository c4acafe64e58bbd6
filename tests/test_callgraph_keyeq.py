"""Hashing and comparing keys, dict-like classes, the length hint (helper hash2: keyeq.py,
dictlike.py). Each test builds a minimal program and names the edges it must have, with their
kind, and the plausible wrong ones that must stay absent."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

from tracer.cli import main

SYM = '''
    import collections.abc
    import operator
    from collections import UserDict


    class Sym:
        def __init__(self, name):
            self.name = name

        def __hash__(self):
            return hash(self.name)

        def __eq__(self, other):
            return self.name == other.name


    class EqOnly(Sym):
        def __eq__(self, other):
            return False
'''


def edges(tmp_path: Path, source: str) -> dict[tuple[str, str], str]:
    (tmp_path / "main.py").write_text(textwrap.dedent(SYM) + textwrap.dedent(source))
    result = CliRunner().invoke(main, ["graph", str(tmp_path), "--all", "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    g = json.loads(result.stdout)
    return {(u, v): g["edge_kinds"].get(f"{u}->{v}", "call") for u, v in g["edges"]}


def test_a_tuple_hashes_its_elements(tmp_path):
    found = edges(tmp_path, '''
        def hashed(a, b):
            return hash((a, tuple([b])))

        def keyed(a):
            cache = {}
            cache[(a, 1)] = 2

        def frozen(a):
            return hash(frozenset([1]))

        hashed(Sym("a"), Sym("b"))
        keyed(Sym("c"))
        frozen(Sym("d"))
    ''')
    assert found.get(("main.hashed", "main.Sym.__hash__")) == "implicit"
    assert found.get(("main.keyed", "main.Sym.__hash__")) == "implicit"
    assert ("main.frozen", "main.Sym.__hash__") not in found  # its argument is never hashed
    assert ("main.hashed", "main.Sym.__eq__") not in found  # hashing compares nothing


def test_eq_without_hash_is_unhashable(tmp_path):
    found = edges(tmp_path, '''
        def keyed(e):
            return hash(e), {e} if e else None

        def plain(s):
            return hash(s)

        keyed(EqOnly("x"))
        plain(Sym("y"))
    ''')
    assert ("main.keyed", "main.Sym.__hash__") not in found  # EqOnly.__hash__ is None: a TypeError
    assert found.get(("main.plain", "main.Sym.__hash__")) == "implicit"


def test_a_list_compares_a_set_hashes(tmp_path):
    found = edges(tmp_path, '''
        def in_list(k):
            xs = [Sym("p"), Sym("q")]
            xs.remove(k)
            return k in xs, xs.index(k)

        def in_ints(k):
            return k in [1, 2]

        def in_set(k):
            s = {Sym("r")}
            s.discard(k)

        def in_setcomp(k):
            s = {x for x in [Sym("s")]}
            return k in s

        in_list(Sym("z"))
        in_ints(Sym("w"))
        in_set(Sym("y"))
        in_setcomp(Sym("v"))
    ''')
    assert found.get(("main.in_setcomp", "main.Sym.__hash__")) == "implicit"  # a set comprehension is a set
    assert ("main.in_setcomp", "main.Sym.__eq__") not in found
    assert found.get(("main.in_list", "main.Sym.__eq__")) == "implicit"
    assert ("main.in_list", "main.Sym.__hash__") not in found  # a list hashes nothing
    assert ("main.in_ints", "main.Sym.__eq__") not in found  # int elements compare themselves
    assert found.get(("main.in_set", "main.Sym.__hash__")) == "implicit"
    assert ("main.in_set", "main.Sym.__eq__") not in found  # only on a collision


def test_lists_compared_compare_their_elements(tmp_path):
    found = edges(tmp_path, '''
        def same(a, b):
            return [a] == [b]

        def other(a):
            return [a] == 3, (a,) is (a,)

        same(Sym("m"), Sym("n"))
        other(Sym("o"))
    ''')
    assert found.get(("main.same", "main.Sym.__eq__")) == "implicit"
    assert ("main.other", "main.Sym.__eq__") not in found  # a list equals no int; `is` calls nothing


MAPPING = '''
    class Store(collections.abc.MutableMapping):
        def __init__(self):
            self.data = {}

        def __getitem__(self, k):
            return self.data[k]

        def __setitem__(self, k, v):
            self.data[k] = v

        def __delitem__(self, k):
            del self.data[k]

        def __iter__(self):
            return iter(self.data)

        def __len__(self):
            return len(self.data)


    class Users(UserDict):
        def __setitem__(self, k, v):
            super().__setitem__(k, v)


    class Plain(dict):
        def __getitem__(self, k):
            return 1

        def __iter__(self):
            return iter(())
'''


def test_mapping_mixins_call_the_abstract_methods(tmp_path):
    found = edges(tmp_path, MAPPING + '''
    def got(s):
        return s.get("k")

    def popped(s):
        return s.pop("k")

    def defaulted(s):
        return s.setdefault("k", 1)

    def updated(s):
        s.update({"k": 2})

    def has(s):
        return "k" in s

    def user(u):
        u.update({"k": 1})
        return u.get("k"), "k" in u

    def plain(p):
        return p.get("k"), "k" in p

    got(Store())
    popped(Store())
    defaulted(Store())
    updated(Store())
    has(Store())
    user(Users())
    plain(Plain())
    ''')
    assert found.get(("main.got", "main.Store.__getitem__")) == "implicit"
    assert found.get(("main.popped", "main.Store.__getitem__")) == "implicit"
    assert found.get(("main.popped", "main.Store.__delitem__")) == "implicit"
    assert found.get(("main.defaulted", "main.Store.__setitem__")) == "implicit"
    assert found.get(("main.updated", "main.Store.__setitem__")) == "implicit"
    assert found.get(("main.has", "main.Store.__getitem__")) == "implicit"  # Mapping.__contains__
    assert found.get(("main.user", "main.Users.__setitem__")) == "implicit"  # MutableMapping.update
    for wrong in [("main.got", "main.Store.__delitem__"), ("main.updated", "main.Store.__getitem__"),
                  ("main.has", "main.Store.__iter__"),  # __contains__ found: no fallback to iteration
                  ("main.plain", "main.Plain.__getitem__"),  # dict's methods are C: no override runs
                  ("main.plain", "main.Plain.__iter__")]:  # dict.__contains__ hashes
        assert wrong not in found, wrong


def test_list_asks_the_length(tmp_path):
    found = edges(tmp_path, '''
    class Bag:
        def __iter__(self):
            return iter([1])

        def __len__(self):
            return 1

    class Hinted:
        def __iter__(self):
            return iter([1])

        def __length_hint__(self):
            return 1

    def listed(b, h):
        return list(b), tuple(h)

    def hinted(b):
        return operator.length_hint(b)

    def looped(b):
        for x in b:
            pass

    listed(Bag(), Hinted())
    hinted(Bag())
    looped(Bag())
    ''')
    assert found.get(("main.listed", "main.Bag.__len__")) == "implicit"
    assert found.get(("main.listed", "main.Hinted.__length_hint__")) == "implicit"
    assert found.get(("main.hinted", "main.Bag.__len__")) == "implicit"
    assert ("main.looped", "main.Bag.__len__") not in found  # a for loop asks no length
    assert ("main.hinted", "main.Bag.__iter__") not in found  # nor does length_hint iterate
