"""The standard library's C iterators in the whole call graph (`graph --all`, citers.py): an
itertools iterator pulls its iterables (``__iter__``/``__next__`` of a class of the tree) and calls
its callback with their elements, from the frame that consumes it; its maker draws them only when
no consumer is seen and it does not return the iterator. Exact edges, and the wrong ones absent."""

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


def test_islice_pulls_an_instance_iterator_in_the_consuming_function(tmp_path):
    found = edges_of(tmp_path, '''
        from itertools import islice

        class It:
            def __iter__(self):
                return self
            def __next__(self):
                raise StopIteration
            def __len__(self):
                return 0

        def take(n, it):
            return list(islice(it, n))

        def main():
            take(2, It())
    ''')
    assert found == {("main.main", "main.take"), ("main.take", "main.It.__iter__"),
                     ("main.take", "main.It.__next__")}


def test_callbacks_run_where_the_iterator_is_consumed_not_where_it_is_made(tmp_path):
    found = edges_of(tmp_path, '''
        import itertools

        def f(a, b):
            return a

        def g(x):
            return x

        def unused(x):
            return x

        def make(xs):
            return itertools.starmap(f, xs)

        def eat(it):
            for x in it:
                pass

        def here():
            return sum(itertools.takewhile(g, [1]))

        def main():
            eat(make([(1, 2)]))
            here()
    ''')
    assert found == {("main.eat", "main.f"), ("main.here", "main.g"), ("main.main", "main.eat"),
                     ("main.main", "main.here"), ("main.main", "main.make")}
    assert ("main.make", "main.f") not in found


def test_groupby_key_accumulate_and_nested_iterators(tmp_path):
    found = edges_of(tmp_path, '''
        import itertools

        def key(x):
            return 1

        def two(a, b):
            return a

        def pred(x):
            return True

        def gen():
            yield 1

        def main():
            for k, group in itertools.groupby([1, 2], key=key):
                pass
            list(itertools.accumulate([1, 2], two))
            list(itertools.chain(itertools.dropwhile(pred, gen()), [3]))
    ''')
    assert found == {("main.main", "main.key"), ("main.main", "main.two"), ("main.main", "main.pred"),
                     ("main.main", "main.gen")}
