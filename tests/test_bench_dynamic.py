"""benchmarks/bench_dynamic.py's bookkeeping: the package sets stay apart (a held-out package is
never also a tuned one), the verdicts file keeps its format and vocabulary, and the traced suite's
outcome is read back from the log kept beside its trace. Nothing here downloads or runs a suite."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_dynamic.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_dynamic", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_dynamic", module)
    spec.loader.exec_module(module)
    return module


def test_package_sets_are_disjoint(bench):
    sets = {"tuned": bench.PACKAGES, **{f"held-out {k}": v for k, v in bench.HELD_OUT_SETS.items()}}
    seen: dict[str, str] = {}
    for label, rows in sets.items():
        for row in rows:
            assert row[0] not in seen, f"{row[0]} is in both {seen[row[0]]} and {label}"
            seen[row[0]] = label
    assert bench.HELD_OUT_SETS[1] is bench.HELD_OUT
    assert [r[0] for r in bench.HELD_OUT_2] == ["lark", "h11", "boltons", "tinydb"]
    assert bench.HELD_OUT_SETS[3] is bench.HELD_OUT_3
    assert [r[0] for r in bench.HELD_OUT_3] == ["mako", "configobj", "schedule", "voluptuous"]


def test_verdicts_keep_format_and_name_known_packages(bench):
    text = bench.VERDICTS.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, sort_keys=True) + "\n"
    known = {f"{r[0]}-{r[1]}" for rows in (bench.PACKAGES, *bench.HELD_OUT_SETS.values()) for r in rows}
    for key, verdicts in data.items():
        if key == "_about":
            continue
        assert key in known, key
        assert set(verdicts.values()) <= {"real", "impossible"}, key
        assert all(" -> " in edge for edge in verdicts), key


def test_suite_outcome_reads_the_kept_log(bench, tmp_path):
    root = tmp_path / "pkg-1.0"
    root.mkdir()
    assert bench.suite_outcome(root) == "outcome not kept (an older trace)"
    bench.suite_log(root).write_text("....s [100%]\n==== 3 passed, 1 skipped in 0.5s ====\n\npytest exit status 0\n")
    assert bench.suite_outcome(root) == "3 passed, 1 skipped in 0.5s; pytest exit status 0"
    bench.suite_log(root).write_text("SKIPPED [1] t.py:3: no\n\npytest exit status 1\n")
    assert bench.suite_outcome(root) == "no pytest summary; pytest exit status 1"


def test_a_single_file_suite_is_compiled_with_tests(bench, tmp_path):
    """schedule's suite is one module beside the package (test_schedule.py): ``--with-tests`` must
    compile it (a folder's rglob finds nothing in a file), so a value it hands in reaches the
    package: apply() calls g only because the test passes g."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("def apply(f):\n    return f()\n\n\ndef g():\n    return 1\n")
    (tmp_path / "test_pkg.py").write_text("from pkg import apply, g\n\n\ndef test_apply():\n    apply(g)\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_more.py").write_text("")
    suite = ["--noconftest", "test_pkg.py", "tests::nothing"]
    assert bench.test_sources(tmp_path, suite) == [tmp_path / "test_pkg.py", tmp_path / "tests" / "test_more.py"]
    apply_g = (("pkg/__init__.py", 1), ("pkg/__init__.py", 5))
    alone = bench.static_edges(tmp_path, "pkg", "")[0]
    with_tests, last, named, _stats, _t = bench.static_edges(tmp_path, "pkg", "", tuple(suite))
    assert apply_g not in alone
    assert apply_g in with_tests and apply_g in last
    assert set(named.values()) == {"pkg", "pkg.apply", "pkg.g"}  # the test's own nodes are never scored


def test_an_empty_trace_warns_instead_of_scoring_nothing(bench, tmp_path):
    root = tmp_path / "pkg-1.0"
    root.mkdir()
    bench.suite_log(root).write_text("ERROR: file or directory not found: tests\n\npytest exit status 4\n")
    warning = bench.empty_trace_warning("pkg", root, {})
    assert warning and warning.startswith("WARNING: pkg: the traced test suite made no call")
    assert "no pytest summary; pytest exit status 4" in warning
    assert bench.empty_trace_warning("pkg", root, {(("a.py", 1), ("a.py", 5)): [2]}) is None


def test_a_trace_kept_at_another_path_is_recorded_again(bench, tmp_path, monkeypatch):
    """--reuse-trace on a copied cache: the kept rows name the old folder, so none maps onto this
    tree's nodes (it scored found 0 of 666 without a word); the trace is recorded again."""
    root = tmp_path / "pkg-1.0"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("def f():\n    g()\n\n\ndef g():\n    pass\n")
    elsewhere = "/elsewhere/pkg-1.0/pkg/m.py"
    (tmp_path / "pkg-1.0.trace.json").write_text(json.dumps([[elsewhere, 1, False, elsewhere, 5, False, [2]]]))
    here = str(root / "pkg" / "m.py")
    recorded = []

    def run_traced(*args):
        recorded.append(args)
        return [[here, 1, False, here, 5, False, [2]]], 1.0

    monkeypatch.setattr(bench, "run_traced", run_traced)
    edges, _, seconds = bench.dynamic_edges(root, "pkg", ".", ["tests"], "", reuse=True)
    assert len(recorded) == 1 and seconds == 1.0
    assert edges == {(("pkg/m.py", 1), ("pkg/m.py", 5)): [2]}
    # kept here now: the next run reuses it without recording
    bench.dynamic_edges(root, "pkg", ".", ["tests"], "", reuse=True)
    assert len(recorded) == 1
