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
