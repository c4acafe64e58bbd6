"""Benchmark: `tracer graph --all` of sglang/srt, cold and warm, beside a two-process
libcst parse of the same files, in one run on the same machine. Prints a Markdown table.

    python benchmarks/bench_graph.py [SRT_DIR] [-j 2]   (default: the test cache's sglang-0.5.23 sglang/srt)

Wall seconds, CPU seconds (user+sys of the process and the workers it waited for: these
stay comparable when other jobs share the machine) and peak RSS of the largest process.
The graph's own JSON gives the split between parsing (ast, in parallel, cached) and the
fixpoint (one process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the neighbourhoods the issue times (--from NAME --depth 2, target 10 s cold)
FROM_NAMES = ("KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture", "ModelRunner.initialize")


def default_srt() -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from releases import release_dir

    return release_dir("0.5.23") / "sglang" / "srt"


def _parse_chunk(paths: list[str]) -> int:
    import libcst

    done = 0
    for p in paths:
        try:
            libcst.parse_module(Path(p).read_bytes())
            done += 1
        except Exception:  # a file libcst cannot parse still cost its time
            pass
    return done


def libcst_parse(files: list[Path], jobs: int) -> tuple[float, float]:
    """Wall and CPU seconds of libcst.parse_module of every file in ``jobs`` processes."""
    chunks = [[str(f) for f in files[i::jobs * 8]] for i in range(jobs * 8)]
    before = os.times()
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(_parse_chunk, chunks))
    wall = time.perf_counter() - start
    after = os.times()
    cpu = sum(after[i] - before[i] for i in range(4))  # user, sys, children's user, children's sys
    return wall, cpu


def run(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """Wall s, CPU s (the child and the workers it waited for) and peak RSS MiB of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {err.strip()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("srt", nargs="?", type=Path, help="the sglang/srt folder (default: 0.5.23 from the test cache)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    srt = (args.srt or default_srt()).resolve()
    files = sorted(srt.rglob("*.py"))
    parse_wall, parse_cpu = libcst_parse(files, args.jobs)
    with tempfile.TemporaryDirectory(prefix="tracer-bench-graph-") as cache:  # ~100 MB: removed after
        measure(srt, files, args.jobs, parse_wall, parse_cpu, cache)


def measure(srt: Path, files: list[Path], jobs: int, parse_wall: float, parse_cpu: float, cache: str) -> None:
    out = Path(cache) / "graph.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    cmd = [sys.executable, "-m", "tracer", "graph", str(srt), "--all", "--format", "json", "-j", str(jobs),
           "--cache-dir", cache, "-o", str(out)]
    cold = run(cmd, env)
    stats = json.loads(out.read_text())["stats"]
    warm = run(cmd, env)
    warm_stats = json.loads(out.read_text())["stats"]
    print(f"| measure (sglang/srt, {len(files)} files) | wall s | CPU s | peak RSS MiB |\n|---|---|---|---|")
    print(f"| libcst.parse_module of every file, {jobs} processes | {parse_wall:.1f} | {parse_cpu:.1f} | |")
    print(f"| `tracer graph --all`, cold cache | {cold[0]:.1f} | {cold[1]:.1f} | {cold[2]:.0f} |")
    print(f"| `tracer graph --all`, warm (nothing changed) | {warm[0]:.2f} | {warm[1]:.2f} | {warm[2]:.0f} |")
    solve = stats["seconds"] - stats["seconds_parse"]
    print(f"\ncold: parse and compile {stats['seconds_parse']:.1f} s, fixpoint {solve:.1f} s "
          f"(one process); {stats['calls_bound']} of {stats['calls_total']} calls bound, "
          f"{stats['calls_external']} external, {stats['calls_unbound']} unbound; "
          f"values cut by the budget: {stats.get('values_cut', '?')}")
    print(f"warm: answer from cache: {warm_stats['answer_cached']} ({warm_stats['files_total']} files hashed, "
          f"{warm_stats['files_parsed']} parsed)")
    print(f"cold / libcst parse: {cold[0] / parse_wall:.2f}x wall, {cold[1] / parse_cpu:.2f}x CPU")
    print("\n| `--from NAME --depth 2`, cold (empty cache) | wall s | CPU s | peak RSS MiB | files solved |\n|---|---|---|---|---|")
    for name in FROM_NAMES:
        with tempfile.TemporaryDirectory(prefix="tracer-bench-from-") as empty:
            around = Path(empty) / "around.json"
            took = run([sys.executable, "-m", "tracer", "graph", str(srt), "--all", "--from", name, "--depth", "2",
                        "--format", "json", "-j", str(jobs), "--cache-dir", empty, "-o", str(around)], env)
            solved = json.loads(around.read_text())["stats"]["files_solved"]
        print(f"| {name} | {took[0]:.1f} | {took[1]:.1f} | {took[2]:.0f} | {solved} |")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
