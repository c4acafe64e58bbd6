"""Stored and passed callables in the whole call graph (`graph --all`): containers written in
place before a constant-key write, ``collections.defaultdict`` factories, ``functools.partial``
arguments, callables kept on instances. Each program is small and written inline; each test
asserts the exact edges between the program's functions and the plausible wrong ones absent."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

from tracer.cli import main


def graph(tmp_path: Path, files: dict[str, str]) -> dict:
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(source))
    result = CliRunner().invoke(main, ["graph", str(tmp_path), "--all", "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def edges_of(tmp_path: Path, source: str) -> set[tuple[str, str]]:
    return {(u, v) for u, v in graph(tmp_path, {"main.py": source})["edges"] if v.startswith("main.")}


def test_a_container_written_in_place_keeps_its_items_after_a_constant_key_write(tmp_path):
    # toolz's _signatures: module_info[builtins] = dict(...) then module_info['toolz'] = dict(...);
    # the constant-key write derived an exact copy of `{}` that forgot the first write
    found = edges_of(tmp_path, '''
        import builtins

        REG = {}
        REG[builtins] = dict(a=[lambda x: None])
        REG["k"] = dict(b=[lambda y: None])
        LATE = {}
        LATE.update(FIRST=lambda: None)
        LATE["k"] = lambda: None

        def f():
            pass

        def g():
            pass

        def h():
            pass

        def check():
            for mod, info in REG.items():
                for name, fns in info.items():
                    for fn in fns:
                        fn(1)
            for fn in LATE.values():
                fn()

        def keys(name):
            d = {}
            d["k"] = f
            d["k"] = g
            d["k"]()
            e = {}
            e[name] = h
            e["k"] = g
            e["k"]()
    ''')
    assert found == {("main.check", "main.<lambda1>"), ("main.check", "main.<lambda2>"),
                     ("main.check", "main.<lambda3>"), ("main.check", "main.<lambda4>"),
                     ("main.keys", "main.g"), ("main.keys", "main.h")}
    assert ("main.keys", "main.f") not in found  # d["k"] = g replaced it: still flow-sensitive


def test_a_defaultdict_calls_its_factory_where_a_missing_item_is_read(tmp_path):
    found = edges_of(tmp_path, '''
        import collections
        from collections import defaultdict

        def make():
            return []

        def other():
            return []

        def group(pairs):
            d = collections.defaultdict(lambda: [].append)
            for k, v in pairs:
                d[k](v)
            return d

        def counts(xs):
            c = defaultdict(make)
            for x in xs:
                c[x].append(x)

        def lookups(xs):
            c = defaultdict(other)
            c.get(1)
            return c
    ''')
    # a dict's .get never runs the factory; only d[k] does, where it is read
    assert found == {("main.group", "main.group.<lambda1>"), ("main.counts", "main.make")}


def test_a_submodule_is_a_name_in_its_package_once_imported(tmp_path):
    # toolz/__init__.py: `from .functoolz import *` then `functoolz._sigs.create_signature_registry()`
    data = graph(tmp_path, {
        "pkg/__init__.py": '''
            from .tools import *
            tools.helpers.setup()
        ''',
        "pkg/tools.py": '''
            from . import helpers
            def run():
                pass
        ''',
        "pkg/helpers.py": '''
            def setup():
                pass
        ''',
    })
    assert ["pkg", "pkg.helpers.setup"] in data["edges"]


def test_cast_and_update_wrapper_return_their_argument(tmp_path):
    found = edges_of(tmp_path, '''
        import functools
        import typing as t
        from typing import cast

        class Group:
            def list_commands(self):
                pass

        class Leaf:
            def list_commands(self):
                pass

        def visible(command):
            multi = t.cast(Group, command)
            multi.list_commands()
            cast(Group, command).list_commands()

        def pass_context(f):
            def new_func(*args):
                return f(1, *args)
            return functools.update_wrapper(new_func, f)

        @pass_context
        def callback(ctx):
            pass

        def run():
            visible(Group())
            callback()
    ''')
    assert ("main.visible", "main.Group.list_commands") in found
    assert ("main.visible", "main.Leaf.list_commands") not in found  # no Leaf is made
    assert ("main.run", "main.pass_context.new_func") in found  # update_wrapper returns the wrapper
    assert ("main.pass_context.new_func", "main.callback") in found
    assert ("main.run", "main.callback") not in found  # the wrapper runs, not the function it wraps


def test_a_handler_of_a_base_class_catches_the_subclasses_raised(tmp_path):
    found = edges_of(tmp_path, '''
        class AppError(Exception):
            def show(self):
                pass

        class UsageError(AppError):
            def show(self):
                pass

        class NeverRaised(AppError):
            def show(self):
                pass

        class Other(Exception):
            def show(self):
                pass

        def check(x):
            if x:
                raise UsageError()
            raise Other

        def main():
            try:
                check(1)
            except AppError as e:
                e.show()
    ''')
    assert {("main.main", "main.AppError.show"), ("main.main", "main.UsageError.show")} <= found
    assert ("main.main", "main.NeverRaised.show") not in found  # a subclass never raised
    assert ("main.main", "main.Other.show") not in found  # raised, but no AppError


def test_hasattr_reads_and_getattr_of_an_unknown_name_asks_the_hook(tmp_path):
    found = edges_of(tmp_path, '''
        class Lazy:
            def __getattr__(self, name):
                return getattr(self.open(), name)

            def open(self):
                return Atomic()

        class Atomic:
            def __getattr__(self, name):
                return 1

        class Plain:
            def read(self):
                pass

        def is_file_like(value):
            return hasattr(value, "read")

        def run():
            is_file_like(Lazy())
            is_file_like(Plain())
    ''')
    assert ("main.is_file_like", "main.Lazy.__getattr__") in found  # Lazy has no read
    assert ("main.Lazy.__getattr__", "main.Atomic.__getattr__") in found  # getattr(..., name): any name
    assert ("main.is_file_like", "main.Plain.read") not in found  # hasattr reads, it does not call


def test_a_textiowrapper_subclass_calls_its_buffer(tmp_path):
    # click's _NonClosingTextIOWrapper and its test runner's _NamedTextIOWrapper: the C wrapper
    # asks the buffer readable/writable/seekable/tell at __init__ and calls read1 to read a line
    found = edges_of(tmp_path, '''
        import io
        import sys

        class Echo:
            def __init__(self, raw):
                self._raw = raw

            def __getattr__(self, name):
                return getattr(self._raw, name)

            def read1(self, n=-1):
                return self._raw.read1(n)

            def write(self, b):
                pass

        class Named(io.TextIOWrapper):
            def __init__(self, buffer, name):
                super().__init__(buffer)
                self._name = name

        def isolation():
            text = Named(Echo(io.BytesIO()), "<stdin>")
            sys.stdin = text
            return text.readline()

        def getchar():
            return sys.stdin.read(1)
    ''')
    assert {("main.Named.__init__", "main.Echo.__getattr__"),  # readable, writable, seekable, tell
            ("main.isolation", "main.Echo.read1"),
            ("main.getchar", "main.Echo.read1")} <= found  # sys.stdin was set to the wrapper
    assert ("main.isolation", "main.Echo.write") not in found  # reading never writes
    assert ("main.Named.__init__", "main.Echo.read1") not in found


def test_a_partial_binds_its_arguments_where_its_site_wraps_few_functions(tmp_path):
    # toolz: @instanceproperty(classval=__doc__) returns partial(instanceproperty, classval=...),
    # which the decorator line calls with the function: the getter must reach the descriptor
    found = edges_of(tmp_path, '''
        from functools import partial

        def prop(fget=None, doc=None):
            if fget is None:
                return partial(prop, doc=doc)
            return Prop(fget)

        class Prop:
            def __init__(self, fget):
                self.fget = fget

            def __get__(self, obj, cls):
                return self.fget(obj)

        class A:
            @prop(doc="x")
            def value(self):
                return 1

        def use():
            return A().value

        def curry(f):
            return partial(f)

        def a(x):
            x()

        def b(x):
            x()

        def c(x):
            x()

        def g():
            pass

        PA, PB, PC = curry(a), curry(b), curry(c)

        def run():
            PA(g)
    ''')
    assert {("main", "main.prop"), ("main.prop", "main.Prop.__init__"), ("main.use", "main.Prop.__get__"),
            ("main.Prop.__get__", "main.A.value")} <= found
    # curry's one partial site wraps a, b and c: a call of any reaches each (the edge only), but the
    # arguments of one are not handed to all three
    assert {("main.run", "main.a"), ("main.run", "main.b"), ("main.run", "main.c")} <= found
    assert not {("main.a", "main.g"), ("main.b", "main.g"), ("main.c", "main.g")} & found
