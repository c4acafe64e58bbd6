"""Benchmark: tracer's whole call graph (`tracer graph --all`) against PyCG's micro-benchmark.

    python benchmarks/bench_pycg.py PYCG_CHECKOUT [--tool tracer|pycg|both] [--json OUT] [-v]
                                    [--tracer-cmd CMD] [--pycg-cmd CMD]

PYCG_CHECKOUT is a checkout of https://github.com/vitsalis/PyCG. Every folder
``micro-benchmark/snippets/<category>/<case>/`` holding a ``callgraph.json`` (the
hand-written expected graph, ``{"caller": ["callee", ...]}``) is one case.

How the numbers are taken:

* tracer: ``python -m tracer graph <case> --all --format json --no-cache`` as a subprocess,
  with this checkout first on PYTHONPATH (an installed ``tracer`` may be another checkout's),
  or ``--tracer-cmd``; its edges are renamed to PyCG's naming (below).
* PyCG: run the way its own evaluation runs it (micro-benchmark/base.py: entry point
  ``<case>/main.py`` only, package ``<case>``, fix-point iteration), i.e.
  ``pycg --package <case> <case>/main.py -o out.json``. The command is ``--pycg-cmd`` if
  given, else ``pycg`` on PATH, else ``python -m pycg`` from PYCG_CHECKOUT itself (PyCG
  needs only the stdlib and setuptools' pkg_resources); when none works that column is
  skipped with a note. PyPI's pycg 0.0.8 wheel installs no ``pycg`` command and its
  package as ``PyCG`` (not importable as ``pycg``), so install the checkout into a
  virtualenv (``pip install PYCG_CHECKOUT``) and pass ``--pycg-cmd 'VENV/bin/python -m pycg'``.
* Naming. Both tools name a node by its dotted module path relative to the case folder
  plus the qualified name inside the module: ``main`` (module body), ``main.func``,
  ``main.Cls.method``, ``pkg.mod.Cls.Inner.method``; a call of a class is an edge to its
  (possibly inherited) ``__init__``. The only renaming: when the case folder itself holds
  an ``__init__.py``, tracer names that module after the folder and PyCG would name it
  ``__init__``. Constructs tracer has no node for (nested functions, lambdas) are not
  renamed: tracer files their calls under the enclosing function, so such edges count as
  missed (and, where the enclosing name differs, as wrong).
* Filter (issue #14): only edges whose caller and callee are both defined in the case,
  i.e. whose name is a module of the case (``a/b.py`` -> ``a.b``, ``a/__init__.py`` -> ``a``)
  or lies inside one. ``<builtin>.*``, ``<**PyStr**>.*`` and anything of modules not in
  the case (``ext.Cls`` in external/) are dropped, from the expected graph and from
  both tools alike.
* Scores are micro-averaged over edges (sets of (caller, callee) pairs): per case TP = found & expected, FP = found -
  expected, FN = expected - found; precision = sum TP / sum (TP + FP), recall =
  sum TP / sum (TP + FN), summed per category and over all cases. A case a tool fails
  on counts all its expected edges as missed. "-" is a ratio with nothing to divide by
  (no edge reported, or none expected, in that category).
* Time is the wall time, and the CPU time (user + sys), of all the subprocesses of one
  tool (interpreter start-up included), cases run one after the other.

``--json OUT`` writes every case's missed and extra edges per tool; ``-v`` prints them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cases(checkout: Path) -> list[Path]:
    root = checkout / "micro-benchmark" / "snippets"
    if not root.is_dir():
        sys.exit(f"{root}: not found (is {checkout} a PyCG checkout?)")
    return sorted(p.parent for p in root.glob("*/*/callgraph.json"))


def case_modules(case: Path) -> set[str]:
    """Dotted names of the case's own modules, relative to the case folder."""
    mods = set()
    for path in case.rglob("*.py"):
        parts = list(path.relative_to(case).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        mods.add(".".join(parts))
    return mods


def in_case(name: str, mods: set[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in mods)


def edges_of(adjacency: dict[str, list[str]], mods: set[str]) -> set[tuple[str, str]]:
    return {(u, v) for u, vs in adjacency.items() for v in vs if in_case(u, mods) and in_case(v, mods)}


REPO = Path(__file__).resolve().parent.parent


def run_tracer(case: Path, argv: list[str]) -> dict[str, list[str]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    proc = subprocess.run([*argv, "graph", str(case), "--all", "--format", "json", "--no-cache"],
                          capture_output=True, text=True, timeout=300, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"rc {proc.returncode}")
    data = json.loads(proc.stdout)
    rename = {case.name: "__init__"} if (case / "__init__.py").is_file() else {}
    adjacency: dict[str, list[str]] = {rename.get(n, n): [] for n in data["nodes"]}
    for u, v in data["edges"]:
        adjacency.setdefault(rename.get(u, u), []).append(rename.get(v, v))
    return adjacency


def pycg_command(checkout: Path, given: str | None) -> tuple[list[str] | None, dict | None, str]:
    """(argv prefix, extra environment, description) of the PyCG to run, or (None, None, why)."""
    if given:
        return shlex.split(given), None, given
    if shutil.which("pycg"):
        return ["pycg"], None, shutil.which("pycg")
    why = "no `pycg` on PATH"
    if (checkout / "pycg" / "__main__.py").is_file():
        env = dict(os.environ, PYTHONPATH=str(checkout) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        probe = subprocess.run([sys.executable, "-m", "pycg", "-h"], capture_output=True, text=True, env=env)
        if probe.returncode == 0:
            return [sys.executable, "-m", "pycg"], env, f"{sys.executable} -m pycg (from {checkout})"
        why += f"; the checkout's fails here: {(probe.stderr.strip().splitlines() or ['?'])[-1]}"
    return None, None, why + "; give --pycg-cmd 'VENV/bin/python -m pycg'"


def run_pycg(case: Path, argv: list[str], env: dict | None) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.json"
        proc = subprocess.run([*argv, "--package", str(case), str(case / "main.py"), "-o", str(out)],
                              capture_output=True, text=True, timeout=300, env=env, cwd=tmp)
        if proc.returncode != 0 or not out.is_file():
            lines = proc.stderr.strip().splitlines()
            raise RuntimeError(lines[-1] if lines else f"rc {proc.returncode}")
        return json.loads(out.read_text())


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def score(counts: dict[str, int]) -> tuple[float | None, float | None]:
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return precision, recall


def fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path, help="a checkout of vitsalis/PyCG")
    ap.add_argument("--tool", choices=["tracer", "pycg", "both"], default="both")
    ap.add_argument("--json", dest="json_out", type=Path, help="write per-case details here")
    ap.add_argument("--tracer-cmd", default=f"{shlex.quote(sys.executable)} -m tracer",
                    help="command that runs tracer (default: this Python, -m tracer, this checkout first)")
    ap.add_argument("--pycg-cmd", help="command that runs PyCG (default: pycg on PATH, else the checkout's)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's missed and extra edges")
    args = ap.parse_args()
    checkout = args.checkout.resolve()
    all_cases = cases(checkout)

    tools: dict[str, object] = {}
    if args.tool in ("tracer", "both"):
        tracer_argv = shlex.split(args.tracer_cmd)
        if not shutil.which(tracer_argv[0]):
            sys.exit(f"`{tracer_argv[0]}` is not on PATH")
        tools["tracer"] = lambda case, argv=tracer_argv: run_tracer(case, argv)
    if args.tool in ("pycg", "both"):
        argv, env, how = pycg_command(checkout, args.pycg_cmd)
        if argv is None:
            print(f"note: PyCG column skipped ({how})")
        else:
            print(f"PyCG: {how}")
            tools["pycg"] = lambda case, argv=argv, env=env: run_pycg(case, argv, env)
    if not tools:
        sys.exit("nothing to run")

    zero = {"tp": 0, "fp": 0, "fn": 0, "cases": 0, "failed": 0}
    per_cat: dict[str, dict[str, dict[str, int]]] = {}
    total = {t: dict(zero) for t in tools}
    seconds = {t: 0.0 for t in tools}
    cpu = {t: 0.0 for t in tools}
    details = []
    for case in all_cases:
        category = case.parent.name
        mods = case_modules(case)
        expected = edges_of(json.loads((case / "callgraph.json").read_text()), mods)
        row = {"case": f"{category}/{case.name}", "expected": sorted(map(list, expected))}
        for tool, fn in tools.items():
            started, cpu0 = time.perf_counter(), child_cpu()
            try:
                found, error = edges_of(fn(case), mods), ""
            except Exception as exc:  # a crash or a time-out: every expected edge is missed
                found, error = set(), f"{type(exc).__name__}: {exc}"
            seconds[tool] += time.perf_counter() - started
            cpu[tool] += child_cpu() - cpu0
            c = per_cat.setdefault(category, {t: dict(zero) for t in tools})[tool]
            for bucket in (c, total[tool]):
                bucket["tp"] += len(found & expected)
                bucket["fp"] += len(found - expected)
                bucket["fn"] += len(expected - found)
                bucket["cases"] += 1
                bucket["failed"] += bool(error)
            row[tool] = {"missed": sorted(map(list, expected - found)),
                         "extra": sorted(map(list, found - expected)), "error": error}
            if args.verbose and (found != expected or error):
                print(f"[{tool}] {row['case']}: " + (error or "")
                      + "".join(f"\n    missed {u} -> {v}" for u, v in sorted(expected - found))
                      + "".join(f"\n    extra  {u} -> {v}" for u, v in sorted(found - expected)))
        details.append(row)

    names = list(tools)
    head = f"{'category':<14}{'cases':>6}{'edges':>6}" + "".join(
        f" | {t + ' P':>9} {t + ' R':>9} {'FP':>3} {'FN':>3}" for t in names)
    print(head)
    print("-" * len(head))
    for category in sorted(per_cat) + ["ALL"]:
        counts = total if category == "ALL" else per_cat[category]
        if category == "ALL":
            print("-" * len(head))
        first = counts[names[0]]
        line = f"{category:<14}{first['cases']:>6}{first['tp'] + first['fn']:>6}"
        for t in names:
            p, r = score(counts[t])
            line += f" | {fmt(p):>9} {fmt(r):>9} {counts[t]['fp']:>3} {counts[t]['fn']:>3}"
        print(line)
    for t in names:
        p, r = score(total[t])
        print(f"{t}: precision {fmt(p)} recall {fmt(r)} (TP {total[t]['tp']}, FP {total[t]['fp']}, "
              f"FN {total[t]['fn']}; {total[t]['failed']} of {total[t]['cases']} cases failed; "
              f"{seconds[t]:.1f} s wall, {cpu[t]:.1f} CPU-s)")
    if args.json_out:
        summary = {t: {"precision": score(total[t])[0], "recall": score(total[t])[1], **total[t],
                       "seconds": round(seconds[t], 2),
                       "cpu_seconds": round(cpu[t], 2)} for t in names}
        categories = {cat: {t: {"precision": score(c[t])[0], "recall": score(c[t])[1], **c[t]} for t in names}
                      for cat, c in sorted(per_cat.items())}
        args.json_out.write_text(json.dumps({"overall": summary, "categories": categories, "cases": details},
                                            indent=1) + "\n")


if __name__ == "__main__":
    main()
