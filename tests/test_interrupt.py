"""SIGINT and SIGTERM end every command within a second (issue 16): exit 130 / 143,
one line on stderr (no traceback, no libcst node dump), no process left in the
command's session, no temp file in its cache or output folder, whenever the
signal comes (during start-up, the parallel parse, the trace, the writes).

Reliable under load (issue 29): the signal is sent when the command has used a given
amount of CPU time (its own progress, the same on a quiet or a busy machine), not after
a wall-clock delay, and the only wall-clock bound tells a hang apart (``HANG``); what is
left of the session is polled until it settles, not looked at after a sleep.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OK = REPO / "examples" / "ok"
FILLER = '''
class Block{i}:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if layer_ids is None:
            self.inner.layers_to_capture = [2, len(self.layers) // 2, len(self.layers) - 3]
        else:
            self.inner.layers_to_capture = [v + 1 for v in layer_ids if v >= 0 and v < len(self.layers)]

    def __init__(self, config):
        self.config = config
        self.layers = [Layer{i}(config) for _ in range(config.num_layers)]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x) + helper_{i}(x, [a + b * c for a, b, c in zip(x, x, x)])
        return {{"out": x, "extra": [x for x in range(10) if x % 2]}}


def helper_{i}(x, ys):
    total = 0
    for y in ys:
        if y > 0 and not (y < -1 or y == 3):
            total += y * 2 - (y // 3) ** 2
    return total
'''


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory):
    """examples/ok plus 80 model modules of 12 entry classes each: cold, `scan` and
    `report` take a few seconds, `graph --all` longer."""
    root = tmp_path_factory.mktemp("interrupt") / "tree"
    shutil.copytree(OK, root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    folder = root / "sglang" / "srt" / "models"
    for n in range(80):
        names = [f"{n}_{k}" for k in range(12)]
        (folder / f"filler{n}.py").write_text("".join(FILLER.format(i=i) for i in names)
                                              + f"\n\nEntryClass = [{', '.join('Block' + i for i in names)}]\n")
    return root


@pytest.fixture(scope="module")
def big_repo(big_tree, tmp_path_factory):
    """big_tree as a git checkout with one model edited: a cold lint scans the base first."""
    repo = tmp_path_factory.mktemp("interrupt-repo") / "repo"
    shutil.copytree(big_tree, repo)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    model = repo / "sglang" / "srt" / "models" / "filler3.py"
    model.write_text(model.read_text().replace("v + 1 for v", "v + 2 for v"))
    return repo


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
HANG = 5.0  # seconds: the watcher ends a process 0.6 s after the signal; this only tells a hang apart
WAIT = 120.0  # seconds a phase may take to be reached on a loaded machine before the test gives up


def _stat(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().decode(errors="replace").rpartition(")")[2].split()
    except OSError:
        return None


def _session(sid: int) -> list[tuple[str, list[str]]]:
    """(pid, stat fields after the name) of every process of the session, zombies included."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            fields = _stat(pid)
            if fields and len(fields) > 12 and fields[3] == str(sid):
                found.append((pid, fields))
    return found


def _session_processes(sid: int) -> list[str]:
    """Live processes of the command's session (a zombie an init without reaping keeps is not one)."""
    return [pid for pid, fields in _session(sid) if fields[0] != "Z"]


def _cpu_seconds(sid: int) -> float:
    """CPU time the command's processes have used so far (utime + stime of each, workers too)."""
    return sum(int(f[11]) + int(f[12]) for _, f in _session(sid)) / CLOCK_TICKS


def _reach(proc: subprocess.Popen, phase: float) -> bool:
    """Wait (bounded) until the command has used ``phase`` CPU seconds: the same point of its
    work whatever the machine's load, where a wall-clock delay lands anywhere between
    start-up and the end on a busy machine. False when it ended first."""
    deadline = time.monotonic() + WAIT
    while proc.poll() is None:
        if phase <= 0 or _cpu_seconds(proc.pid) >= phase:
            return True
        if time.monotonic() > deadline:
            pytest.fail(f"the command did not reach {phase} CPU seconds in {WAIT:.0f} s")
        time.sleep(0.005)  # polling the event (CPU used), not timing the test
    return False


def _settled(sid: int) -> list[str]:
    """The session's live processes once it has settled (bounded): [] as soon as none is left."""
    deadline = time.monotonic() + HANG
    while True:
        left = _session_processes(sid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.01)


def interrupt(args: list[str], cwd: Path, signum: int, phase: float) -> tuple[int, float, str, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # stdout is not read: as a pipe, a command that reached its output first (a scan's
    # 1,920 findings) blocked writing it and never reached the CPU seconds waited for
    proc = subprocess.Popen([sys.executable, "-m", "tracer", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    if not _reach(proc, phase):
        proc.communicate()
        return proc.returncode, 0.0, "", []
    sent = time.monotonic()
    os.killpg(proc.pid, signum) if signum == signal.SIGINT else proc.send_signal(signum)  # Ctrl-C: the group
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{args} hung after the signal")
    took = time.monotonic() - sent
    left = _settled(proc.pid)
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    return proc.returncode, took, err.decode(errors="replace"), left


def _temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp-")]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="no /proc")
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("command", ["scan", "graph-all", "report", "lint"])
@pytest.mark.parametrize("phase", [0.0, 0.5, 1.5])  # CPU seconds the command has used (start-up, parse, trace)
def test_signal_ends_the_command(big_tree, big_repo, tmp_path, command, signum, code, phase):
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    args = {"scan": ["scan", str(big_tree), "--cache-dir", str(cache), "-j", "2"],
            "graph-all": ["graph", str(big_tree), "--all", "-j", "2", "-o", str(out / "g.json"), "--format", "json",
                          "--cache-dir", str(cache)],
            "report": ["report", str(big_tree), "-o", str(out), "--cache-dir", str(cache), "-j", "2"],
            "lint": ["lint", "-C", str(big_repo), "--cache-dir", str(cache), "-j", "2"]}[command]
    if command == "graph-all" and phase > 1:
        # graph --all of this tree uses ~1.5 CPU-s in its own process since its lazy imports and
        # cached writer: at 1.5 it had ended (a skip, not a test); 0.9 lands in the fixpoint
        phase = 0.9
    rc, took, err, left = interrupt(args, tmp_path, signum, phase)
    if phase < 0.2 and (rc == -signum or "KeyboardInterrupt" in err):
        # the interpreter's own start-up, before tracer's first line: Python's default
        # handling (death by the signal; a shell reports the same 130 / 143)
        assert took < HANG and left == []
        return
    if rc in (0, 1):
        pytest.skip(f"{command} finished before the signal ({phase} CPU s)")
    assert rc == code, (rc, err[-2000:])
    assert took < HANG, f"{took:.2f} s after the signal"
    assert err.strip().splitlines()[-1:] == ["tracer: interrupted"], err[-2000:]
    assert "Traceback" not in err and len(err) < 2000, err[-2000:]
    assert left == [], "worker processes left behind"
    for folder in (cache, out):
        if folder.exists():
            assert _temp_files(folder) == []


@pytest.fixture(scope="module")
def one_big_module(tmp_path_factory):
    """One ~900 KB model module: libcst's native parser would hold the GIL for ~8 s."""
    root = tmp_path_factory.mktemp("interrupt-native") / "tree"
    shutil.copytree(OK, root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    body = "".join(f"        x{i} = [a + b * c for a, b, c in zip(y, y, y)]\n" for i in range(18000))
    (root / "sglang" / "srt" / "models" / "native.py").write_text(
        "class NativeForCausalLM:\n    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.model.layers_to_capture = layer_ids\n\n    def f(self, y):\n" + body
        + "\n\nEntryClass = NativeForCausalLM\n")
    return root


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="no /proc")
@pytest.mark.parametrize("command", ["graph"])
def test_signal_during_a_long_native_parse(one_big_module, tmp_path, command):
    """With -j 1 and one file to parse the parse ran in-process: the handler waited ~8 s. Only
    ``graph --all`` parses the big body now: ``scan`` parses a skeleton with function bodies
    blanked (index/skeleton.py) and ended before the signal every time (a skip, not a test)."""
    args = [command, str(one_big_module), "--no-cache", "-j", "1"] + (["--all"] if command == "graph" else [])
    rc, took, err, left = interrupt(args, tmp_path, signal.SIGINT, 1.5)
    if rc in (0, 1):
        pytest.skip("finished before the signal")
    assert rc == 130 and took < HANG, (rc, took, err[-1000:])
    assert "Traceback" not in err and left == []


@pytest.fixture(scope="module")
def slow_setter(tmp_path_factory):
    """examples/ok with a setter whose loop runs the interpreter to its step limit (~1 s of CPU)."""
    base = tmp_path_factory.mktemp("interrupt-interp")
    root = base / "tree"
    shutil.copytree(OK, root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    model = root / "sglang" / "srt" / "models" / "qwen2.py"
    model.write_text(model.read_text().replace(
        "            self.model.layers_to_capture = [val + 1 for val in layer_ids]",
        "            total = 0\n            for step in range(100000):\n                total = total + step % 7\n"
        "            self.model.layers_to_capture = [val + 1 + total * 0 for val in layer_ids]"))
    for name, doc in (("t", {"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 28, "hidden_size": 64}),
                      ("d", {"architectures": ["LlamaForCausalLMEagle3"],
                             "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 13]}})):
        (base / name).mkdir()
        (base / name / "config.json").write_text(json.dumps(doc))
    return base


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="no /proc")
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_the_interpreter(slow_setter, tmp_path, signum, code):
    """explain while the interpreter runs a scanned loop: no builtin runs unbounded on scanned
    values any more (sum(range(10**12)) held the GIL for ever), so the handler runs at once."""
    args = ["explain", str(slow_setter / "tree"), "--target-config", str(slow_setter / "t"),
            "--draft-config", str(slow_setter / "d"), "--no-cache"]
    rc, took, err, left = interrupt(args, tmp_path, signum, 0.4)  # explain used 0.7 CPU-s in all (2026-12-02)
    if rc in (0, 1):
        pytest.skip("finished before the signal")
    assert rc == code and took < HANG, (rc, took, err[-1000:])
    assert err.strip().splitlines()[-1:] == ["tracer: interrupted"] and left == []
