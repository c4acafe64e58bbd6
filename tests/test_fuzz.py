"""Property tests: random valid modules (hypothesmith) and mutated real model
files through the whole pipeline.

Properties: no exception escapes, every entry class gets a verdict, the scan is
deterministic (same JSON byte for byte, timings and cache counters aside) and
does not depend on the order files are listed in or on a warm or cold cache.
Budgets are small (max_examples 30-40) so the suite stays fast.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer.api import scan_to_json
from tracer.index import discover

hypothesmith = pytest.importorskip("hypothesmith")

REPO = Path(__file__).resolve().parents[1]
OK = REPO / "examples" / "ok"
MODELS = "sglang/srt/models"
VERDICTS = {"ok", "broken", "unknown", "missing", "draft"}
VOLATILE = ("seconds", "cache_hits", "files_parsed", "files_outlined", "functions_parsed", "result_cache",
            "chains_traced", "chains_reused", "jedi_questions", "jedi_answers")
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def stable(data: dict) -> str:
    data = json.loads(json.dumps(data))
    for key in VOLATILE:
        data["stats"].pop(key, None)
    return json.dumps(data, sort_keys=True)


def check_scan(data: dict, entries: set[str] | None = None) -> None:
    for model in data["models"]:
        assert model["verdict"] in VERDICTS, model
        if model["verdict"] in ("unknown", "broken", "missing"):
            assert model["reason"] or model["findings"], model
    if entries is not None:
        assert entries <= {m["entry"] for m in data["models"]}
    for error in data["input_errors"]:
        assert error["file"] and error["reason"]


class Tree:
    """A copy of examples/ok in a temp folder, one fuzzed module added."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="tracer-fuzz-"))
        self.root = self.dir / "tree"
        shutil.copytree(OK, self.root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


SETTER_TAIL = (
    "\n\nclass FuzzLM(Qwen2ForCausalLM):\n    pass\n\n\nEntryClass = [FuzzLM]\n"
)


@FUZZ
@given(source=hypothesmith.from_grammar())
def test_random_valid_modules_through_the_pipeline(source):
    with Tree() as tree:
        (tree.root / MODELS / "fuzzed.py").write_text(source)
        # the same random code as the body of a model module that names an entry class
        (tree.root / MODELS / "fuzzed_entry.py").write_text(
            "from sglang.srt.models.qwen2 import Qwen2ForCausalLM\n" + source + SETTER_TAIL)
        data = scan_to_json(str(tree.root), use_cache=False, jobs=1)
        check_scan(data)
        again = scan_to_json(str(tree.root), use_cache=False, jobs=1)
        assert stable(again) == stable(data)


@FUZZ
@given(source=hypothesmith.from_node())
def test_random_libcst_trees_index_without_escaping(source):
    from tracer.index.discover import SourceFile
    from tracer.index.project import index_file

    file = SourceFile("sglang.srt.models.fuzzed", "m.py", "/nonexistent", False)
    summary = index_file(file, "outline", source.encode("utf-8", errors="surrogatepass"))
    assert summary.module == "sglang.srt.models.fuzzed"


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(blob=st.binary(max_size=400))
def test_random_bytes_are_input_errors_or_summaries(blob):
    from tracer.index.discover import SourceFile
    from tracer.index.project import index_file

    file = SourceFile("m", "m.py", "/nonexistent", False)
    index_file(file, "outline", blob)  # never raises


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_results_do_not_depend_on_file_order_or_cache(seed):
    """Listing order shuffled and the cache cold, warm, then cold again: same JSON."""
    with Tree() as tree:
        cache = tree.dir / "cache"
        cold = stable(scan_to_json(str(tree.root), cache_dir=str(cache)))
        warm = stable(scan_to_json(str(tree.root), cache_dir=str(cache)))
        assert warm == cold
        rng = random.Random(seed)
        real = discover.list_sources

        def shuffled(layout):
            files, problems = real(layout)
            files = list(files)
            rng.shuffle(files)
            return files, problems

        import tracer.analysis.pipeline as engine

        engine.list_sources, saved = shuffled, engine.list_sources
        try:
            assert stable(scan_to_json(str(tree.root), use_cache=False, jobs=1)) == cold
            assert stable(scan_to_json(str(tree.root), cache_dir=str(cache), jobs=2)) == cold
        finally:
            engine.list_sources = saved


# -- mutations of real SGLang model files -----------------------------------------------------------

# small real files (a few hundred lines each) so that 20 examples stay within seconds
REAL_MODELS = ["qwen2.py", "llama.py", "qwen2_5_vl.py", "mistral.py", "qwen3.py"]


def _mutate(text: str, rng: random.Random, kind: str) -> str:
    lines = text.split("\n")
    if kind == "truncate":
        return text[: rng.randrange(len(text) + 1)]
    if kind == "delete_lines":
        for _ in range(rng.randint(1, 20)):
            if lines:
                del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == "swap_names":
        import re

        names = sorted(set(re.findall(r"\b[A-Za-z_]\w{3,}\b", text)))
        for _ in range(rng.randint(1, 10)):
            a, b = rng.choice(names), rng.choice(names)
            text = re.sub(rf"\b{re.escape(a)}\b", b, text, count=rng.randint(1, 5))
        return text
    if kind == "shuffle_lines":
        i = rng.randrange(len(lines))
        j = min(len(lines), i + rng.randint(2, 30))
        chunk = lines[i:j]
        rng.shuffle(chunk)
        lines[i:j] = chunk
        return "\n".join(lines)
    raise AssertionError(kind)


@pytest.mark.real
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["truncate", "delete_lines", "swap_names", "shuffle_lines"]),
       name=st.sampled_from(REAL_MODELS))
def test_mutated_real_model_files(sglang_release, seed, kind, name):
    """A small wheel-shaped tree of real 0.5.23 model files, one of them mutated:
    no exception, every entry class of the intact files keeps a verdict."""
    release = sglang_release("0.5.23")
    rng = random.Random(seed)
    with Tree() as tree:
        models = tree.root / MODELS
        for real_name in REAL_MODELS:
            src = release / MODELS / real_name
            if src.exists():
                shutil.copy(src, models / real_name)
        target = models / name
        if not target.exists():
            pytest.skip(f"{name} not in this release")
        target.write_text(_mutate(target.read_text(), rng, kind))
        data = scan_to_json(str(tree.root), use_cache=False, jobs=1)
        check_scan(data)
        intact = {m["entry"] for m in data["models"] if not m["file"].endswith("/" + name)}
        assert intact, "the intact models lost their entries"
        cold = scan_to_json(str(tree.root), cache_dir=str(tree.dir / "c"), jobs=2)
        warm = scan_to_json(str(tree.root), cache_dir=str(tree.dir / "c"), jobs=2)
        assert stable(cold) == stable(data) == stable(warm)


# -- every reader of a file a stranger can hand over: one line, exit 2 (issue 29) ----------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

_HOSTILE_JSON = {
    "deep": lambda key: f'{{"{key}": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "long-int": lambda key: f'{{"{key}": ' + "9" * 5000 + "}",
    "not-utf8": lambda key: b'{"' + key.encode() + b'": "\xff\xfe"}',
    "not-json": lambda key: f'{{"{key}": [1, 2,',
}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracer", *args], cwd=cwd, capture_output=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    err = [line for line in done.stderr.decode(errors="replace").strip().splitlines()
           if not line.startswith("tracer lint: ")]  # progress lines
    assert done.returncode == 2 and len(err) == 1, (done.returncode, err[-5:])
    assert err[0].startswith("tracer: error: ") and "internal error" not in err[0], err
    return err[0]


@pytest.mark.parametrize("shape", sorted(_HOSTILE_JSON))
@pytest.mark.parametrize("reader", ["scan-json", "target-config", "draft-config", "baseline"])
def test_every_json_reader_answers_hostile_json_in_one_line(tmp_path, reader, shape):
    key = {"scan-json": "models", "target-config": "num_hidden_layers", "draft-config": "eagle_config",
           "baseline": "findings"}[reader]
    text = _HOSTILE_JSON[shape](key)
    hostile = tmp_path / "hostile.json"
    hostile.write_bytes(text if isinstance(text, bytes) else text.encode())
    good = tmp_path / "good"
    good.mkdir()
    (good / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 28}))
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    args = {"scan-json": ["report", "--from", str(hostile), "-o", str(tmp_path / "out")],
            "target-config": ["explain", str(tree), "--target-config", str(hostile), "--draft-config", str(good)],
            "draft-config": ["explain", str(tree), "--target-config", str(good), "--draft-config", str(hostile)],
            "baseline": ["lint", "--baseline", str(hostile), "--no-cache"]}[reader]
    if reader == "baseline":
        git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(tree)]
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", "x"], check=True)
        model = tree / MODELS / "qwen2.py"  # a new finding: the baseline is read to match it
        model.write_text(model.read_text().replace("self.model.layers_to_capture = [val + 1",
                                                   "self.model.layers_to_captur = [val + 1"))
    line = _one_line_error(_cli(*args, cwd=tree))
    assert "hostile.json" in line or "baseline" in line, line


_ENCODINGS = ["latin-1", "cp1252", "shift_jis", "gb18030", "koi8-r", "raw"]


def _name(encoding: str, stem: str) -> bytes:
    if encoding == "raw":
        return stem.encode() + b"\xff\xfe\x80.py"
    return (stem + "_" + "modèle模型лист").encode(encoding, "replace") + b".py"


@pytest.mark.skipif(sys.platform != "linux", reason="file names as bytes")
def test_file_names_in_every_encoding_never_fail_a_command(tmp_path):
    """Names that are not UTF-8 (from every encoding, and raw bytes) as a module, a FIFO, a link
    out and a folder: every command and format answers (they are listed, escaped), none fails."""
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    models = os.fsencode(tree / MODELS) + b"/"
    for encoding in _ENCODINGS:
        for kind in ("module", "fifo", "link", "folder"):
            name = _name(encoding, kind)
            if name.decode("utf-8", "replace").encode() == name or os.path.lexists(models + name) \
                    or os.path.lexists(models + name[:-3]):
                continue  # plain UTF-8 (nothing hostile), or the same bytes as another encoding's
            if kind == "module":
                with open(models + name, "wb") as fh:
                    fh.write(b"class X:\n    pass\n")
            elif kind == "fifo":
                os.mkfifo(models + name)
            elif kind == "link":
                os.symlink(b"/etc/passwd", models + name)
            else:
                os.mkdir(models + name[:-3])
                with open(models + name[:-3] + b"/inner.py", "wb") as fh:
                    fh.write(b"x = 1\n")
    out = tmp_path / "out"
    commands = [["scan", str(tree), "--format", fmt, "--no-cache"] for fmt in ("text", "json", "sarif", "github")]
    commands += [["report", str(tree), "-o", str(out / "report"), "--no-cache"],
                 ["graph", str(tree), "--all", "--format", "json", "--no-cache", "-o", str(out / "g.json")],
                 ["graph", str(tree), "--all", "--format", "dot", "--no-cache"]]
    for command in commands:
        done = _cli(*command, cwd=tmp_path)
        err = done.stderr.decode(errors="replace")
        assert done.returncode in (0, 1), (command, err[-2000:])
        assert "internal error" not in err and "Traceback" not in err, (command, err[-2000:])
        if command[0] == "scan" and command[3] in ("json", "sarif"):
            json.loads(done.stdout)
    index = (out / "report" / "index.html").read_bytes().decode("utf-8")  # valid UTF-8
    assert "fifo" in index and "\\x" in index
