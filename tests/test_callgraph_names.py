"""Names computed by the program (tracer/callgraph/members.py, prefixes.py, heap.binop).

names_reflect (tests/data/callgraph): PLY's reflection in miniature (``dict((k, getattr(m, k)) for k
in dir(m))``, the grammar actions picked by ``name.startswith("p_")`` and bound through the dict by
name, the lexer's by ``f[:2] == "t_"``), ``inspect.getmembers``, ``vars(cls)`` / ``cls.__dict__``,
``hasattr(fn, "_marked")`` of a decorator's mark, ``sys.modules[name]`` of a table module, and a
visitor's ``"visit_" + type(node).__name__``. Each mechanism's edges are exact: what the name test
or the key leaves out must stay absent."""

from __future__ import annotations

from pathlib import Path

from callgraph_cli import DATA, graph


def edges(folder: Path) -> set[tuple[str, str]]:
    return {(u, v) for u, v in graph(folder)["edges"]}


def callees(found: set[tuple[str, str]], caller: str) -> set[str]:
    return {v for u, v in found if u == caller}


def test_grammar_actions_bound_by_name_through_a_dict_of_dir():
    found = edges(DATA / "names_reflect")
    # yacc: [(k, getattr(module, k)) for k in dir(module)], names past `if not name.startswith("p_")
    # ...: continue`, pdict[self.func]: the p_ methods only (not helper, t_NUMBER, run, __init__)
    assert callees(found, "main.parse") == {"main.Parser.p_expr", "main.Parser.p_term"}
    # lex: [f for f in ldict if f[:2] == "t_"], ldict[f]
    assert callees(found, "main.tokens") == {"main.Parser.t_NUMBER"}


def test_getmembers_vars_and_dunder_dict_give_the_names_of_their_argument():
    found = edges(DATA / "names_reflect")
    # for name, _ in inspect.getmembers(obj): if name.startswith("on_"): getattr(obj, name)()
    assert callees(found, "main.members") == {"main.Events.on_start", "main.Events.on_stop"}
    # {k: v for k, v in vars(cls).items() if k.startswith("on_")}["on_start"]: that one name
    assert callees(found, "main.handlers") == {"main.Events.on_start"}
    # cls.__dict__["off"] returned and called by the module
    assert ("main", "main.Events.off") in found


def test_hasattr_of_a_function_admits_only_the_functions_marked_so():
    found = edges(DATA / "names_reflect")
    assert callees(found, "main.collect") == {"main.Rules.p_marked"}  # p_plain has no _marked


def test_sys_modules_of_a_constant_name_is_that_module():
    found = edges(DATA / "names_reflect")
    assert ("main", "tables.action") in found
    assert ("main", "tables.unused") not in found


def test_visit_prefix_still_dispatches_by_class_name():
    found = edges(DATA / "names_reflect")
    assert callees(found, "main.Visitor.visit") == {"main.Visitor.visit_Name", "main.Visitor.visit_Call",
                                                    "main.Visitor.generic_visit"}


def test_a_name_filled_by_a_late_rule_makes_no_prefix(tmp_path):
    """``getattr(self, "parse_" + self.kind)`` in a method no call reaches: self is seeded late
    (solve.py's rounds), and ``self.kind`` is "a" then. The prefix rule used to fire in an earlier
    round, when ``self.kind`` was still empty, and read every ``parse_`` method: the answer
    depended on which rule ran first."""
    (tmp_path / "main.py").write_text('''
class P:
    kind = "a"

    def run(self):
        return getattr(self, "parse_" + self.kind)()

    def parse_a(self):
        return 1

    def parse_b(self):
        return 2
''')
    assert callees(edges(tmp_path), "main.P.run") == {"main.P.parse_a"}


def test_every_start_the_left_side_gets_makes_a_prefix(tmp_path):
    """``prefix + name`` with name unknown: every start ``prefix`` holds, also one that arrives
    after the rule first fired (it used to keep the starts of its first call only)."""
    (tmp_path / "main.py").write_text('''
class V:
    def go(self, prefix, name):
        return getattr(self, prefix + name)()

    def on_a(self):
        return 1

    def do_a(self):
        return 2

    def other(self):
        return 3


def first(v, name):
    return v.go("on_", name)


def later(v):
    return v.go("do_", input())


first(V(), input())
later(V())
''')
    assert callees(edges(tmp_path), "main.V.go") == {"main.V.on_a", "main.V.do_a"}


def test_unknown_key_of_a_dict_of_names_selects_none_of_them(tmp_path):
    """``d[key]`` with a key no value names, d built from dir(): no attribute is guessed."""
    (tmp_path / "main.py").write_text('''
import re


class L:
    def t_a(self):
        return 1

    def helper(self):
        return 0


def use(obj, text):
    d = dict([(k, getattr(obj, k)) for k in dir(obj)])
    key = re.match("x", text).group(0)
    d.get(key)()
    d["t_a"]()


use(L(), input())
''')
    assert callees(edges(tmp_path), "main.use") == {"main.L.t_a"}


def test_continue_after_a_failed_test_narrows_what_follows(tmp_path):
    """``if not name.startswith("p_"): continue`` narrows the rest of the loop body, and what the
    ``continue`` path assigned still reaches the next iteration (the loop's join)."""
    (tmp_path / "main.py").write_text('''
class P:
    def p_x(self):
        return 1

    def q(self):
        return 0


def f(obj):
    last = None
    for name in dir(obj):
        if last is not None:
            last()
        if not name.startswith("p_"):
            last = obj.q
            continue
        getattr(obj, name)()


f(P())
''')
    assert callees(edges(tmp_path), "main.f") == {"main.P.p_x", "main.P.q"}


def test_import_module_of_a_known_start_names_every_module_of_that_start():
    """names_import: ``import_module("app.plugins." + name)`` and ``f"app.plugins.{name}"`` with name
    unknown: each module of the tree under app.plugins (not app.other's)."""
    found = edges(DATA / "names_import")
    for loader in ("app.loader.load", "app.loader.load_f"):
        assert callees(found, loader) == {"app.plugins.a.setup", "app.plugins.b.setup"}
    assert callees(found, "app.loader.load_exact") == {"app.other.c.setup"}


def test_vars_of_an_instance_names_no_method(tmp_path):
    """``vars(obj)`` is the instance's own fields: its class's methods are not among them;
    ``vars(type(obj))`` holds them."""
    (tmp_path / "main.py").write_text('''
class E:
    def on_a(self):
        return 1


def of_instance(obj):
    for name in vars(obj):
        getattr(obj, name)()


def of_class(obj):
    for name in vars(type(obj)):
        getattr(obj, name)()


of_instance(E())
of_class(E())
''')
    found = edges(tmp_path)
    assert callees(found, "main.of_instance") == set()
    assert callees(found, "main.of_class") == {"main.E.on_a"}
