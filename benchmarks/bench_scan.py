"""Benchmark: tracer scan (cold, warm) beside ast.parse of every file of sglang/srt,
in one run, on the same machine. Prints a Markdown table for the README.

    python benchmarks/bench_scan.py [RELEASE_DIR]   (default: the test cache's sglang-0.5.23)
"""

from __future__ import annotations

import ast
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def default_release() -> Path:
    """SGLang 0.5.23 from the test cache (downloaded and unpacked on first use)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from releases import release_dir

    return release_dir("0.5.23")


def ast_floor(srt: Path) -> tuple[float, float, int]:
    files = sorted(srt.rglob("*.py"))
    start, cpu0 = time.perf_counter(), time.process_time()
    for f in files:
        try:
            ast.parse(f.read_bytes())
        except (SyntaxError, ValueError):
            pass
    return time.perf_counter() - start, time.process_time() - cpu0, len(files)


def timed(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user+sys, all processes) and peak RSS (MiB) of a
    child process. CPU seconds stay comparable when the machine is busy."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: findings; anything else is a failed run, not a figure
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, after.ru_maxrss / 1024


def main() -> None:
    default = default_release()
    release = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    srt = release / "sglang" / "srt"
    floor, floor_cpu, count = ast_floor(srt)
    cache = tempfile.mkdtemp(prefix="tracer-bench-")
    repo = str(Path(__file__).resolve().parent.parent)  # this checkout's tracer, installed or not
    env = dict(os.environ, TRACER_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p))
    # tracer as a user has it: `pip install` compiles its bytecode; a checkout gets it here once
    # (PYTHONDONTWRITEBYTECODE, set on some machines, would make every run compile ~200 modules)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(repo) / "tracer")], check=False,
                   stdout=subprocess.DEVNULL)
    copy = Path(tempfile.mkdtemp(prefix="tracer-bench-tree-")) / "release"
    shutil.copytree(release / "sglang", copy / "sglang")  # edited below: never the test cache's own copy
    tracer = [sys.executable, "-m", "tracer", "scan", str(copy), "--format", "json"]
    cold = timed(tracer, env)
    warm = timed(tracer, env)  # nothing changed: whole-result cache
    edited = copy / "sglang" / "srt" / "models" / "qwen2.py"
    with open(edited, "a") as fh:  # one file really edited: only the chains that read it are re-traced
        fh.write("\n# edited by bench_scan\n")
    touched = timed(tracer, env)
    shutil.rmtree(copy.parent, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    print("| measure | wall s | CPU s | peak RSS MiB |\n|---|---|---|---|")
    print(f"| ast.parse of every file of sglang/srt ({count} files), one process | {floor:.2f} | {floor_cpu:.2f} | |")
    print(f"| tracer scan, cold cache | {cold[0]:.2f} | {cold[1]:.2f} | {cold[2]:.0f} |")
    print(f"| tracer scan, warm, one file edited (models/qwen2.py) | {touched[0]:.2f} | {touched[1]:.2f} | {touched[2]:.0f} |")
    print(f"| tracer scan, warm, nothing changed | {warm[0]:.2f} | {warm[1]:.2f} | {warm[2]:.0f} |")
    print(f"\nmachine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
