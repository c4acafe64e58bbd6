"""Safe on a stranger's pull request (issue 16): each attack built in a temp folder,
asserting what a user sees (no file outside changed, verdict unchanged, exit codes,
bounded time). The reader property test is in tests/test_readers.py; sweep's and
interruption's cases are in tests/test_sweep.py and tests/test_interrupt.py."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OK = REPO / "examples" / "ok"
QWEN2 = "sglang/srt/models/qwen2.py"
GOOD_WRITE = "self.model.layers_to_capture = [val + 1 for val in layer_ids]"
BAD_WRITE = "self.model.layers_to_captur = [val + 1 for val in layer_ids]"

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="no git")


def run(*args: str, cwd: Path, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "tracer", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full)


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1", HOME=str(repo))
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def checksums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture
def pr_repo(tmp_path):
    """main: examples/ok; branch pr: one commit breaking Qwen2's state write (a new error)."""
    repo = tmp_path / "repo"
    shutil.copytree(OK / "sglang", repo / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    model = repo / QWEN2
    model.write_text(model.read_text().replace(GOOD_WRITE, BAD_WRITE))
    git(repo, "commit", "-qam", "break qwen2")
    return repo


def lint_json(repo: Path, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    done = run("lint", "--base", "main", "--format", "json", "--cache-dir", str(tmp_path / "cache"), *extra, cwd=repo)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


# -- the gate belongs to the base ------------------------------------------------------------

@pytest.mark.parametrize("table", [
    'fail-on = "never"',
    'exclude = ["*"]',
    'exclude = ["**/*.py"]\nfail-on = "info"',
])
def test_the_change_cannot_relax_its_own_gate(pr_repo, tmp_path, table):
    code, before, _ = lint_json(pr_repo, tmp_path)
    assert code == 1 and [f["slug"] for f in before["findings"]] == ["dead-write", "support-regression"]
    (pr_repo / "pyproject.toml").write_text(f"[tool.tracer]\n{table}\n")
    git(pr_repo, "add", "-A")
    git(pr_repo, "commit", "-qm", "relax the gate")
    code, after, stderr = lint_json(pr_repo, tmp_path)
    assert code == 1, "the change's own [tool.tracer] decided the verdict"
    assert [f["slug"] for f in after["findings"]] == ["dead-write", "support-regression"]
    assert "the change edits [tool.tracer]" in stderr and after["notes"]


def test_the_change_cannot_replace_a_builtin_pack(pr_repo, tmp_path):
    """A pack named like the built-in one, with a setter no model has: every chain would vanish."""
    pack = (REPO / "rules" / "sglang-eagle3.toml").read_text().replace(
        'setter = "set_eagle3_layers_to_capture"', 'setter = "set_nothing_at_all"')
    assert "set_nothing_at_all" in pack
    (pr_repo / "ci").mkdir()
    (pr_repo / "ci" / "pack.toml").write_text(pack)
    (pr_repo / "pyproject.toml").write_text('[tool.tracer]\nrules = ["ci/pack.toml"]\n')
    git(pr_repo, "add", "-A")
    git(pr_repo, "commit", "-qm", "own pack")
    code, result, stderr = lint_json(pr_repo, tmp_path)
    assert code == 1 and [f["slug"] for f in result["findings"]] == ["dead-write", "support-regression"]
    assert "adds the rules pack ci/pack.toml" in stderr
    # without --base (the author's own working tree) a shadowing pack is an error, never silent
    done = run("lint", "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo)
    assert done.returncode == 2 and "has the name of a built-in pack" in done.stderr


def test_the_change_cannot_baseline_its_own_findings(pr_repo, tmp_path):
    done = run("baseline", "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo)
    assert done.returncode == 0, done.stderr
    git(pr_repo, "add", "-A")
    git(pr_repo, "commit", "-qm", "accept everything")
    code, result, stderr = lint_json(pr_repo, tmp_path)
    assert code == 1 and [f["slug"] for f in result["findings"]] == ["dead-write", "support-regression"]
    assert "edits the baseline .tracer-baseline.json" in stderr


def test_base_settings_still_apply(pr_repo, tmp_path):
    """The base's own [tool.tracer] is what lint applies (here: the base excludes qwen2)."""
    git(pr_repo, "checkout", "-q", "main")
    (pr_repo / "pyproject.toml").write_text('[tool.tracer]\nexclude = ["sglang/srt/models/qwen2.py"]\n')
    git(pr_repo, "add", "-A")
    git(pr_repo, "commit", "-qm", "base config")
    git(pr_repo, "checkout", "-q", "pr")
    git(pr_repo, "rebase", "-q", "main")
    code, result, stderr = lint_json(pr_repo, tmp_path)
    assert code == 0 and result["findings"] == [] and "edits" not in stderr


def test_input_error_cannot_be_suppressed(pr_repo, tmp_path):
    """Newer syntax plus `# tracer: ignore` must not make a broken model vanish."""
    model = pr_repo / QWEN2
    text = model.read_text().replace(BAD_WRITE, GOOD_WRITE)
    model.write_text("x = (yield) if 0 else 1 +  # tracer: ignore\n" + text)
    done = run("lint", "--cache-dir", str(tmp_path / "cache"), "--format", "json", cwd=pr_repo)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert "input-error" in [f["slug"] for f in result["findings"]]
    assert not [f for f in result["suppressed"] if f["slug"] == "input-error"]
    scan = run("scan", str(pr_repo), "--no-cache", "--format", "json", cwd=tmp_path)
    assert scan.returncode == 1 and any(f["slug"] == "input-error" for f in json.loads(scan.stdout)["findings"])


# -- nothing read or written outside -----------------------------------------------------------

def test_config_paths_may_not_leave_the_repository(pr_repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "file").write_text("precious\n")
    (outside / "pack.toml").write_text("name = 'x'\n")
    before = checksums(outside)
    for table in ('baseline = "../elsewhere/file"', 'rules = ["../elsewhere/pack.toml"]'):
        (pr_repo / "pyproject.toml").write_text(f"[tool.tracer]\n{table}\n")
        for command in (["baseline"], ["lint"]):
            done = run(*command, "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo)
            assert done.returncode == 2, (table, command, done.stderr)
            assert "leaves the repository" in done.stderr and "Traceback" not in done.stderr
    assert checksums(outside) == before


def test_baseline_is_never_written_through_a_link(pr_repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "file").write_text("precious\n")
    os.symlink(outside / "file", pr_repo / ".tracer-baseline.json")
    done = run("baseline", "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo)
    assert done.returncode == 2 and "symbolic link" in done.stderr, done.stderr
    assert (outside / "file").read_text() == "precious\n"
    # nor read through one that leaves the repository (a FIFO there would hang it)
    (pr_repo / ".tracer-baseline.json").unlink()
    os.mkfifo(outside / "fifo")
    os.symlink(outside / "fifo", pr_repo / ".tracer-baseline.json")
    done = run("lint", "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo, timeout=60)
    assert done.returncode == 2 and "cannot read the baseline" in done.stderr


def test_pyproject_that_is_a_fifo_or_a_link_out(pr_repo, tmp_path):
    os.mkfifo(pr_repo / "pyproject.toml")
    done = run("lint", "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo, timeout=60)
    assert done.returncode == 2 and "FIFO" in done.stderr, done.stderr
    (pr_repo / "pyproject.toml").unlink()
    os.symlink("/dev/zero", pr_repo / "pyproject.toml")
    done = run("lint", "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo, timeout=60)
    assert done.returncode == 2 and "cannot read [tool.tracer]" in done.stderr, done.stderr


def test_report_never_deletes_or_writes_through_shipped_links(tmp_path):
    """A tree shipping report/.tracer-report with models/ and chains/ linked elsewhere."""
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("a.html", "b.svg", "c.dot"):
        (victim / name).write_text("precious\n")
    before = checksums(victim)
    out = tree / "report"
    out.mkdir()
    os.symlink(victim, out / "models")
    os.symlink(victim, out / "chains")
    (out / ".tracer-report").write_text("models/a.html\nchains/b.svg\n../victim/c.dot\n" + str(victim / "a.html") + "\n")
    done = run("report", str(tree), "-o", str(out), "--no-cache", cwd=tmp_path)
    assert done.returncode == 2 and "symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert checksums(victim) == before


def test_report_from_json_reads_no_file_the_json_names(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n" * 20)
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    done = run("scan", str(tree), "--no-cache", "--format", "json", cwd=tmp_path)
    data = json.loads(done.stdout)
    data["root"] = "/"
    for model in data["models"]:
        model["file"] = str(secret).lstrip("/")
        for hop in model["chain"]:
            hop["file"] = str(secret).lstrip("/")
    scan_file = tmp_path / "scan.json"
    scan_file.write_text(json.dumps(data))
    done = run("report", "--from", str(scan_file), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    pages = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.html"))
    assert "TOP-SECRET-LINE" not in pages
    # an explicit --source-root: only files inside it
    done = run("report", "--from", str(scan_file), "-o", str(tmp_path / "out2"), "--source-root", str(tree),
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "TOP-SECRET-LINE" not in "".join(p.read_text() for p in (tmp_path / "out2").rglob("*.html"))


# -- caches that cannot lie ----------------------------------------------------------------------

def _scan(tree: Path, cache: Path, env: dict | None = None) -> dict:
    done = run("scan", str(tree), "--cache-dir", str(cache), "--format", "json", cwd=tree.parent, env=env)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_same_size_edit_with_the_mtime_put_back_is_seen(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    cache = tmp_path / "cache"
    assert _scan(tree, cache)["stats"].get("result_cache", False) is False
    assert _scan(tree, cache)["stats"].get("result_cache") is True
    model = tree / QWEN2
    stat = model.stat()
    text = model.read_text()
    edited = text.replace("layers_to_capture = [val + 1", "layers_to_captur_ = [val + 1")
    assert len(edited) == len(text)
    model.write_text(edited)
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert model.stat().st_size == stat.st_size and model.stat().st_mtime_ns == stat.st_mtime_ns
    data = _scan(tree, cache)
    assert data["stats"].get("result_cache", False) is False
    verdicts = {m["entry"].rsplit(".", 1)[-1]: m["verdict"] for m in data["models"] if m["protocol"] == "sglang-eagle3"}
    assert verdicts["Qwen2ForCausalLM"] == "broken"


def test_a_cache_written_by_another_job_is_not_trusted(tmp_path):
    """Entries carry an HMAC keyed outside the cache folder: a cache restored from a job
    with another key (a forged "ok" included) is rebuilt, never believed."""
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    cache = tmp_path / "cache"
    theirs = {"TRACER_CACHE_KEY": "the-other-job"}
    _scan(tree, cache, theirs)
    assert _scan(tree, cache, theirs)["stats"].get("result_cache") is True
    ours = {"TRACER_CACHE_KEY": "this-job"}
    data = _scan(tree, cache, ours)
    assert data["stats"].get("result_cache", False) is False and data["stats"]["cache_hits"] == 0
    # entries re-signed with a plain SHA-256 (the old format, which anyone can recompute) are refused too
    from tracer.index.cache import SummaryCache

    entry = next((cache / "summaries").rglob("*.json"))
    payload = entry.read_bytes().partition(b"\n")[2]
    entry.write_bytes(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    os.environ["TRACER_CACHE_KEY"] = "this-job"
    try:
        assert SummaryCache(cache).get_json(entry.stem) is None
    finally:
        del os.environ["TRACER_CACHE_KEY"]


def test_cache_entries_that_are_fifos_or_links_do_not_hang(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(OK, tree, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    cache = tmp_path / "cache"
    _scan(tree, cache)
    entries = sorted((cache / "summaries").rglob("*.json"))
    for i, entry in enumerate(entries):
        entry.unlink()
        if i % 2:
            os.mkfifo(entry)
        else:
            os.symlink("/dev/zero", entry)
    data = _scan(tree, cache)
    assert {m["verdict"] for m in data["models"]} >= {"ok"}


def test_lint_without_a_writable_cache_still_answers(pr_repo, tmp_path):
    """Every write into the cache fails (its folders are files: this works as root too)."""
    cache = tmp_path / "broken-cache"
    cache.mkdir()
    for name in ("lint", "summaries"):
        (cache / name).write_text("not a folder\n")
    done = run("lint", "--base", "main", "--cache-dir", str(cache), cwd=pr_repo)
    assert done.returncode == 1 and "dead-write" in done.stdout, done.stderr
    assert sorted(p.name for p in cache.iterdir()) == ["lint", "summaries"]
    assert not [p for p in pr_repo.rglob(".tmp*")] and not [p for p in cache.rglob(".*tmp*")]


# -- crash isolation ---------------------------------------------------------------------------

INDEX_ONE = ("import json, sys\nfrom tracer.index.project import index_file\nfrom tracer.index.discover import SourceFile\n"
             "s = SourceFile('m', 'm.py', '/x', False)\n"
             "print(json.dumps(index_file(s, 'outline', sys.stdin.buffer.read()).error))\n")


@pytest.mark.parametrize("shape", ["backslash", "parens", "unary", "or-words"])
def test_deep_chain_over_logical_lines_never_reaches_libcst(shape):
    """Python 3.12 syntax (refused by this interpreter's parser, so the guard falls back to
    counting) plus a 20,000-operand chain over short physical lines: libcst segfaulted
    (backslashes) or ran for more than five minutes (brackets)."""
    chain = {"backslash": "x = a \\\n" + " + a \\\n" * 20_000 + " + a\n",
             "parens": "x = (a\n" + " + a\n" * 20_000 + ")\n",
             "unary": "x = " + "-" * 9_000 + "a\n",
             "or-words": "x = [a\n" + " or a\n" * 20_000 + "]\n"}[shape]
    text = "type X = int\n" + chain
    done = subprocess.run([sys.executable, "-c", INDEX_ONE], input=text.encode(), capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr.decode()[-1000:]
    try:  # the one parser is the running Python's: an input error exactly where it refuses the file
        ast.parse(text)
        parses = True
    except (SyntaxError, RecursionError, MemoryError):
        parses = False
    assert bool(json.loads(done.stdout)) != parses, (done.stdout, parses)


def test_newer_syntax_than_the_running_python_is_an_input_error():
    """The one parser of the analysis is the running Python's: a file with newer syntax (a PEP 695
    `type` statement on 3.11) is a per-file input error, never a silent skip or a second parser's guess."""
    text = "type X = int\n" + (OK / QWEN2).read_text()
    done = subprocess.run([sys.executable, "-c", INDEX_ONE], input=text.encode(), capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr.decode()[-1000:]
    error = json.loads(done.stdout)
    if sys.version_info >= (3, 12):
        assert error in ("", None), error
    else:
        assert error and "syntax" in error, error


# -- output injection and git --------------------------------------------------------------------

HOSTILE_TEXT = "\x1b[2J\u202e\r\n::error::forged"


def _hostile_result() -> dict:
    """A scan result whose every name and value carries control characters (a stranger's
    tree chooses its strings; the formatters must not trust any of them)."""
    bad = HOSTILE_TEXT
    hop = {"kind": "setter", "qualname": f"m.C{bad}.set", "file": f"m{bad}.py", "line": 3, "call_file": None,
           "call_line": None, "resolved_by": bad, "reason": bad}
    finding = {"slug": "dead-write", "severity": "error", "protocol": "p", "entry": f"m.C{bad}",
               "entries": [f"m.C{bad}"], "file": f"m{bad}.py", "line": 3, "col": 0, "message": f"msg {bad}",
               "hint": f"hint {bad}", "fingerprint": "f"}
    model = {"entry": f"m.C{bad}", "protocol": "p", "verdict": "broken", "reason": bad, "file": f"m{bad}.py",
             "line": 1, "chain": [hop], "state_owner": None, "draft": False}
    return {"tool": {"name": "tracer", "version": "0"}, "root": "/r", "protocols": ["p"], "findings": [finding],
            "models": [model], "call_sites": [], "input_errors": []}


def test_control_characters_never_reach_the_output():
    from tracer.lint.lint import format_lint_text
    from tracer.present.github import format_github
    from tracer.present.scan_json import from_json
    from tracer.present.text import TextOptions, format_text

    data = _hostile_result()
    scan = from_json(data)
    lint_result = {"findings": data["findings"], "fixed": data["findings"], "base": {"ref": "HEAD", "commit": "0" * 40},
                   "stats": {}, "affected": {}, "touched_in_package": []}
    outputs = {"text": format_text(scan, TextOptions(show_chains=True)), "github": format_github(scan),
               "lint": format_lint_text(lint_result)}
    for name, text in outputs.items():
        for bad in ("\x1b", "\u202e", "\r"):
            assert bad not in text, (name, repr(bad))
        lines = text.splitlines()
        assert not [line for line in lines if line.startswith("::error::forged")], name
        assert "\\x1b[2J\\u202e" in text, name
    # one annotation per finding (the forged newline made none of its own) plus the summary notice
    github = outputs["github"].splitlines()
    assert [line.split(" ", 1)[0] for line in github] == ["::error", "::notice"], github


def test_printable_escapes_every_control_character():
    from tracer.model.escape import printable
    from tracer.present.github import escape_data, escape_property

    assert printable("a\nb\x1b[31m\u202e\u2028c d") == "a\\x0ab\\x1b[31m\\u202e\\u2028c d"
    assert printable("plain text: ok") == "plain text: ok"
    assert escape_data("50%\r\nnext\x1b") == "50%25%0D%0Anext\\x1b"
    assert escape_property("a:b,c\n") == "a%3Ab%2Cc%0A"


def test_git_filters_of_the_checkout_never_run(pr_repo, tmp_path):
    """.gitattributes names a filter whose clean and smudge commands write markers: git
    diff (clean) and git archive (smudge) ran them during lint."""
    marker = tmp_path / "FILTER_RAN"
    (pr_repo / ".gitattributes").write_text("*.py filter=evil\n")
    git(pr_repo, "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'")
    git(pr_repo, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    git(pr_repo, "add", ".gitattributes")
    git(pr_repo, "commit", "-qm", "attributes")
    marker.unlink(missing_ok=True)
    model = pr_repo / QWEN2
    model.write_text(model.read_text() + "\n# touched\n")
    for args in ([], ["--base", "main"], ["--full"]):
        done = run("lint", "--cache-dir", str(tmp_path / f"cache{len(args)}"), *args, cwd=pr_repo)
        assert done.returncode in (0, 1), done.stderr
    assert not marker.exists(), "a filter of the checkout ran"


# -- python -m from inside the checkout (round two) ----------------------------------------------

SHADOW = "import os, pathlib\npathlib.Path(os.environ['TRACER_MARKER'], {name!r}).write_text('ran')\n"


def _imported_modules(stderr: str) -> set[str]:
    """Top-level names of every module a run imported (``-X importtime`` lines)."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and not name.startswith("import time"):
                names.add(name.split(".")[0])
    return names


def _loaded_before_tracer(folder: Path) -> set[str]:
    """What Python itself imports before a ``-m`` package's first line runs (start-up, site,
    runpy): no code of tracer's can keep those from the working folder (``-P`` can)."""
    probe = folder / "probe_before"
    probe.mkdir()
    (probe / "__init__.py").write_text("import sys\nprint(' '.join(sorted(sys.modules)))\n")
    (probe / "__main__.py").write_text("")
    done = subprocess.run([sys.executable, "-m", "probe_before"], cwd=folder, capture_output=True, text=True,
                          timeout=60, check=True)
    shutil.rmtree(probe)
    return {name.split(".")[0] for name in done.stdout.split()}


def test_python_dash_m_never_runs_a_module_the_checkout_ships(tmp_path):
    """A checkout shipping `signal.py` (and a module named like every other stdlib or dependency
    module tracer imports once started) is scanned, linted, graphed, explained and reported
    with `python -m tracer` run from inside it: none of them runs."""
    repo = tmp_path / "repo"
    shutil.copytree(OK / "sglang", repo / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    configs = tmp_path / "configs"
    (configs / "t").mkdir(parents=True)
    (configs / "d").mkdir()
    (configs / "t" / "config.json").write_text(json.dumps(
        {"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 28, "hidden_size": 64}))
    (configs / "d" / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 13]}}))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    model = repo / QWEN2
    model.write_text(model.read_text().replace(GOOD_WRITE, BAD_WRITE))
    cache = str(tmp_path / "cache")
    commands = [
        ["scan", ".", "--format", "sarif", "--cache-dir", cache],
        ["lint", "--format", "json", "--cache-dir", cache],
        ["graph", ".", "--all", "--format", "dot", "--cache-dir", cache],
        ["explain", ".", "--target-config", str(configs / "t"), "--draft-config", str(configs / "d")],
        ["report", ".", "-o", str(tmp_path / "report"), "--cache-dir", cache],
    ]
    marker = tmp_path / "marker"
    marker.mkdir()
    env = {"TRACER_MARKER": str(marker), "TRACER_CACHE_DIR": cache}
    imported: set[str] = {"signal"}
    for command in commands:  # what tracer imports, as measured (so a new import is covered too)
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "tracer", *command], cwd=repo,
                              capture_output=True, text=True, timeout=240,
                              env=dict(os.environ, PYTHONPATH=str(REPO), **env))
        assert done.returncode in (0, 1), (command, done.stderr[-2000:])
        imported |= _imported_modules(done.stderr)
    shadowed = sorted(imported - _loaded_before_tracer(tmp_path) - {"tracer", "__main__"})
    assert "signal" in shadowed and "click" in shadowed and "libcst" in shadowed, shadowed
    for name in shadowed:
        (repo / f"{name}.py").write_text(SHADOW.format(name=name))
    for command in commands:
        done = run(*command, cwd=repo, env=env)
        assert done.returncode in (0, 1), (command, done.stderr[-2000:])
        assert not list(marker.iterdir()), (command, sorted(p.name for p in marker.iterdir()))
    assert len(shadowed) > 40, len(shadowed)


# -- links on the output path and in the cache (round two) --------------------------------------

@pytest.mark.parametrize("command", [
    ["scan", ".", "--format", "sarif", "-o", "results/x.sarif"],
    ["scan", ".", "--format", "json", "-o", "results/deeper/x.json"],
    ["graph", ".", "--entry", "Qwen2ForCausalLM", "--format", "dot", "-o", "results/q.dot"],
    ["report", ".", "-o", "results/report"],
])
def test_output_is_never_written_through_a_shipped_link(pr_repo, tmp_path, command):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (pr_repo / "results").symlink_to(elsewhere)
    done = run(*command, "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("tracer: error: ") and "symbolic link" in lines[0], lines
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["keep.txt"]


def test_cache_entries_are_never_written_through_a_link_in_the_cache(pr_repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "lint").symlink_to(elsewhere)
    (cache / "callgraph").symlink_to(elsewhere)
    code, data, _ = lint_json(pr_repo, tmp_path)
    assert code == 1 and [f["slug"] for f in data["findings"]] == ["dead-write", "support-regression"]
    assert list(elsewhere.iterdir()) == []


# -- a git submodule inside the package (round two) ------------------------------------------------

def test_lint_refuses_a_submodule_inside_the_package_in_every_mode(pr_repo, tmp_path):
    """The base revision holds a submodule's commit id, the working tree its files: the re-trace
    saw none of its findings, --full all of them. Every mode now says the same one line."""
    vendored = pr_repo / "sglang" / "srt" / "models" / "vendored"
    vendored.mkdir()
    (vendored / "__init__.py").write_text("")
    (vendored / "extra.py").write_text(
        "class SubForCausalLM:\n    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.model.layers_to_captur = layer_ids\n\n\nEntryClass = SubForCausalLM\n")
    git(vendored, "init", "-q", "-b", "main")
    git(vendored, "add", "-A")
    git(vendored, "commit", "-qm", "sub")
    sha = git(vendored, "rev-parse", "HEAD").strip()
    git(pr_repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},sglang/srt/models/vendored")
    git(pr_repo, "commit", "-qm", "vendor a submodule")
    answers = set()
    for extra in ([], ["--full"], ["--base", "main"], ["--base", "main", "--full"]):
        done = run("lint", *extra, "--cache-dir", str(tmp_path / "cache"), cwd=pr_repo)
        lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("tracer lint: ")]
        assert done.returncode == 2 and len(lines) == 1, (extra, done.stderr[-2000:])
        answers.add(lines[0])
    assert len(answers) == 1 and "sglang/srt/models/vendored is a git submodule" in answers.pop()
    # outside the package a submodule is none of lint's business
    git(pr_repo, "rm", "-q", "--cached", "sglang/srt/models/vendored")
    shutil.rmtree(vendored)
    git(pr_repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},third_party/vendored")
    git(pr_repo, "commit", "-qm", "move it out")
    code, data, _ = lint_json(pr_repo, tmp_path)
    assert code == 1 and [f["slug"] for f in data["findings"]] == ["dead-write", "support-regression"]
