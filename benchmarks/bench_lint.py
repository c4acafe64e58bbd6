"""Benchmark: `tracer lint` on a one-file change in a full SGLang tree (cold and warm).

Builds a git repository in a temp folder from a whole unpacked release (every
file of sglang/, one commit), edits one model file, and times:

* cold:        empty cache: the base revision is exported and scanned, then the change re-traced;
* warm, new edit: summary cache and base record warm, a change whose content was never seen
                  (the edited file is summarised afresh, the chains through it re-traced);
* warm, again: the same change linted again (answered from the result cache);
* the same two warm cases through the `tracer` command (interpreter start and CLI imports included);
* `--full` warm: a whole working-tree scan instead of the re-trace, for comparison.

    python benchmarks/bench_lint.py [RELEASE_DIR]   (default: the test cache's sglang-0.5.23)

Run on 2 cores (the process pins itself to the first two CPUs when it may).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # measure this checkout, whatever `pip install -e` points at

EDIT_FILE = "sglang/srt/models/kimi_k25.py"
EDITS = [
    ("self.language_model.set_eagle3_layers_to_capture(layer_ids)", "self.language_model.set_eagle3_layers_to_capture()"),
    ("self.language_model.set_eagle3_layers_to_capture(layer_ids)", "self.vision_tower.set_eagle3_layers_to_capture(layer_ids)"),
]


def default_release() -> Path:
    """SGLang 0.5.23 from the test cache (downloaded and unpacked on first use)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from releases import release_dir

    return release_dir("0.5.23")


def git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.com",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.com")
    subprocess.run(["git", *args], cwd=repo, check=True, env=env, stdout=subprocess.DEVNULL)


def edit(repo: Path, original: str, old: str, new: str) -> None:
    assert old in original, old
    (repo / EDIT_FILE).write_text(original.replace(old, new, 1))


def in_process(repo: Path, cache: Path, **kwargs) -> tuple[float, dict]:
    from tracer.config.settings import LintConfig
    from tracer.lint.lint import Options, lint

    start = time.perf_counter()
    result = lint(repo, None, LintConfig(), Options((), (), str(cache), True, 2), **kwargs)
    return time.perf_counter() - start, result


def command(repo: Path, cache: Path) -> float:
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tracer", "lint", "-C", str(repo), "--cache-dir", str(cache), "-j", "2"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False, env=env)
    if done.returncode not in (0, 1):
        sys.exit(f"tracer lint exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return time.perf_counter() - start


def main() -> None:
    release = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        default_release())
    if not (release / "sglang" / "srt" / "models").is_dir():
        sys.exit(f"{release}: no unpacked release (run the real tests once, or pass RELEASE_DIR)")
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 2:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
    work = Path(tempfile.mkdtemp(prefix="bench-lint-"))
    try:
        repo, cache = work / "repo", work / "cache"
        repo.mkdir()
        shutil.copytree(release / "sglang", repo / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
        files = sum(1 for _ in (repo / "sglang").rglob("*.py"))
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "release")
        original = (repo / EDIT_FILE).read_text()

        edit(repo, original, *EDITS[0])
        cold, first = in_process(repo, cache)
        again, repeat = in_process(repo, cache)
        cli_again = command(repo, cache)
        edit(repo, original, *EDITS[1])
        warm, second = in_process(repo, cache)
        edit(repo, original, EDITS[1][0], EDITS[1][1].replace("vision_tower", "mm_projector"))
        cli_warm = command(repo, cache)
        full, _ = in_process(repo, cache, full=True)
        # The base moves after every commit: the next lint derives the new base record from the parent's.
        git(repo, "commit", "-q", "-am", "a commit")
        edit(repo, (repo / EDIT_FILE).read_text(), "self.mm_projector", "self.mm_projector ")
        after_commit, third = in_process(repo, cache)
        load = os.getloadavg()[0]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        print(f"tracer lint, one-file change ({EDIT_FILE}) in {release.name} ({files} files), "
              f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} cores, "
              f"load average {load:.1f}\n")
        print("| measure | seconds |")
        print("|---|---|")
        print(f"| cold (base scan + re-trace), in process | {cold:.2f} |")
        print(f"| warm, new edit, in process | {warm:.2f} |")
        print(f"| warm, same change again (result cache), in process | {again:.2f} |")
        print(f"| warm, new edit, `tracer lint` command | {cli_warm:.2f} |")
        print(f"| warm, same change again, `tracer lint` command | {cli_again:.2f} |")
        print(f"| `--full` (whole working tree scanned), warm, in process | {full:.2f} |")
        print(f"| first lint after a commit (base derived from the parent's record), in process | {after_commit:.2f} |")
        print(f"\npeak RSS of the in-process runs: {peak:.0f} MiB")
        for name, result in (("first edit", first), ("second edit", second)):
            shown = [(f["slug"], f["file"], f["line"]) for f in result["findings"] if f["severity"] == "error"]
            print(f"{name}: {result['stats']['entries_traced']} chains re-traced; new errors: {shown}")
        assert repeat["stats"]["result_cache"]
        print(f"after the commit: {third['stats']['entries_traced']} chains re-traced, mode {third['stats']['mode']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
