"""Methods solved apart per receiver class (tracer/callgraph/clones.py) and dict iteration.

receiver_clones (tests/data/callgraph): a base class's registrar stores a lambda over ``self``
and the function it is given, in a dict the base class's __init__ allocates; a dispatcher
calls it with the caller's state. Solved with one set of variables for both parser classes,
each registered function gets both parsers and both states; solved apart, its own only."""

from __future__ import annotations

from callgraph_cli import DATA, graph

from tracer.callgraph import clones


def edges(data: dict) -> set[tuple[str, str]]:
    return {(u, v) for u, v in data["edges"]}


WRONG = {  # what one set of variables for both receivers makes
    ("main.parse_block_thing", "main.InlineState.append"),
    ("main.parse_inline_thing", "main.BlockState.append"),
}


def test_each_receiver_class_gets_its_own_copy_of_the_base_methods():
    data = graph(DATA / "receiver_clones")
    found = edges(data)
    assert {("main.parse_block_thing", "main.BlockParser.extract"), ("main.parse_block_thing", "main.BlockState.append"),
            ("main.parse_inline_thing", "main.InlineParser.render"),
            ("main.parse_inline_thing", "main.InlineState.append")} <= found
    assert found & WRONG == set()
    # Parser.__init__, register and dispatch copied for the second parser class (register's lambda
    # with it), and the function the lambda's copy calls
    assert data["stats"]["methods_cloned_per_receiver"] == 4
    assert data["stats"]["clones_refused"] == 0
    assert "main.Parser.register.<lambda1>" in data["nodes"]  # a copy is the function's own node
    assert sum(n == "main.Parser.register.<lambda1>" for n in data["nodes"]) == 1


def test_without_copies_the_receivers_meet_and_the_cap_is_counted(monkeypatch):
    monkeypatch.setattr(clones, "MAX_CLONES", 0)
    data = graph(DATA / "receiver_clones")
    assert edges(data) & WRONG == WRONG  # the merge the copies avoid (the test can fail)
    assert data["stats"]["methods_cloned_per_receiver"] == 0
    assert data["stats"]["clones_refused"] == 3


def test_results_are_narrowed_per_receiver_when_no_copy_is_made(monkeypatch):
    monkeypatch.setattr(clones, "MAX_CLONES", 0)
    data = graph(DATA / "receiver_results")
    assert data["stats"]["results_narrowed_by_receiver"] == 2
    assert ("main.Base.render", "main.Plain.text") not in edges(data)


def test_a_static_helper_called_from_a_copy_is_copied_with_it(tmp_path):
    (tmp_path / "main.py").write_text('''
class Parser:
    def __init__(self):
        self.rules = []

    @staticmethod
    def insert(rules, name):
        rules.append(name)

    def add(self, name):
        self.insert(self.rules, name)

    def run(self):
        for name in self.rules:
            getattr(self, "parse_" + name)()


class Block(Parser):
    def parse_quote(self):
        pass


class Inline(Parser):
    def parse_link(self):
        pass


b, i = Block(), Inline()
b.add("quote")
i.add("link")
b.run()
i.run()
''')
    found = edges(graph(tmp_path))
    assert {("main.Parser.run", "main.Block.parse_quote"), ("main.Parser.run", "main.Inline.parse_link")} <= found
    # each list holds its own parser's names only: no getattr of a name the other registered
    assert not any(callee.endswith("parse_") for _, callee in found)


def test_iterating_a_dict_binds_its_keys(tmp_path):
    (tmp_path / "main.py").write_text('''
class Parser:
    SPEC = {"quote": r"^ {0,3}>", "link": LINK}

    def __init__(self):
        self.methods = {name: getattr(self, "parse_" + name) for name in self.SPEC}

    def parse_quote(self):
        pass

    def parse_link(self):
        pass

    def parse_method(self, key):
        return self.methods[key]()

    def unrelated_parse_(self):
        pass


LINK = "x"
Parser().parse_method(input())
''')
    found = edges(graph(tmp_path))
    assert {("main.Parser.parse_method", "main.Parser.parse_quote"),
            ("main.Parser.parse_method", "main.Parser.parse_link")} <= found
    # the keys are known: no "parse_" prefix read of every parse_ attribute (parse_method itself)
    assert ("main.Parser.parse_method", "main.Parser.parse_method") not in found


def test_a_plugin_named_by_a_dotted_string_is_imported_and_called(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text('''
from importlib import import_module

TABLE = {"strike": "pkg.plugins.strike", "other": "pkg.plugins.other"}


def load(name):
    module_path, func_name = TABLE[name].rsplit(".", 1)
    module = import_module(module_path)
    return getattr(module, func_name)


def build(names):
    for plugin in [load(n) for n in names]:
        plugin()


build(["strike"])
''')
    (tmp_path / "pkg" / "plugins.py").write_text('''
def strike():
    pass


def other():
    pass


def never():
    pass
''')
    found = edges(graph(tmp_path / "pkg"))
    assert ("build", "plugins.strike") in found  # names relative to the scanned package
    assert ("build", "plugins.other") not in found  # only the name the package passes
    assert ("build", "plugins.never") not in found


def test_a_function_bound_by_hand_with_method_type_is_called_as_a_method(tmp_path):
    (tmp_path / "main.py").write_text('''
import types


class Inline:
    def process(self, text):
        return text

    def parse(self, text):
        return self.process(text)


def process(inline, text):
    return inline


def plugin(inline):
    inline.process = types.MethodType(process, inline)


def unbound(inline, text):
    pass


p = Inline()
plugin(p)
p.parse("x")
''')
    found = edges(graph(tmp_path))
    assert {("main.Inline.parse", "main.process"), ("main.Inline.parse", "main.Inline.process")} <= found
    assert not any(callee == "main.unbound" for _, callee in found)
