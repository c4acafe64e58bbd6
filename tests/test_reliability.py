"""Hostile and broken input: never executed, never a crash or a hang, results kept.

Every tree here is shaped like an unpacked SGLang wheel (a copy of examples/ok
plus the hostile files), so the ordinary models must keep their verdicts
beside whatever is broken.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracer.api import scan_to_json
from tracer.index import discover
from tracer.index import project as project_mod
from tracer.index.cache import SummaryCache

REPO = Path(__file__).resolve().parents[1]
OK = REPO / "examples" / "ok"
MODELS = "sglang/srt/models"
OK_ENTRIES = 13  # entry classes of examples/ok


def make_tree(tmp_path: Path, name: str = "tree") -> Path:
    root = tmp_path / name
    shutil.copytree(OK, root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    return root


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def run_cli(*args: str, cwd: Path, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    # No empty PYTHONPATH entry: that would put the cwd on sys.path before
    # `site` runs, and Python itself (not tracer) would import a usercustomize.py there.
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full_env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "tracer", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def errors_by_file(data: dict) -> dict[str, str]:
    return {e["file"]: e["reason"] for e in data["input_errors"]}


def ok_models_intact(data: dict) -> None:
    """The examples/ok models keep their verdicts whatever else the tree holds."""
    verdicts = {m["entry"].rsplit(".", 1)[-1]: m["verdict"] for m in data["models"]}
    assert verdicts.get("Qwen2ForCausalLM") == "ok"
    assert verdicts.get("KimiK25ForConditionalGeneration") == "ok"
    assert verdicts.get("Qwen3VLMoeForConditionalGeneration") == "ok"
    assert verdicts.get("Qwen2_5_VLForConditionalGeneration") == "missing"


# -- 1. never execute scanned code ------------------------------------------------------------

MARK = "import pathlib, os\npathlib.Path(os.environ['TRACER_MARKER']).write_text({who!r})\n"


def hostile_tree(tmp_path: Path) -> Path:
    """Every module (and setup.py, conftest.py, sitecustomize.py, a .pth, a `gi`
    package jedi would auto-import) writes the marker if imported or run."""
    root = make_tree(tmp_path, "hostile")
    for path in sorted(root.rglob("*.py")):
        path.write_text(MARK.format(who=str(path.relative_to(root))) + path.read_text())
    for rel in ("setup.py", "conftest.py", "sitecustomize.py", "usercustomize.py", "gi/__init__.py",
                f"{MODELS}/gi/__init__.py", "sglang/srt/sitecustomize.py"):
        write(root, rel, MARK.format(who=rel) + "def make_model(config):\n    return None\n")
    write(root, "evil.pth", "import pathlib, os; pathlib.Path(os.environ['TRACER_MARKER']).write_text('pth')\n")
    write(root, f"{MODELS}/evil.pth", "import os; os.system('touch $TRACER_MARKER')\n")
    # an attribute only jedi could type: jedi is asked, and must not import `gi`
    write(root, f"{MODELS}/gimodel.py", MARK.format(who="gimodel") + (
        "import gi\nfrom torch import nn\n\n\nclass GiWrapper(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n        self.model = gi.make_model(config)\n\n"
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.model.set_eagle3_layers_to_capture(layer_ids)\n\n\nEntryClass = GiWrapper\n"))
    write(root, "sglang/srt/models/compiled.cpython-311-x86_64-linux-gnu.so", b"\x7fELF not really")
    return root


def test_no_command_executes_scanned_code(tmp_path):
    root = hostile_tree(tmp_path)
    marker = tmp_path / "MARKER"
    env = {"TRACER_MARKER": str(marker), "TRACER_CACHE_DIR": str(tmp_path / "cache")}
    write(tmp_path, "configs/target/config.json", json.dumps(
        {"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 28, "hidden_size": 64}))
    write(tmp_path, "configs/draft/config.json", json.dumps(
        {"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 13, 24]}}))
    commands = [
        ["scan", str(root), "--format", "json"],
        ["scan", str(root), "--format", "sarif", "--no-cache"],
        ["explain", str(root), "--target-config", str(tmp_path / "configs/target"),
         "--draft-config", str(tmp_path / "configs/draft")],
        ["report", str(root), "-o", str(tmp_path / "report")],
        ["graph", str(root)],
        ["graph", str(root), "--all", "--format", "dot"],
        ["graph", str(root), "--entry", "Qwen2ForCausalLM", "--format", "dot", "-o", str(tmp_path / "q.dot")],
    ]
    # From inside the tree, the worst place: `python -m` puts the cwd first on sys.path.
    for cwd in (root, root / MODELS, tmp_path):
        for command in commands:
            result = run_cli(*command, cwd=cwd, env=env)
            assert result.returncode in (0, 1), (command, result.stderr[-2000:])
            assert not marker.exists(), (command, cwd, marker.read_text())
    # lint runs git in the checkout: a hostile .git/config must not run either
    if shutil.which("git"):
        git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run(git + ["init", "-q", str(root)], check=True)
        subprocess.run(git + ["-C", str(root), "add", "-A"], check=True)
        subprocess.run(git + ["-C", str(root), "commit", "-qm", "x"], check=True)
        with open(root / ".git" / "config", "a") as fh:
            fh.write(f"[core]\n\tfsmonitor = touch {marker}\n\tpager = touch {marker}\n"
                     f"[diff]\n\texternal = touch {marker}\n")
        qwen2 = root / MODELS / "qwen2.py"
        qwen2.write_text(qwen2.read_text().replace("val + 1", "val"))
        result = run_cli("lint", "-C", str(root), "--format", "json", cwd=root, env=env)
        assert result.returncode in (0, 1, 2), result.stderr[-2000:]
        assert not marker.exists(), ("lint", marker.read_text())


def test_jedi_is_confined():
    """jedi is the only library that could import what it reads: it is used in
    one module, with auto-imports off and a sys.path holding neither the cwd nor the tree."""
    users = [str(p.relative_to(REPO)) for p in (REPO / "tracer").rglob("*.py") if "import jedi" in p.read_text()]
    assert users == ["tracer/resolve/jedi_fallback.py"]
    text = (REPO / "tracer" / "resolve" / "jedi_fallback.py").read_text()
    assert "auto_import_modules = []" in text
    assert "load_unsafe_extensions=False" in text and "smart_sys_path=False" in text
    assert "sys_path=_safe_sys_path(" in text


def test_jedi_sys_path_excludes_tree_and_cwd(tmp_path, monkeypatch):
    from tracer.resolve.jedi_fallback import _safe_sys_path

    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), str(tree), str(tree / "sub"), "/usr/lib/python3"])
    assert _safe_sys_path(tree) == ["/usr/lib/python3"]


def test_jedi_names_a_class_the_resolver_cannot_and_is_counted(tmp_path):
    """The fallback answers where the resolver stops (a class returned by a helper function and
    called through a local), the hop says jedi typed it, and the scan's stats count the question.
    jedi names the asked file's own module ``__main__``: that is mapped back to the module (it was
    ignored before, so the fallback had never named a class)."""
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "examples" / "ok", tree)
    llama = tree / "sglang" / "srt" / "models" / "llama.py"
    text = llama.read_text()
    text = text.replace('        self.model = self._init_model(config, quant_config, prefix="model")',
                        '        arch = _pick(config)\n        self.model = arch(config, quant_config, prefix="model")')
    llama.write_text(text.replace("class LlamaForCausalLM(nn.Module):",
                                  "def _pick(config):\n    return LlamaModel\n\n\nclass LlamaForCausalLM(nn.Module):"))
    result = scan_to_json(tree, use_cache=False)
    model = next(m for m in result["models"] if m["entry"] == "sglang.srt.models.llama.LlamaForCausalLM"
                 and m["protocol"] == "sglang-eagle3")
    assert model["verdict"] == "ok", model["reason"]
    assert model["chain"][1]["resolved_by"].startswith("jedi inference of self.model (LlamaForCausalLM.__init__:")
    assert result["stats"]["jedi_questions"] >= 1 and result["stats"]["jedi_answers"] >= 1, result["stats"]


# -- 2. broken input ---------------------------------------------------------------------------

BROKEN: dict[str, bytes] = {
    "syntax.py": b"def f(:\n    pass\nEntryClass = f\n",
    "py2.py": b"print 'hello'\nexec 'x = 1'\nEntryClass = X\n",
    "nul.py": b"x = 1\x00\nEntryClass = X\n",
    "bad_utf8.py": b"# a comment\nx = '\xff\xfe'\n",
    "bad_cookie.py": b"# -*- coding: klingon -*-\nx = 1\n",
    "mismatched_cookie.py": b"# -*- coding: ascii -*-\nx = '\xc3\xa9'\n",
    "deep_parens.py": b"x = " + b"(" * 10_000 + b"1" + b")" * 10_000 + b"\n",
    "deep_unary.py": b"x = " + b"-" * 10_000 + b"1\n",
    "deep_add.py": b"x = 1" + b" + 1" * 10_000 + b"\n",
    "deep_lambda.py": b"x = " + b"lambda: " * 10_000 + b"1\n",
    "merge_conflict.py": b"class A:\n<<<<<<< HEAD\n    x = 1\n=======\n    x = 2\n>>>>>>> b\n",
}


def _parses(data: bytes) -> bool:
    import ast

    try:
        ast.parse(data)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


def test_broken_files_are_input_errors_and_the_rest_stands(tmp_path):
    root = make_tree(tmp_path)
    for name, data in BROKEN.items():
        write(root, f"{MODELS}/{name}", data)
    write(root, f"{MODELS}/empty.py", b"")
    started = time.perf_counter()
    data = scan_to_json(str(root), use_cache=False)
    assert time.perf_counter() - started < 60
    errors = errors_by_file(data)
    for name in BROKEN:
        if name == "deep_add.py" and _parses(BROKEN[name]):
            continue  # a flat 10,000-term sum: 3.10's parser takes it (3.11's refuses): valid input there
        assert f"{MODELS}/{name}" in errors, (name, errors)
        assert errors[f"{MODELS}/{name}"], name
    assert "NUL" in errors[f"{MODELS}/nul.py"]
    assert "klingon" in errors[f"{MODELS}/bad_cookie.py"]
    assert "utf-8" in errors[f"{MODELS}/bad_utf8.py"] and "ascii" in errors[f"{MODELS}/mismatched_cookie.py"]
    assert f"{MODELS}/empty.py" not in errors  # an empty module is valid Python
    input_findings = {f["file"] for f in data["findings"] if f["slug"] == "input-error"}
    assert set(errors) <= input_findings
    ok_models_intact(data)
    assert len(data["models"]) >= OK_ENTRIES


def _outline_index(text: str):
    from tracer.index.discover import SourceFile

    source = SourceFile("sglang.srt.models.m", "m.py", "/nonexistent/m.py", False)
    return project_mod.index_file(source, "outline", text.encode())


@pytest.mark.parametrize("shape", ["(", "[", "-", "not ", "lambda: ", "a or ", "a + ", "a.b", "f()", "a[0]",
                                   "1 if a else "])
def test_deep_nesting_never_crashes_the_parsers(shape):
    """Deep nesting (libcst's native parser segfaulted on ~3,000 levels when it summarised
    whole modules) must be a quick result or input error of the outline and of the one
    method summariser. Run in a subprocess so a crash fails the test instead of killing pytest."""
    n = 10_000
    if shape in ("(", "["):
        expr = shape * n + "1" + {"(": ")", "[": "]"}[shape] * n
    elif shape in ("a.b", "f()", "a[0]"):
        expr = shape[0] + shape[1:] * n
    else:
        expr = shape * n + "1"
    code = (
        "import sys, time\nfrom tracer.index.project import index_file\nfrom tracer.index.discover import SourceFile\n"
        f"src = 'x = ' + {expr!r} + '\\n'\n"
        "s = SourceFile('m', 'm.py', '/nonexistent', False)\nt = time.perf_counter()\n"
        "outline = index_file(s, 'outline', src.encode())\n"
        "from tracer.index.methods import summarize_function\nfrom tracer.index.source import InputError\n"
        "try:\n    summarize_function('def f(self):\\n    ' + src, 1, 2, 'm', 'C')\n    fn = 'ok'\n"
        "except InputError as e:\n    fn = e.reason\n"
        "import json\nprint(json.dumps([outline.error, fn, time.perf_counter() - t]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, (shape, result.returncode, result.stderr[-1500:])
    outline_error, function_error, seconds = json.loads(result.stdout)
    # the stdlib parser either parses it (a flat `a or a ...`) or refuses it: never a crash
    assert function_error == "ok" or "nest" in function_error or "syntax" in function_error, result.stdout
    assert isinstance(outline_error, str)
    assert seconds < 20, result.stdout


def test_ordinary_nesting_is_accepted():
    text = "x = " + "(" * 30 + "1" + ")" * 30 + "\ny = a" + " or a" * 60 + "\n"
    assert _outline_index(text).error == ""


def test_file_over_the_size_bound_is_reported_quickly(tmp_path):
    """A 50 MB generated module is read only up to the bound and reported."""
    root = make_tree(tmp_path)
    big = root / MODELS / "generated.py"
    line = b"TABLE_%07d = [" + b"1, " * 40 + b"]\n"
    with open(big, "wb") as fh:
        for i in range(50 * 1024 * 1024 // len(line % 0) + 1):
            fh.write(line % i)
    assert big.stat().st_size >= 50 * 1024 * 1024
    started = time.perf_counter()
    data = scan_to_json(str(root), use_cache=False)
    assert time.perf_counter() - started < 60
    assert "larger than" in errors_by_file(data)[f"{MODELS}/generated.py"]
    ok_models_intact(data)


def test_file_deleted_or_unreadable_during_scan(tmp_path, monkeypatch):
    root = make_tree(tmp_path)
    victim = root / MODELS / "qwen2_moe.py"
    gone = root / MODELS / "mistral.py"
    real_read = project_mod._read

    def flaky_read(abspath):
        if abspath == str(gone):
            gone.unlink(missing_ok=True)  # deleted between listing and reading
        if abspath == str(victim):
            raise PermissionError(13, "Permission denied")  # chmod 000 does not stop root
        return real_read(abspath)

    monkeypatch.setattr(project_mod, "_read", flaky_read)
    data = scan_to_json(str(root), use_cache=False, jobs=1)
    errors = errors_by_file(data)
    assert "Permission denied" in errors[f"{MODELS}/qwen2_moe.py"]
    assert "No such file" in errors[f"{MODELS}/mistral.py"]
    verdicts = {m["entry"].rsplit(".", 1)[-1]: m["verdict"] for m in data["models"]}
    assert verdicts["Qwen2ForCausalLM"] == "ok" and verdicts["KimiK25ForConditionalGeneration"] == "ok"


def test_unlistable_folder_is_reported(tmp_path, monkeypatch):
    root = make_tree(tmp_path)
    (root / MODELS / "sub").mkdir()
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(discover.os, "scandir", scandir)
    data = scan_to_json(str(root), use_cache=False)
    assert "cannot list folder" in errors_by_file(data)[f"{MODELS}/sub"]
    ok_models_intact(data)


def test_links_fifos_and_devices(tmp_path):
    root = make_tree(tmp_path)
    models = root / MODELS
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 'do not read me'\n")
    os.symlink(outside, models / "outside_link.py")
    os.symlink("/dev/zero", models / "zero.py")
    os.symlink("self_loop.py", models / "self_loop.py")
    os.symlink("b_loop.py", models / "a_loop.py")
    os.symlink("a_loop.py", models / "b_loop.py")
    os.symlink("..", models / "parent_loop")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", models / "outside_dir")
    os.symlink("qwen2.py", models / "qwen2_alias.py")  # inside the root: followed
    os.mkfifo(models / "pipe.py")
    os.mkfifo(root / "sglang" / "version.py.tmp")
    (root / "sglang" / "version.py").unlink(missing_ok=True)
    os.mkfifo(root / "sglang" / "version.py")  # the version reader must not block
    started = time.perf_counter()
    data = scan_to_json(str(root), use_cache=False)
    assert time.perf_counter() - started < 60
    errors = errors_by_file(data)
    assert "outside" in errors[f"{MODELS}/outside_link.py"]
    assert "outside" in errors[f"{MODELS}/zero.py"]
    assert "loop" in errors[f"{MODELS}/self_loop.py"] and "loop" in errors[f"{MODELS}/a_loop.py"]
    assert "loop" in errors[f"{MODELS}/parent_loop"]
    assert "outside" in errors[f"{MODELS}/outside_dir"]
    assert "regular file" in errors[f"{MODELS}/pipe.py"]
    assert f"{MODELS}/qwen2_alias.py" not in errors
    ok_models_intact(data)
    # the report and the text output never read through the links either
    result = run_cli("report", str(root), "-o", str(tmp_path / "report"), "--no-cache", cwd=tmp_path, timeout=120)
    assert result.returncode in (0, 1), result.stderr[-1500:]
    for page in (tmp_path / "report").rglob("*.html"):
        assert "do not read me" not in page.read_text()


def test_deep_directory_tree(tmp_path):
    """os.walk recursed (a RecursionError at ~1,000 levels); the walk is iterative."""
    root = make_tree(tmp_path)
    deep = root / MODELS
    rel = []
    for _ in range(400):  # PATH_MAX bounds what a test can build; the walk itself has no limit
        rel.append("d")
    path = deep.joinpath(*rel)
    path.mkdir(parents=True)
    (path / "leaf.py").write_text("x = 1\n")
    files, problems = discover.list_sources(discover.detect_layout(root, _protocols()))
    assert any(f.path.endswith("/leaf.py") for f in files)
    assert problems == []


def _protocols():
    from tracer.config.packs import load_protocols

    return load_protocols()


def test_namespace_package_and_duplicate_modules(tmp_path):
    root = make_tree(tmp_path)
    # a package without __init__.py: still read, its models traced
    write(root, f"{MODELS}/extra/nons.py", (root / MODELS / "qwen2.py").read_text()
          .replace("Qwen2ForCausalLM", "NsForCausalLM").replace("Qwen2Model", "NsModel"))
    # the same module name on two paths: a stray copy of the package under the root
    data = scan_to_json(str(root), use_cache=False)
    entries = {m["entry"]: m["verdict"] for m in data["models"]}
    assert entries.get("sglang.srt.models.extra.nons.NsForCausalLM") == "ok"
    ok_models_intact(data)
    from tracer.index.discover import SourceFile
    from tracer.index.project import Project

    files = [SourceFile("a.b", "one/a/b.py", "/x/one/a/b.py", False), SourceFile("a.b", "two/a/b.py", "/x/two/a/b.py", False)]
    proj = Project(files, SummaryCache(None), 1)
    problems = proj.input_problems()
    assert len(problems) == 1 and "duplicate module name a.b" in problems[0].reason and problems[0].path == "two/a/b.py"


_REAL_INDEX_JOB = project_mod._index_job


def _crashing_job(args):
    """A worker job that dies like a segfaulting parser on one file (module level: pickled by name)."""
    if args[0].path.endswith("pad3.py"):
        os.kill(os.getpid(), 9)
    return _REAL_INDEX_JOB(args)


def test_worker_crash_costs_only_its_file(tmp_path, monkeypatch):
    """A parser process that dies (native crash, OOM kill) used to abort the
    whole scan with BrokenProcessPool; now only that file is an input error."""
    root = make_tree(tmp_path)
    for i in range(12):
        write(root, f"{MODELS}/pad{i}.py", f"class Pad{i}:\n    def set_eagle3_layers_to_capture(self, ids):\n        pass\n")
    monkeypatch.setattr(project_mod, "_index_job", _crashing_job)
    monkeypatch.setattr(project_mod, "OUTLINE_POOL_BYTES", 0)  # a big tree's outlines go to the pool
    import multiprocessing

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("needs fork so workers see the patched job")
    files, _ = discover.list_sources(discover.detect_layout(root, _protocols()))
    proj = project_mod.Project(files, SummaryCache(None), jobs=2)
    proj.load({f.module: "outline" for f in files})
    assert "process died" in proj.summaries["sglang.srt.models.pad3"].error
    assert not proj.summaries["sglang.srt.models.qwen2"].error
    assert len(proj.summaries) == len(files)


def test_cli_never_shows_a_traceback_on_hostile_trees(tmp_path):
    root = make_tree(tmp_path)
    for name, data in BROKEN.items():
        write(root, f"{MODELS}/{name}", data)
    os.symlink("self_loop.py", root / MODELS / "self_loop.py")
    for args in (["scan", str(root)], ["graph", str(root), "--all"], ["scan", str(root), "--format", "github"]):
        result = run_cli(*args, "--no-cache", cwd=tmp_path, timeout=180)
        assert result.returncode in (0, 1), (args, result.stderr[-1500:])
        assert "Traceback" not in result.stderr, result.stderr[-1500:]


# -- 3. pathological structure ------------------------------------------------------------------

SETTER = "set_eagle3_layers_to_capture"


def _model(name: str, bases: str = "nn.Module", body: str = "", imports: str = "") -> str:
    return (f"from torch import nn\n{imports}\n\nclass {name}({bases}):\n"
            + (body or "    pass\n") + f"\n\nEntryClass = {name}\n")


def _scan_timed(root: Path, limit: float = 60) -> dict:
    import resource

    started = time.perf_counter()
    data = scan_to_json(str(root), use_cache=False)
    elapsed = time.perf_counter() - started
    assert elapsed < limit, elapsed
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 * 1024 * 1024  # KiB: 2 GiB
    return data


def _verdict(data: dict, cls: str) -> dict:
    found = [m for m in data["models"] if m["entry"].endswith("." + cls) and m["protocol"] == "sglang-eagle3"]
    assert found, (cls, [m["entry"] for m in data["models"]])
    return found[0]


def test_inheritance_cycle_across_modules(tmp_path):
    root = make_tree(tmp_path)
    write(root, f"{MODELS}/cyc_a.py", _model("CycA", "CycB", imports="from sglang.srt.models.cyc_b import CycB"))
    write(root, f"{MODELS}/cyc_b.py", _model("CycB", "CycA", imports="from sglang.srt.models.cyc_a import CycA"))
    data = _scan_timed(root)
    for cls in ("CycA", "CycB"):
        model = _verdict(data, cls)
        assert model["verdict"] == "unknown", model
        assert "cycle" in model["reason"], model
    ok_models_intact(data)


def test_self_model_is_self(tmp_path):
    root = make_tree(tmp_path)
    write(root, f"{MODELS}/selfie.py", _model("Selfie", body=(
        "    def __init__(self, config):\n        super().__init__()\n        self.model = self\n\n"
        f"    def {SETTER}(self, layer_ids=None):\n        self.model.{SETTER}(layer_ids)\n")))
    data = _scan_timed(root)
    model = _verdict(data, "Selfie")
    assert model["verdict"] in ("unknown", "broken"), model
    assert "cycle" in model["reason"], model


def test_delegation_cycle(tmp_path):
    root = make_tree(tmp_path)
    write(root, f"{MODELS}/deleg.py", (
        "from torch import nn\n\n\nclass DelA(nn.Module):\n    def __init__(self, config):\n"
        "        super().__init__()\n        self.other = DelB(config)\n\n"
        f"    def {SETTER}(self, layer_ids=None):\n        self.other.{SETTER}(layer_ids)\n\n\n"
        "class DelB(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n"
        "        self.other = DelA(config)\n\n"
        f"    def {SETTER}(self, layer_ids=None):\n        self.other.{SETTER}(layer_ids)\n\n\n"
        "EntryClass = [DelA, DelB]\n"))
    data = _scan_timed(root)
    for cls in ("DelA", "DelB"):
        model = _verdict(data, cls)
        assert model["verdict"] in ("unknown", "broken"), model
        assert "cycle" in model["reason"], model


def test_thousand_hop_mro(tmp_path):
    root = make_tree(tmp_path)
    lines = ["from torch import nn\n", "class Base0(nn.Module):\n    pass\n"]
    lines += [f"class Base{i}(Base{i - 1}):\n    pass\n" for i in range(1, 1000)]
    lines.append("EntryClass = Base999\n")
    write(root, f"{MODELS}/tower.py", "\n".join(lines))
    # and a chain of 300 modules, each subclassing the previous one
    for i in range(300):
        base = f"from sglang.srt.models.hop{i - 1} import Hop{i - 1} as Base" if i else "from torch.nn import Module as Base"
        write(root, f"{MODELS}/hop{i}.py", f"{base}\n\n\nclass Hop{i}(Base):\n    pass\n\n\nEntryClass = Hop{i}\n")
    data = _scan_timed(root, limit=120)
    model = _verdict(data, "Base999")
    assert model["verdict"] in ("unknown", "missing"), model
    if model["verdict"] == "unknown":
        assert "deeper" in model["reason"] or "inheritance" in model["reason"], model
    assert _verdict(data, "Hop299")["verdict"] in ("unknown", "missing")
    ok_models_intact(data)


def test_star_imports_of_star_imports_and_cycles(tmp_path):
    root = make_tree(tmp_path)
    write(root, f"{MODELS}/star_a.py", "from sglang.srt.models.star_b import *\nfrom sglang.srt.models.star_c import *\n")
    write(root, f"{MODELS}/star_b.py", "from sglang.srt.models.star_c import *\nfrom sglang.srt.models.star_a import *\n")
    write(root, f"{MODELS}/star_c.py", "from sglang.srt.models.qwen2 import *\nfrom sglang.srt.models.star_a import *\n")
    write(root, f"{MODELS}/star_user.py", "from sglang.srt.models.star_a import *\n\n\n"
          "class StarLM(Qwen2ForCausalLM):\n    pass\n\n\nclass Ghost(NotDefinedAnywhere):\n    pass\n\n\n"
          "EntryClass = [StarLM, Ghost]\n")
    data = _scan_timed(root)
    assert _verdict(data, "StarLM")["verdict"] == "ok"
    ghost = [m for m in data["models"] if m["entry"].endswith("Ghost")]
    assert all(m["verdict"] in ("unknown", "missing") for m in ghost)


def test_conditional_class_definitions(tmp_path):
    root = make_tree(tmp_path)
    write(root, f"{MODELS}/cond.py", (
        "import os\nfrom torch import nn\nfrom sglang.srt.models.qwen2 import Qwen2ForCausalLM\n\n"
        "if os.environ.get('X'):\n    class CondLM(Qwen2ForCausalLM):\n        pass\nelse:\n"
        "    class CondLM(nn.Module):\n        pass\n\n"
        "try:\n    class TryLM(Qwen2ForCausalLM):\n        pass\nexcept ImportError:\n    TryLM = None\n\n"
        "EntryClass = [CondLM, TryLM]\n"))
    data = _scan_timed(root)
    for cls in ("CondLM", "TryLM"):
        assert _verdict(data, cls)["verdict"] in ("ok", "unknown", "missing")
    ok_models_intact(data)


# -- 5. cache safety ------------------------------------------------------------------------------

def _stable(data: dict) -> str:
    data = json.loads(json.dumps(data))
    for key in ("seconds", "cache_hits", "files_parsed", "files_outlined", "functions_parsed", "result_cache",
                "chains_traced", "chains_reused", "jedi_questions", "jedi_answers"):
        data["stats"].pop(key, None)
    return json.dumps(data, sort_keys=True)


def test_corrupt_truncated_and_foreign_cache_entries_are_rebuilt(tmp_path):
    root = make_tree(tmp_path)
    cache = tmp_path / "cache"
    reference = _stable(scan_to_json(str(root), cache_dir=str(cache)))
    entries = sorted((cache / "summaries").rglob("*.json"))
    assert entries
    for i, entry in enumerate(entries):
        blob = entry.read_bytes()
        if i % 4 == 0:
            entry.write_bytes(blob[: len(blob) // 2])  # truncated
        elif i % 4 == 1:
            at = len(blob) - 3
            entry.write_bytes(blob[:at] + bytes([blob[at] ^ 1]) + blob[at + 1:])  # one bit flipped
        elif i % 4 == 2:
            entry.write_bytes(b"[1, 2, 3]")  # someone else's JSON
        else:
            entry.write_bytes(os.urandom(len(blob)))
    again = scan_to_json(str(root), cache_dir=str(cache))
    assert _stable(again) == reference
    assert again["stats"]["cache_hits"] == 0
    warm = scan_to_json(str(root), cache_dir=str(cache))
    assert _stable(warm) == reference and warm["stats"]["cache_hits"] > 0


def test_cache_of_another_version_is_ignored(tmp_path, monkeypatch):
    import tracer.index.cache as cache_mod

    root = make_tree(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setattr(cache_mod, "__version__", "0.0.0-other")
    scan_to_json(str(root), cache_dir=str(cache))
    monkeypatch.undo()
    data = scan_to_json(str(root), cache_dir=str(cache))
    assert data["stats"]["cache_hits"] == 0


def test_cache_write_failures_cost_only_speed(tmp_path):
    from tracer.model.summary import ModuleSummary

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    cache = SummaryCache(blocker)
    cache.put("ab" * 32, ModuleSummary("m", "m.py", "outline"))
    assert cache.get("ab" * 32) is None
    good = SummaryCache(tmp_path / "c")
    good.put_json("cd" * 32, {"not": {1, 2}})  # not JSON-able: no exception, no temp file left
    assert not list((tmp_path / "c").rglob(".tmp-*"))
    assert good.get_json("cd" * 32) is None


def test_concurrent_scans_share_a_cache(tmp_path):
    root = make_tree(tmp_path)
    cache = tmp_path / "cache"
    first = run_cli("scan", str(root), "--format", "json", "--no-cache", cwd=tmp_path)
    reference = _stable(json.loads(first.stdout))
    procs = [subprocess.Popen([sys.executable, "-m", "tracer", "scan", str(root), "--format", "json",
                               "--cache-dir", str(cache)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)))
             for _ in range(4)]
    outputs = [p.communicate(timeout=240) for p in procs]
    for (out, err), proc in zip(outputs, procs):
        assert proc.returncode in (0, 1), err.decode()[-1500:]
        assert _stable(json.loads(out)) == reference
    assert not list(cache.rglob(".tmp-*"))
    for entry in cache.rglob("*.json"):
        assert SummaryCache(cache)._load(entry.stem) is not None, entry
    warm = run_cli("scan", str(root), "--format", "json", "--cache-dir", str(cache), cwd=tmp_path)
    assert _stable(json.loads(warm.stdout)) == reference


# -- 6. limits --------------------------------------------------------------------------------------

def test_jobs_is_respected(tmp_path, monkeypatch):
    import concurrent.futures

    seen = []
    real = project_mod.ProcessPoolExecutor

    def counting(*args, **kwargs):
        seen.append(kwargs.get("max_workers", args[0] if args else None))
        return real(*args, **kwargs)

    monkeypatch.setattr(project_mod, "ProcessPoolExecutor", counting)
    monkeypatch.setattr(project_mod, "OUTLINE_POOL_BYTES", 0)  # as for a tree of tens of MB
    root = make_tree(tmp_path)
    files, _ = discover.list_sources(discover.detect_layout(root, _protocols()))
    project_mod.Project(files, SummaryCache(None), jobs=3).load({f.module: "full" for f in files})
    assert seen and all(w == 3 for w in seen)
    seen.clear()
    project_mod.Project(files, SummaryCache(None), jobs=1).load({f.module: "full" for f in files})
    assert seen == []
    assert concurrent.futures  # imported for the patch target's module


def test_lint_never_reads_through_links_or_pipes(tmp_path):
    """A worktree link to /dev/zero made lint read until the OOM killer came."""
    if not shutil.which("git"):
        pytest.skip("no git")
    root = make_tree(tmp_path)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(root)]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    os.symlink("/dev/zero", root / MODELS / "zero.py")
    os.mkfifo(root / MODELS / "pipe.py")
    qwen2 = root / MODELS / "qwen2.py"
    qwen2.write_text(qwen2.read_text() + "\n# touched\n")
    code = ("import resource, sys, runpy\nresource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
            "sys.argv = ['tracer', 'lint', '-C', sys.argv[1], '--no-cache']\nrunpy.run_module('tracer', run_name='__main__')\n")
    result = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode in (0, 1), result.stderr[-1500:]
    assert "MemoryError" not in result.stderr


def test_newer_syntax_with_deep_nesting_is_refused(tmp_path):
    """3.12 syntax and a 20,000-term chain: the one parser (the running Python's) answers
    quickly, an input error exactly where that Python cannot parse the file, never a crash."""
    text = "type X = int\ndef f[T](x: T) -> T: ...\nx = a" + " or a" * 20_000 + "\n"
    code = ("import ast, json, sys\nfrom tracer.index.project import index_file\nfrom tracer.index.discover import SourceFile\n"
            "s = SourceFile('m', 'm.py', '/x', False)\ndata = sys.stdin.buffer.read()\n"
            "try:\n    ast.parse(data)\n    parses = True\nexcept (SyntaxError, RecursionError, MemoryError):\n    parses = False\n"
            "print(json.dumps([index_file(s, 'outline', data).error, parses]))\n")
    result = subprocess.run([sys.executable, "-c", code], input=text.encode(), capture_output=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr.decode()[-1500:]
    error, parses = json.loads(result.stdout)
    assert bool(error) != parses, (error, parses)
