"""Peer call-graph tools on bench_dynamic's packages (`bench_dynamic.py --peers BIN`): jarviscg
and pyan3, run from a throwaway virtual environment's bin folder (never project dependencies),
their edges mapped onto the same (file, ``def`` line) nodes as tracer's and the trace's.

Both name functions by dotted path (``pkg.mod.Class.method``); a class named as a callee (a
construction) stands for its ``__init__`` where the package defines one, as the trace records
it. A tool that fails or runs past the time limit is reported so, not scored."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

TIMEOUT = 600
TOOLS = ("jarviscg", "pyan3")


def sources(root: Path, pkg_dir: str, skip: str) -> list[str]:
    skip_dir = (root / skip).resolve() if skip else None
    return sorted(str(p) for p in (root / pkg_dir).rglob("*.py")
                  if not (skip_dir and (skip_dir == p.resolve().parent or skip_dir in p.resolve().parents)))


def jarviscg(bin_dir: Path, root: Path, pkg_dir: str, path_entry: str, skip: str) -> set[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.json"
        # run outside the sdist: a .python-version there would pick another interpreter
        subprocess.run([str(bin_dir / "jarviscg"), *sources(root, pkg_dir, skip), "--package",
                        str(root / path_entry), "-o", str(out)], cwd=tmp, check=True, timeout=TIMEOUT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = json.loads(out.read_text())
    return {(u, v) for u, vs in data.items() for v in vs}


PYAN = r"""
import json, sys
from pyan.analyzer import CallGraphVisitor
visitor = CallGraphVisitor(sys.argv[2:])
edges = [[a.get_name(), b.get_name()] for a, bs in visitor.uses_edges.items() if a.defined
         for b in bs if b.defined]
open(sys.argv[1], "w").write(json.dumps(edges))
"""


def pyan3(bin_dir: Path, root: Path, pkg_dir: str, path_entry: str, skip: str) -> set[tuple[str, str]]:
    """pyan3's "uses" edges between defined names, read from its analyser (its TGF and text outputs
    name a function without its module: ``FilterStack.run``), full dotted names."""
    with tempfile.TemporaryDirectory() as tmp:
        out, script = Path(tmp) / "cg.json", Path(tmp) / "pyan_edges.py"
        script.write_text(PYAN)
        subprocess.run([str(bin_dir / "python"), str(script), str(out), *sources(root, pkg_dir, skip)], cwd=tmp,
                       check=True, timeout=TIMEOUT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return {(u, v) for u, v in json.loads(out.read_text())}


def peer_recall(tool: str, bin_dir: Path, root: Path, pkg_dir: str, path_entry: str, skip: str,
                dyn: set, where: dict[str, list]) -> dict:
    """{"recall", "found", "edges", "seconds"} of ``tool`` against the trace's edges ``dyn`` (nodes as
    bench_dynamic's), or {"error": why}."""
    started = time.perf_counter()
    try:
        named = (jarviscg if tool == "jarviscg" else pyan3)(bin_dir, root, pkg_dir, path_entry, skip)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out ({TIMEOUT} s)"}
    except (subprocess.CalledProcessError, OSError, ValueError) as exc:
        return {"error": f"failed: {type(exc).__name__}"}
    seconds = time.perf_counter() - started

    def nodes(name: str, callee: bool) -> list:
        found = where.get(name, [])
        if not found and callee:
            found = where.get(name + ".__init__", [])
        return found
    mapped = {(a, b) for u, v in named for a in nodes(u, False) for b in nodes(v, True)}
    found = dyn & mapped
    return {"recall": round(len(found) / len(dyn), 4) if dyn else None, "found": len(found),
            "edges": len(named), "seconds": round(seconds, 1)}
