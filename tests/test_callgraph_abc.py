"""Abstract and typing-only code in the whole call graph (`graph --all`): ABCs and Protocols are
never instantiated, an annotation naming one stands for its concrete subclasses, ``if
TYPE_CHECKING:`` never runs, ``__getattr__`` is not asked for names the class binds, the implicit
class methods ``__init_subclass__``/``__class_getitem__``, a ``str`` subclass's ``__str__`` under
``str()``/f-strings/``str.format``. Each program is small and inline; each test asserts the exact
edges between its functions and the plausible wrong ones absent."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

from tracer.cli import main


def edges_of(tmp_path: Path, source: str) -> set[tuple[str, str]]:
    (tmp_path / "main.py").write_text(textwrap.dedent(source))
    result = CliRunner().invoke(main, ["graph", str(tmp_path), "--all", "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    return {(u, v) for u, v in json.loads(result.stdout)["edges"] if v.startswith("main.")}


ABC_PROGRAM = '''
    from abc import ABC, abstractmethod
    from typing import Protocol


    class Storage(ABC):
        def __init__(self):
            self.opened = True

        @abstractmethod
        def read(self):
            ...

        def both(self):
            return self.read()


    class Mem(Storage):
        def read(self):
            return 1


    class Disk(Storage):
        def read(self):
            return 2


    class Half(Storage):
        pass


    class Reader(Protocol):
        def read(self):
            ...


    class Impl:
        def read(self):
            return 3


    def use(s: Storage):
        s.read()


    def use_p(r: Reader):
        r.read()


    def make():
        Storage().read()
        Reader().read()
        Half().read()
        Mem()


    make()
'''


def test_an_abc_and_a_protocol_are_never_instantiated(tmp_path):
    found = edges_of(tmp_path, ABC_PROGRAM)
    assert ("main", "main.make") in found
    assert ("main.make", "main.Storage.__init__") in found  # Mem() runs the inherited __init__
    assert ("main.Storage.both", "main.Mem.read") in found  # self: the subclass the program makes
    for wrong in [("main.make", "main.Storage.read"), ("main.make", "main.Reader.read"),
                  ("main.Storage.both", "main.Storage.read"),
                  ("main.make", "main.Mem.read")]:  # Half() is abstract too: read is not overridden
        assert wrong not in found, wrong


def test_an_annotation_naming_an_abc_stands_for_its_concrete_subclasses(tmp_path):
    found = edges_of(tmp_path, ABC_PROGRAM)
    assert {("main.use", "main.Mem.read"), ("main.use", "main.Disk.read")} <= found
    assert ("main.use", "main.Storage.read") not in found
    # a Protocol no class of the tree subclasses stands for no class by its annotation; the
    # parameter is typed by the attributes read on it (seeds.seed_params: the made class having read)
    assert {e for e in found if e[0] == "main.use_p"} == {("main.use_p", "main.Mem.read")}


def test_a_subclass_made_before_its_abstract_base_resolves_is_still_abstract(tmp_path):
    found = edges_of(tmp_path, '''
        from typing import TYPE_CHECKING
        from abc import ABC, abstractmethod

        if TYPE_CHECKING:
            pass


        def make():
            Half().read()


        class Base(ABC):
            @abstractmethod
            def read(self):
                ...


        class Half(Base):
            pass


        make()
    ''')
    assert ("main", "main.make") in found
    assert ("main.make", "main.Base.read") not in found


def test_a_type_checking_body_never_runs(tmp_path):
    found = edges_of(tmp_path, '''
        from typing import TYPE_CHECKING
        import typing

        if TYPE_CHECKING:
            from main_types import Box

            def stub():
                pass
            stub()
        else:
            def runtime():
                pass
            runtime()

        if not typing.TYPE_CHECKING:
            def also():
                pass
            also()
        else:
            def never():
                pass
            never()
    ''')
    assert {("main", "main.runtime"), ("main", "main.also")} <= found
    assert ("main", "main.stub") not in found
    assert ("main", "main.never") not in found


def test_a_type_checking_import_still_means_the_annotation(tmp_path):
    (tmp_path / "kinds.py").write_text("class Box:\n    def open(self):\n        pass\n")
    found = edges_of(tmp_path, '''
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from kinds import Box


        def use(b: "Box"):
            b.open()
    ''')
    result = CliRunner().invoke(main, ["graph", str(tmp_path), "--all", "--format", "json", "--no-cache"])
    edges = {tuple(e) for e in json.loads(result.stdout)["edges"]}
    assert ("main.use", "kinds.Box.open") in edges
    assert not {e for e in found if e[1].startswith("main.") and e[0] == "main"}


def test_getattr_is_not_asked_for_a_name_init_or_the_body_binds(tmp_path):
    found = edges_of(tmp_path, '''
        import os


        class Lazy:
            level = os.sep

            def __init__(self, value):
                self.name = value

            def __getattr__(self, name):
                return 2

            def run(self):
                return self.name, self.level

            def other(self):
                return self.missing


        def go():
            lazy = Lazy(os.getcwd())
            lazy.run()
            lazy.other()


        go()
    ''')
    assert ("main.Lazy.other", "main.Lazy.__getattr__") in found
    assert ("main.Lazy.run", "main.Lazy.__getattr__") not in found


def test_init_subclass_and_class_getitem_are_implicit_classmethods(tmp_path):
    found = edges_of(tmp_path, '''
        class Meta:
            def __init_subclass__(cls, **kw):
                cls.setup()

            def __class_getitem__(cls, item):
                return cls.alias()

            @classmethod
            def setup(cls):
                pass

            @classmethod
            def alias(cls):
                pass


        class Sub(Meta):
            @classmethod
            def setup(cls):
                pass

            @classmethod
            def alias(cls):
                pass


        X = Sub[int]
    ''')
    assert {("main", "main.Meta.__init_subclass__"), ("main.Meta.__init_subclass__", "main.Sub.setup"),
            ("main", "main.Meta.__class_getitem__"), ("main.Meta.__class_getitem__", "main.Sub.alias")} <= found
    # Meta's own hook runs for its subclasses only: cls is never Meta
    assert ("main.Meta.__init_subclass__", "main.Meta.setup") not in found
    assert ("main.Meta.__class_getitem__", "main.Meta.alias") not in found


def test_a_str_subclass_str_is_what_str_fstrings_and_format_call(tmp_path):
    found = edges_of(tmp_path, '''
        class S(str):
            def __str__(self):
                return "s"

            def __repr__(self):
                return "r"


        def plain():
            return str(S("a"))


        def formatted():
            return f"{S('b')}"


        def formatted2():
            return "{}".format(S("c"))


        def constant():
            return "{}".format("d")


        plain()
        formatted()
        formatted2()
        constant()
    ''')
    assert {("main.plain", "main.S.__str__"), ("main.formatted", "main.S.__str__"),
            ("main.formatted2", "main.S.__str__")} <= found
    assert ("main.formatted2", "main.S.__repr__") not in found
    assert not {e for e in found if e[0] == "main.constant"}


def test_percent_formatting_calls_str_and_repr_at_their_places(tmp_path):
    found = edges_of(tmp_path, '''
        class A:
            def __str__(self):
                return "a"

            def __repr__(self):
                return "ra"


        class B:
            def __str__(self):
                return "b"

            def __repr__(self):
                return "rb"


        def one():
            return "%s" % A()


        def pair():
            return "%d %r" % (1, B())


        def pair2():
            return "%s and %s" % (A(), 2)


        one()
        pair()
        pair2()
    ''')
    assert {("main.one", "main.A.__str__"), ("main.pair", "main.B.__repr__"), ("main.pair2", "main.A.__str__")} <= found
    for wrong in [("main.one", "main.A.__repr__"), ("main.pair", "main.B.__str__"), ("main.pair2", "main.A.__repr__")]:
        assert wrong not in found, wrong


def test_an_abc_annotation_defers_to_what_the_callers_pass(tmp_path):
    found = edges_of(tmp_path, ABC_PROGRAM + '''
    def passed(s: Storage):
        s.read()


    passed(Mem())
''')
    assert ("main.passed", "main.Mem.read") in found
    assert ("main.passed", "main.Disk.read") not in found  # no caller passes a Disk
    assert ("main.use", "main.Disk.read") in found  # no caller at all: every concrete subclass


def test_an_abc_of_many_concrete_subclasses_annotates_as_before(tmp_path):
    subclasses = "".join(f"\n\nclass C{i}(Base):\n    def read(self):\n        return {i}\n" for i in range(9))
    found = edges_of(tmp_path, '''
from abc import ABC, abstractmethod


class Base(ABC):
    @abstractmethod
    def read(self):
        ...

    def name(self):
        return "base"
''' + subclasses + '''

def use(b: Base):
    b.read()
    b.name()
''')
    # nine concrete subclasses (MAX_STAND_INS 8): the abstract class's own instance, as before the rule
    assert {("main.use", "main.Base.read"), ("main.use", "main.Base.name")} <= found
    assert not {e for e in found if e[0] == "main.use" and e[1].startswith("main.C")}


def test_a_builtin_base_str_is_what_runs_when_the_tree_defines_only_repr(tmp_path):
    found = edges_of(tmp_path, '''
        class Token(str):
            def __repr__(self):
                return "Token()"


        class Oops(Exception):
            def __repr__(self):
                return "Oops()"


        class Node:
            def __repr__(self):
                return "Node()"


        def show():
            t, e, n = Token("a"), Oops(), Node()
            return "%s %s" % (t, e), str(t), f"{e}", str(n)


        def rep():
            return repr(Token("b"))


        show()
        rep()
    ''')
    assert {("main.show", "main.Node.__repr__"), ("main.rep", "main.Token.__repr__")} <= found
    # str.__str__ and BaseException.__str__ run, not the tree's __repr__
    assert ("main.show", "main.Token.__repr__") not in found
    assert ("main.show", "main.Oops.__repr__") not in found


def test_a_class_of_a_base_that_never_resolves_is_still_made(tmp_path):
    found = edges_of(tmp_path, '''
        from abc import ABC, abstractmethod
        from nowhere_at_all import factory


        class Base(ABC):
            @abstractmethod
            def read(self):
                ...


        class Odd(factory()):
            def run(self):
                pass


        def make():
            Odd().run()


        make()
    ''')
    assert ("main.make", "main.Odd.run") in found
