"""The reading rule, as a property: any file type (FIFO, device link, folder, huge,
truncated, a link leaving its root) in any place tracer reads gives a one-line error
(or is skipped) and the rest of the result, within a time and memory bound.

Part one drives :func:`tracer.safeio.read.read_bytes` (every reader goes through it)
with hypothesis; part two puts each hostile kind in each place a command reads and
runs the command under an address-space limit and a timeout."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer.safeio.read import Unreadable, read_bytes

REPO = Path(__file__).resolve().parents[1]
OK = REPO / "examples" / "ok"
CONFIGS = REPO / "tests" / "data" / "configs"
KINDS = ("small", "exact", "huge", "fifo", "folder", "zero", "link-out", "link-in", "missing", "socket", "empty")


def make(kind: str, folder: Path, outside: Path, limit: int) -> Path:
    path = folder / f"entry-{kind}"
    if path.exists() or path.is_symlink():
        return path
    if kind == "small":
        path.write_bytes(b"x" * (limit // 2))
    elif kind == "exact":
        path.write_bytes(b"y" * limit)
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(limit * 1000 + 10)  # sparse: huge, costs nothing on disk
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "link-out":
        (outside / "secret").write_bytes(b"secret")
        os.symlink(outside / "secret", path)
    elif kind == "link-in":
        (folder / "target").write_bytes(b"inside")
        os.symlink(folder / "target", path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    return path


def _call(function, timeout: float = 10.0):
    """Run ``function`` in a thread; fail (not hang) if it blocks."""
    box: dict = {}

    def target():
        try:
            box["value"] = function()
        except BaseException as exc:  # noqa: BLE001 - the assertion looks at it
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "the read blocked"
    return box


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS), limit=st.integers(min_value=1, max_value=1 << 16), rooted=st.booleans(),
       cut=st.booleans())
def test_read_bytes_property(tmp_path_factory, kind, limit, rooted, cut):
    base = tmp_path_factory.mktemp("readers")
    folder, outside = base / "root", base / "outside"
    folder.mkdir()
    outside.mkdir()
    path = make(kind, folder, outside, limit)
    box = _call(lambda: read_bytes(path, limit, folder if rooted else None, cut))
    if "error" in box:
        error = box["error"]
        assert isinstance(error, Unreadable), repr(error)
        assert "\n" not in str(error) and str(path) in str(error)
        # a link's target (6 bytes) is read like any file, so it is too big for a smaller
        # limit without ``cut``; a link out of the root is refused when rooted
        too_big = limit < 6 and not cut
        assert kind not in ("small", "exact", "empty") \
            and (kind != "link-in" or too_big) \
            and (kind != "link-out" or rooted or too_big) \
            and (kind != "huge" or not cut)
    else:
        data = box["value"]
        assert len(data) <= limit + (1 if cut else 0)
        assert kind in ("small", "exact", "empty", "link-in", "huge") or (kind == "link-out" and not rooted)
        if kind == "huge":
            assert cut and len(data) == limit + 1


# -- every place a command reads ------------------------------------------------------------------

LIMIT = ("import resource, runpy, sys\nresource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
         "sys.argv = ['tracer'] + sys.argv[1:]\nrunpy.run_module('tracer', run_name='__main__')\n")


def tracer(*args: str, cwd: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", LIMIT, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def hostile(kind: str, path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(3 << 30)  # sparse 3 GiB: more than the address-space limit
    elif kind == "truncated":
        path.write_bytes(b'{"tool": {"name": "tracer"}, "models": [{"entry": "x", ')


def assert_clean(done: subprocess.CompletedProcess, codes: tuple[int, ...]) -> None:
    assert done.returncode in codes, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-2000:]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("places") / "tree"
    shutil.copytree(OK, root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    return root


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "huge"])
def test_source_file(tree, tmp_path, kind):
    target = tmp_path / "t"
    shutil.copytree(tree, target)
    hostile(kind, target / "sglang/srt/models/hostile.py")
    done = tracer("scan", str(target), "--no-cache", "--format", "json", cwd=tmp_path)
    assert_clean(done, (0, 1))
    data = json.loads(done.stdout)
    assert any(m["entry"].endswith("Qwen2ForCausalLM") and m["verdict"] == "ok" for m in data["models"])


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "huge", "truncated"])
def test_cache_entry(tree, tmp_path, kind):
    cache = tmp_path / "cache"
    assert_clean(tracer("scan", str(tree), "--cache-dir", str(cache), cwd=tmp_path), (0, 1))
    for entry in sorted((cache / "summaries").rglob("*.json"))[:5]:
        hostile(kind, entry)
    done = tracer("scan", str(tree), "--cache-dir", str(cache), "--format", "json", cwd=tmp_path)
    assert_clean(done, (0, 1))
    assert any(m["verdict"] == "ok" for m in json.loads(done.stdout)["models"])


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "huge"])
def test_rules_pack(tree, tmp_path, kind):
    pack = tmp_path / "extra.toml"
    hostile(kind, pack)
    done = tracer("scan", str(tree), "--no-cache", "--rules", str(pack), cwd=tmp_path)
    assert_clean(done, (2,))
    assert "rules file" in done.stderr or "is a directory" in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "huge", "truncated"])
def test_scan_json(tmp_path, kind):
    scan = tmp_path / "scan.json"
    hostile(kind, scan)
    done = tracer("report", "--from", str(scan), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert_clean(done, (2,))


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "huge", "truncated"])
def test_hf_configs_and_safetensors(tree, tmp_path, kind):
    target = tmp_path / "target"
    shutil.copytree(CONFIGS / "qwen2.5-7b", target)
    hostile(kind, target / "config.json")
    done = tracer("explain", str(tree), "--no-cache", "--target-config", str(target),
                  "--draft-config", str(CONFIGS / "draft-eagle-config"), cwd=tmp_path)
    assert_clean(done, (2,))
    draft = tmp_path / "draft"
    shutil.copytree(CONFIGS / "draft-eagle-config", draft)
    hostile(kind, draft / "model.safetensors")
    done = tracer("explain", str(tree), "--no-cache", "--target-config", str(CONFIGS / "qwen2.5-7b"),
                  "--draft-config", str(draft), cwd=tmp_path)
    assert_clean(done, (0, 1, 2))


@pytest.mark.skipif(not shutil.which("git"), reason="no git")
@pytest.mark.parametrize("place", ["pyproject.toml", ".tracer-baseline.json", "ci/pack.toml"])
@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_lint_settings(tree, tmp_path, place, kind):
    repo = tmp_path / "repo"
    shutil.copytree(tree, repo)
    if place == "ci/pack.toml":
        (repo / "pyproject.toml").write_text('[tool.tracer]\nrules = ["ci/pack.toml"]\n')
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "x")
    hostile(kind, repo / place)
    (repo / "sglang/srt/models/qwen2.py").write_text((repo / "sglang/srt/models/qwen2.py").read_text() + "\n#\n")
    done = tracer("lint", "--cache-dir", str(tmp_path / "cache"), cwd=repo)
    assert_clean(done, (2,))
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
