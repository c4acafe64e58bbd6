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
