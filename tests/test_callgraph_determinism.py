"""`tracer graph --all` gives the same answer whatever Python's string hashing is.

The per-variable value budget (solve.MAX_VALUES values, MAX_KEYS constants) keeps the
values that arrive first; when they arrived in the iteration order of a set of tuples of
strings, which values were cut changed with PYTHONHASHSEED (on sglang/srt values_cut
varied 211k-297k between runs, and an edge differed). The program below makes the budget
cut: one parameter is handed 400 classes (MAX_VALUES are kept) and a loop variable MAX_KEYS + 24
names (MAX_KEYS kept). Two runs, in fresh processes with different hash seeds, must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tracer.callgraph.solve import MAX_KEYS, MAX_VALUES

REPO = Path(__file__).resolve().parent.parent


def _program(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    parts = [f"class C{i}:\n    def __init__(self):\n        pass\n" for i in range(400)]
    parts.append("A = [" + ", ".join(f"C{i}" for i in range(200)) + "]")
    parts.append("B = [" + ", ".join(f"C{i}" for i in range(200, 400)) + "]")
    parts.append("NAMES = [" + ", ".join(f"'n{i}'" for i in range(MAX_KEYS + 24)) + "]")
    parts.append("\n\ndef make(x):\n    return x()\n\n\ndef main():\n    for c in A:\n        make(c)\n"
                 "    for c in B:\n        make(c)\n    for n in NAMES:\n        getattr(main, n)\n")
    (pkg / "main.py").write_text("\n".join(parts))
    return pkg


def _graph(pkg: Path, out: Path, seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "tracer", "graph", str(pkg), "--all", "--format", "json",
                    "-o", str(out), "--no-cache", "-j", "1"], env=env, check=True, capture_output=True, timeout=120)
    data = json.loads(out.read_text())
    for timing in ("seconds", "seconds_parse"):
        data["stats"].pop(timing)
    return data


def test_same_graph_under_two_hash_seeds(tmp_path):
    pkg = _program(tmp_path)
    one = _graph(pkg, tmp_path / "one.json", "1")
    two = _graph(pkg, tmp_path / "two.json", "2")
    assert one["stats"]["values_cut"] >= (400 - MAX_VALUES) + 24  # the budget does cut here
    constructed = {e[1] for e in one["edges"] if e[0] == "main.make"}
    assert len(constructed) == MAX_VALUES  # one parameter keeps MAX_VALUES of the 400 classes
    assert sorted(map(tuple, one["edges"])) == sorted(map(tuple, two["edges"]))
    assert one["edge_kinds"] == two["edge_kinds"]
    assert one["stats"] == two["stats"]
