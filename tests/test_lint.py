"""tracer lint / baseline / suppressions / [tool.tracer] / SARIF schema.

Fast tests run on git repositories made in a temp folder from examples/ok (a
small SGLang-shaped tree). Tests marked `real` build repositories from two
real releases (0.5.6 -> 0.5.16 and the reverse) and break a real model file
of 0.5.23 by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import main
from tracer.config.settings import LintConfig, is_excluded, load_config, merge
from tracer.index.discover import UsageError
from tracer.lint.baseline import write_baseline
from tracer.lint.fingerprint import Identity, anchor, enclosing_def, fingerprint, match
from tracer.lint.lint import lint
from tracer.lint.records import Options
from tracer.lint.suppress import SourceLines, apply_to_json, parse_suppression

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
KIMI = "sglang/srt/models/kimi_k25.py"
KIMI_ENTRY = "sglang.srt.models.kimi_k25.KimiK25ForConditionalGeneration"


# -- helpers ------------------------------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo), "PATH": "/usr/bin:/bin:/usr/local/bin",
           "GIT_CONFIG_NOSYSTEM": "1"}
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def commit_tree(repo: Path, source: Path, message: str, parts=None) -> None:
    """Replace repo/sglang with source/sglang (or only the given sub-folders of it) and commit."""
    if (repo / "sglang").exists():
        shutil.rmtree(repo / "sglang")
    if parts is None:
        shutil.copytree(source / "sglang", repo / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    else:
        for part in parts:
            src = source / "sglang" / part
            if src.is_dir():
                shutil.copytree(src, repo / "sglang" / part, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                for file in sorted(src.parent.glob(src.name)):
                    (repo / "sglang" / part).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(file, repo / "sglang" / file.relative_to(source / "sglang"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    return path


def edit_line(path: Path, old: str, new: str) -> int:
    """Replace the one line holding ``old``; return its 1-based number."""
    lines = path.read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if old in line]
    assert len(hits) == 1, (old, hits)
    lines[hits[0]] = lines[hits[0]].replace(old, new)
    path.write_text("".join(lines))
    return hits[0] + 1


def options(cache: Path, protocols=()) -> Options:
    return Options(tuple(protocols), (), str(cache), True, 2)


def brief(findings) -> set[tuple]:
    return {(f["slug"], f["file"], f["line"], tuple(sorted(f.get("entries") or []))) for f in findings}


@pytest.fixture
def ok_repo(tmp_path):
    repo = new_repo(tmp_path / "repo")
    commit_tree(repo, EXAMPLES / "ok", "ok tree")
    return repo


# -- config -------------------------------------------------------------------------------

def test_config_from_pyproject_and_command_line_override(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tracer]\nprotocols = ["sglang-eagle3"]\nfail-on = "warning"\n'
        'exclude = ["sglang/srt/models/experimental_*.py"]\nbaseline = "ci/base.json"\nrules = ["x.toml"]\n'
        'colour = "red"\n')
    config = load_config(tmp_path)
    assert config.protocols == ("sglang-eagle3",)
    assert config.fail_on == "warning"
    assert config.baseline == str(tmp_path / "ci" / "base.json")
    assert config.rules == (str(tmp_path / "x.toml"),)
    assert any("colour" in note for note in config.notes)
    merged = merge(config, protocols=["sglang-dflash"], fail_on="error")
    assert merged.protocols == ("sglang-dflash",) and merged.fail_on == "error"
    assert merged.exclude == config.exclude  # not given on the command line: kept
    assert is_excluded("sglang/srt/models/experimental_x.py", merged.exclude)
    assert not is_excluded("sglang/srt/models/llama.py", merged.exclude)


def test_config_python_subfolder_and_errors(tmp_path):
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "pyproject.toml").write_text('[tool.tracer]\nfail-on = "info"\n')
    assert load_config(tmp_path).fail_on == "info"
    (tmp_path / "pyproject.toml").write_text('[tool.tracer]\nfail-on = "sometimes"\n')
    with pytest.raises(UsageError, match="fail-on"):
        load_config(tmp_path)
    assert load_config(tmp_path / "python").fail_on == "info"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no table: python/ is used
    assert load_config(tmp_path).fail_on == "info"


# -- suppressions and fingerprints ----------------------------------------------------------

def test_parse_suppression():
    assert parse_suppression("x = 1  # tracer: ignore[dead-write]") == (7, frozenset({"dead-write"}))
    assert parse_suppression("x = 1  # tracer: ignore") == (7, None)
    assert parse_suppression("x = 1  #tracer:ignore[a, b]")[1] == frozenset({"a", "b"})
    assert parse_suppression('s = "# tracer: ignore"') is None
    assert parse_suppression("x = 1  # noqa") is None


def test_apply_suppressions_and_unused(tmp_path):
    (tmp_path / "m.py").write_text(
        "def f(self):\n"
        "    self.a = 1  # tracer: ignore[dead-write]\n"
        "    self.b = 2  # tracer: ignore[ids-dropped]\n"
        "    self.c = 3  # tracer: ignore\n"
        "    self.d = 4\n")
    finding = {"slug": "dead-write", "severity": "error", "protocol": "p", "entry": "E", "entries": ["E"],
               "file": "m.py", "line": 2, "col": 4, "message": "m", "hint": "h", "chain": []}
    other = dict(finding, line=5)
    scan = {"root": str(tmp_path), "findings": [finding, other], "models": [{"entry": "E", "findings": ["dead-write"]}]}
    apply_to_json(scan, tmp_path, files=["m.py"])
    assert [f["line"] for f in scan["suppressed"]] == [2]
    unused = sorted((f["line"], f["message"]) for f in scan["findings"] if f["slug"] == "unused-suppression")
    assert [line for line, _ in unused] == [3, 4]
    assert all(f["severity"] == "info" for f in scan["findings"] if f["slug"] == "unused-suppression")
    assert scan["models"][0]["findings"] == ["dead-write"]  # line 5 still reports it


def test_fingerprint_survives_line_moves(tmp_path):
    body = "class A:\n    def setter(self, ids):\n        self.inner.setter()\n"
    (tmp_path / "a.py").write_text(body)
    (tmp_path / "b.py").write_text("import os\n\n# moved\n" + body)
    lines = SourceLines(tmp_path)
    assert enclosing_def(lines.lines("a.py"), 3) == "A.setter"
    one = fingerprint(lines, {"file": "a.py", "line": 3, "protocol": "p"})
    two = fingerprint(lines, {"file": "b.py", "line": 6, "protocol": "p"})
    assert one == two
    assert one != fingerprint(lines, {"file": "a.py", "line": 2, "protocol": "p"})


def test_fingerprint_survives_reformat_renamed_locals_and_comments(tmp_path):
    """The fingerprint hashes the statement's normalised tokens: layout, comments and local names go,
    attribute names, literals and operators stay; the anchor is the file and the enclosing def."""
    (tmp_path / "a.py").write_text(
        "class A:\n    def setter(self, ids=None):\n        if ids is None:\n            num_layers = 8\n"
        "            self.model.layers_to_capture = [\n                2,\n                num_layers // 2,\n"
        "            ]  # defaults\n")
    (tmp_path / "b.py").write_text(
        "class A:\n    def setter(self, ids=None):\n        if ids is None:\n            n = 8\n"
        "            # the usual defaults\n            self.model.layers_to_capture = [2, n // 2]\n")
    (tmp_path / "c.py").write_text(
        "class A:\n    def setter(self, ids=None):\n        if ids is None:\n            n = 8\n"
        "            self.model.layer_to_capture = [2, n // 2]\n")
    lines = SourceLines(tmp_path)
    a, b, c = ({"file": name, "line": line, "protocol": "p"} for name, line in (("a.py", 5), ("b.py", 6), ("c.py", 5)))
    assert fingerprint(lines, a) == fingerprint(lines, b)
    assert fingerprint(lines, c) != fingerprint(lines, b)  # another attribute: another statement
    assert fingerprint(lines, a) != fingerprint(lines, dict(a, protocol="q"))
    assert [anchor(lines, f) for f in (a, b, c)] == ["a.py::A.setter", "b.py::A.setter", "c.py::A.setter"]


def test_match_pairs_the_strictest_tier_first():
    """Exact twins pair first; an edited statement pairs with its old self by anchor (the most alike
    message among several); code moved to another def pairs by fingerprint; the rest is new or gone."""
    def ident(anchor_, fp, entry="E"):
        return Identity("dead-write", "p", entry, anchor_, fp)

    base = [(ident("f::A.s", "x1"), {"message": "self.a is written"}),
            (ident("f::A.s", "x2"), {"message": "self.b is written only when ids is None"}),
            (ident("f::A.t", "x3"), {"message": "moved"}),
            (ident("f::A.u", "x4"), {"message": "fixed"})]
    head = [(ident("f::A.s", "y2"), {"message": "self.b2 is written only when ids is None"}),
            (ident("f::A.s", "x1"), {"message": "self.a is written"}),
            (ident("g::B.t", "x3"), {"message": "moved"}),
            (ident("f::A.s", "x1", entry="F"), {"message": "self.a is written"})]
    pairs, gone, fresh = match(base, head, lambda b, h: SequenceMatcher(None, b["message"], h["message"]).ratio())
    assert [(b["message"], h["message"]) for b, h in pairs] == [
        ("self.a is written", "self.a is written"),
        ("self.b is written only when ids is None", "self.b2 is written only when ids is None"),
        ("moved", "moved")]
    assert [i.fingerprint for i, _ in gone] == ["x4"] and [i.entry for i, _ in fresh] == ["F"]


def test_did_you_mean_never_offers_another_protocols_setter():
    """#25 case 5: a misspelled or renamed method is suggested; a name that swaps one of the wanted
    name's words for an unlike one (DFlash's setter for EAGLE-3's) names another thing: no suggestion."""
    from tracer.analysis.flow_values import closest

    wanted = "set_eagle3_layers_to_capture"
    assert closest(wanted, ["set_dflash_layers_to_capture", "set_eagle3_layers", "forward"]) == "set_eagle3_layers"
    assert closest(wanted, ["set_dflash_layers_to_capture", "set_dspark_layers_to_capture", "forward"]) == ""
    assert closest(wanted, ["set_eagle3_layer_to_capture", "set_dflash_layers_to_capture"]) == \
        "set_eagle3_layer_to_capture"
    assert closest("layers_to_captur", ["layers_to_capture", "layer_ids"]) == "layers_to_capture"


# -- lint on a small tree -------------------------------------------------------------------

def test_lint_clean_tree_and_no_change(ok_repo, tmp_path):
    result = lint(ok_repo, None, LintConfig(), options(tmp_path / "cache"))
    assert result["findings"] == [] and result["fixed"] == []
    assert result["touched_in_package"] == []


def test_lint_dropped_ids_in_working_tree(ok_repo, tmp_path):
    line = edit_line(ok_repo / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
                     "self.language_model.set_eagle3_layers_to_capture()")
    cache = tmp_path / "cache"
    result = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))
    errors = [f for f in result["findings"] if f["severity"] == "error"]
    # the finding, and the verdict change it causes (Kimi-K2.5: ok -> broken), both at the edited line
    assert [(f["slug"], f["file"], f["line"]) for f in errors] == [("ids-dropped", KIMI, line),
                                                                     ("support-regression", KIMI, line)]
    assert [f["entries"] for f in errors] == [[KIMI_ENTRY], [KIMI_ENTRY]]
    assert result["affected"]["sglang-eagle3"] == [KIMI_ENTRY]  # only the chain through the touched file
    assert result["stats"]["mode"] == "re-trace"
    full = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]), full=True)
    assert brief(full["findings"]) == brief(result["findings"]) and brief(full["fixed"]) == brief(result["fixed"])

    runner = CliRunner()
    out = runner.invoke(main, ["lint", "-C", str(ok_repo), "--protocol", "sglang-eagle3", "--cache-dir", str(cache)])
    assert out.exit_code == 1, out.output
    assert f"{KIMI}:{line}:9: ids-dropped [error]" in out.output
    assert "tracer lint: new findings: 2 error" in out.output
    again = runner.invoke(main, ["lint", "-C", str(ok_repo), "--protocol", "sglang-eagle3", "--cache-dir", str(cache)])
    assert again.exit_code == 1 and "(cached result)" in again.output
    never = runner.invoke(main, ["lint", "-C", str(ok_repo), "--protocol", "sglang-eagle3", "--cache-dir", str(cache),
                                 "--fail-on", "never", "--format", "github"])
    assert never.exit_code == 0
    assert f"::error file={KIMI},line={line},col=9,title=tracer ids-dropped::" in never.output


def test_lint_base_class_change_reaches_the_wrappers(ok_repo, tmp_path):
    """Renaming the setter in deepseek_v2 (the class Kimi-K2.5 delegates to) breaks Kimi's delegation:
    the finding lands in kimi_k25.py, a file the change did not touch."""
    edit_line(ok_repo / "sglang/srt/models/deepseek_v2.py", "def set_eagle3_layers_to_capture(",
              "def set_eagle3_layers(")
    delegation = next(i for i, text in enumerate((ok_repo / KIMI).read_text().splitlines(), 1)
                      if "self.language_model.set_eagle3_layers_to_capture(layer_ids)" in text)
    result = lint(ok_repo, None, LintConfig(), options(tmp_path / "cache", ["sglang-eagle3"]))
    assert KIMI_ENTRY in result["affected"]["sglang-eagle3"]
    kimi = [(f["slug"], f["file"], f["line"]) for f in result["findings"] if KIMI_ENTRY in f["entries"]]
    renamed = next(i for i, text in enumerate((ok_repo / "sglang/srt/models/deepseek_v2.py").read_text().splitlines(), 1)
                   if "def set_eagle3_layers(" in text)
    assert kimi == [("support-regression", "sglang/srt/models/deepseek_v2.py", renamed),
                    ("broken-delegation", KIMI, delegation)]
    full = lint(ok_repo, None, LintConfig(), options(tmp_path / "cache", ["sglang-eagle3"]), full=True)
    assert brief(full["findings"]) == brief(result["findings"])
    assert brief(full["fixed"]) == brief(result["fixed"])


def test_lint_base_ref_commits_and_suppression(ok_repo, tmp_path):
    git(ok_repo, "checkout", "-q", "-b", "feature")
    line = edit_line(ok_repo / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
                     "self.language_model.set_eagle3_layers_to_capture()")
    git(ok_repo, "commit", "-q", "-am", "drop ids")
    cache = tmp_path / "cache"
    against_head = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))
    assert against_head["findings"] == []  # committed: the working tree matches HEAD
    branch = lint(ok_repo, "HEAD~1", LintConfig(), options(cache, ["sglang-eagle3"]))
    assert [(f["slug"], f["line"]) for f in branch["findings"]] == [("ids-dropped", line), ("support-regression", line)]
    # The other direction: the fix shows up as fixed.
    git(ok_repo, "checkout", "-q", "HEAD~1", "--", KIMI)
    fixed = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))
    assert [(f["slug"], f["severity"], f["line"]) for f in fixed["findings"]] == [("support-gained", "info", line)]
    assert [(f["slug"], f["line"]) for f in fixed["fixed"]] == [("ids-dropped", line)]
    git(ok_repo, "checkout", "-q", "HEAD", "--", KIMI)
    # An inline suppression on the offending line silences it against HEAD (the developer's own tree,
    # the verdict change with it); under --base the change's own suppression of its own new finding is
    # a new-suppression error, and the verdict change stays.
    edit_line(ok_repo / KIMI, "set_eagle3_layers_to_capture()", "set_eagle3_layers_to_capture()  # tracer: ignore[ids-dropped]")
    git(ok_repo, "stash", "-q")
    git(ok_repo, "reset", "-q", "--soft", "HEAD~1")
    git(ok_repo, "stash", "pop", "-q")
    local = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))
    assert local["findings"] == []
    assert sorted(f["slug"] for f in local["suppressed"]) == ["ids-dropped", "support-regression"]
    git(ok_repo, "commit", "-q", "-am", "drop ids, suppressed")
    quiet = lint(ok_repo, "HEAD~1", LintConfig(), options(cache, ["sglang-eagle3"]))
    assert [(f["slug"], f["line"], f["severity"]) for f in quiet["findings"]] == [
        ("support-regression", line, "error"), ("new-suppression", line, "error")]
    assert [f["slug"] for f in quiet["suppressed"]] == ["ids-dropped"]
    assert "hides a new ids-dropped finding" in quiet["findings"][1]["message"]
    edit_line(ok_repo / KIMI, "# tracer: ignore[ids-dropped]", "# tracer: ignore[dead-write]")
    stale = lint(ok_repo, "HEAD~1", LintConfig(fail_on="info"), options(cache, ["sglang-eagle3"]))
    assert sorted(f["slug"] for f in stale["findings"]) == ["ids-dropped", "support-regression", "unused-suppression"]


def test_lint_regression_names_the_reader_hop_that_changed(ok_repo, tmp_path):
    """A change to the decoder's forward (it stops reading the state) breaks every model whose chain
    reads there: each one's support-regression points at the changed line in Qwen2Model.forward and
    names that read hop; the dead write itself is reported where the setter stores the ids."""
    qwen2 = "sglang/srt/models/qwen2.py"
    line = edit_line(ok_repo / qwen2, "if i in self.layers_to_capture:", "if i in self.layer_ids_seen:")
    result = lint(ok_repo, None, LintConfig(), options(tmp_path / "cache", ["sglang-eagle3"]))
    lost = [f for f in result["findings"] if f["slug"] == "support-regression"]
    assert lost and {(f["file"], f["line"]) for f in lost} == {(qwen2, line)}
    assert all("the change edits the read hop Qwen2Model.forward" in f["message"] for f in lost)
    assert "sglang.srt.models.qwen2.Qwen2ForCausalLM" in {f["entry"] for f in lost}
    dead = [f for f in result["findings"] if f["slug"] == "dead-write"]
    assert dead and all(f["file"] == qwen2 and f["line"] != line for f in dead)


def test_baseline_accepts_findings_across_line_moves(ok_repo, tmp_path):
    cache = tmp_path / "cache"
    edit_line(ok_repo / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
              "self.language_model.set_eagle3_layers_to_capture()")
    git(ok_repo, "commit", "-q", "-am", "known problem")
    config = LintConfig()
    path, count = write_baseline(ok_repo, None, config, options(cache, ["sglang-eagle3"]))
    assert path == ok_repo / ".tracer-baseline.json" and count >= 1
    doc = json.loads(path.read_text())
    assert {"slug", "protocol", "entry", "fingerprint"} <= set(doc["findings"][0])
    # An unrelated edit moves the line: still the accepted finding.
    text = (ok_repo / KIMI).read_text()
    (ok_repo / KIMI).write_text("# a new header comment\n\n" + text)
    result = lint(ok_repo, "HEAD~1", config, options(cache, ["sglang-eagle3"]))
    # the verdict change it causes (ok -> broken) is accepted with it
    assert result["findings"] == [] and [f["slug"] for f in result["baselined"]] == ["ids-dropped", "support-regression"]
    loud = lint(ok_repo, "HEAD~1", config, options(cache, ["sglang-eagle3"]), use_baseline=False)
    assert [f["slug"] for f in loud["findings"]] == ["ids-dropped", "support-regression"]
    out = CliRunner().invoke(main, ["baseline", "-C", str(ok_repo), "--protocol", "sglang-eagle3",
                                    "--cache-dir", str(cache), "-o", str(tmp_path / "b.json")])
    assert out.exit_code == 0 and "accepted findings" in out.output


def _record_summary(record: dict):
    from collections import Counter

    from tracer.lint.fingerprint import keys

    findings = Counter(k for f in record["scan"]["findings"] for k in keys(f))
    models = sorted((m["protocol"], m["entry"], m["verdict"], tuple(h["qualname"] for h in m["chain"]))
                    for m in record["scan"]["models"])
    sites = sorted((c["protocol"], c["file"], c["line"]) for c in record["scan"]["call_sites"])
    return findings, models, sites


def derived_matches_fresh(repo: Path, cache: Path, protocols=()) -> dict:
    """After a commit, the next lint derives the new base record from the parent's; it must equal
    a fresh scan of that commit."""
    from tracer.lint.base import base_record
    from tracer.lint.records import package_prefix

    opts = options(cache, protocols)
    head = git(repo, "rev-parse", "HEAD").strip()
    derived = base_record(repo, head, package_prefix(repo, opts), opts)
    fresh = base_record(repo, head, package_prefix(repo, opts), options(cache.parent / "fresh-cache", protocols))
    assert derived.get("derived_from") and "derived_from" not in fresh
    assert _record_summary(derived) == _record_summary(fresh)
    return derived


def test_base_record_after_a_commit_is_derived_from_the_parent(ok_repo, tmp_path):
    cache = tmp_path / "cache"
    lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))  # nothing changed yet: no record
    edit_line(ok_repo / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
              "self.language_model.set_eagle3_layers_to_capture()")
    first = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))  # base record of C0
    assert [f["slug"] for f in first["findings"]] == ["ids-dropped", "support-regression"]
    git(ok_repo, "commit", "-q", "-am", "C1: drop the ids")
    (ok_repo / "sglang/srt/models/qwen2_5_vl.py").unlink()  # the working tree moves on
    edit_line(ok_repo / "sglang/srt/models/deepseek_v2.py", "def set_eagle3_layers_to_capture(",
              "def set_eagle3_layers(")
    derived = derived_matches_fresh(ok_repo, cache, ["sglang-eagle3"])
    assert derived["derived_from"] == git(ok_repo, "rev-parse", "HEAD~1").strip()
    result = lint(ok_repo, None, LintConfig(fail_on="info"), options(cache, ["sglang-eagle3"]))
    assert ("broken-delegation", KIMI) in {(f["slug"], f["file"]) for f in result["findings"]}


def test_lint_config_exclude_and_fail_on(ok_repo, tmp_path):
    edit_line(ok_repo / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
              "self.language_model.set_eagle3_layers_to_capture()")
    (ok_repo / "pyproject.toml").write_text('[tool.tracer]\nprotocols = ["sglang-eagle3"]\n'
                                            'exclude = ["sglang/srt/models/kimi_*.py"]\n')
    runner = CliRunner()
    args = ["lint", "-C", str(ok_repo), "--cache-dir", str(tmp_path / "cache")]
    out = runner.invoke(main, args)
    assert out.exit_code == 0, out.output
    (ok_repo / "pyproject.toml").write_text('[tool.tracer]\nprotocols = ["sglang-eagle3"]\nfail-on = "never"\n')
    out = runner.invoke(main, args)
    assert out.exit_code == 0 and "ids-dropped" in out.output
    out = runner.invoke(main, args + ["--fail-on", "error"])  # the command line wins
    assert out.exit_code == 1


def test_lint_checkout_layout_and_deleted_model(tmp_path):
    """A checkout keeps the package in python/sglang; deleting a model file removes its entry classes."""
    repo = new_repo(tmp_path / "checkout")
    shutil.copytree(EXAMPLES / "ok" / "sglang", repo / "python" / "sglang")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "checkout")
    (repo / "python/sglang/srt/models/qwen2_5_vl.py").unlink()
    result = lint(repo, None, LintConfig(fail_on="info"), options(tmp_path / "cache", ["sglang-eagle3"]))
    assert result["touched_in_package"] == ["python/sglang/srt/models/qwen2_5_vl.py"]
    assert result["findings"] == []
    assert [(f["slug"], f["file"]) for f in result["fixed"]] == [
        ("missing-setter", "python/sglang/srt/models/qwen2_5_vl.py")]
    edit_line(repo / "python" / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
              "self.language_model.set_eagle3_layers_to_capture()")
    result = lint(repo, None, LintConfig(), options(tmp_path / "cache", ["sglang-eagle3"]))
    assert [(f["slug"], f["file"]) for f in result["findings"]] == [("ids-dropped", "python/" + KIMI),
                                                                     ("support-regression", "python/" + KIMI)]


def test_scan_honours_inline_suppressions(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "ids-dropped", tree)
    before = json.loads(CliRunner().invoke(main, ["scan", str(tree), "--format", "json", "--no-cache",
                                                  "--protocol", "sglang-eagle3"]).stdout)
    target = next(f for f in before["findings"] if f["slug"] == "ids-dropped")
    path = tree / target["file"]
    lines = path.read_text().splitlines(keepends=True)
    lines[target["line"] - 1] = lines[target["line"] - 1].rstrip("\n") + "  # tracer: ignore[ids-dropped]\n"
    path.write_text("".join(lines))
    after = json.loads(CliRunner().invoke(main, ["scan", str(tree), "--format", "json", "--no-cache",
                                                 "--protocol", "sglang-eagle3"]).stdout)
    here = [(f["slug"], f["line"]) for f in after["findings"] if f["file"] == target["file"]]
    assert ("ids-dropped", target["line"]) not in here
    assert [(f["slug"], f["line"]) for f in after["suppressed"]] == [("ids-dropped", target["line"])]


def test_lint_outside_git_is_a_usage_error(tmp_path):
    shutil.copytree(EXAMPLES / "ok", tmp_path / "plain")
    out = CliRunner().invoke(main, ["lint", "-C", str(tmp_path / "plain")])
    assert out.exit_code == 2 and "not inside a git checkout" in out.output


# -- SARIF --------------------------------------------------------------------------------

def _validate_sarif(text: str) -> dict:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SARIF_SCHEMA.read_text())
    document = json.loads(text)
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return document


@pytest.mark.parametrize("tree", ["ids-dropped", "broken-delegation", "input-error", "ok"])
def test_scan_sarif_validates_against_the_schema(tree, tmp_path):
    out = CliRunner().invoke(main, ["scan", str(EXAMPLES / tree), "--format", "sarif", "--cache-dir", str(tmp_path),
                                    "--fail-on", "never"])
    assert out.exit_code == 0, out.output
    document = _validate_sarif(out.stdout)
    run = document["runs"][0]
    assert run["tool"]["driver"]["rules"], "rule metadata"
    if tree != "ok":
        assert run["results"] and all(r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
                                      for r in run["results"])


def test_lint_sarif_validates(ok_repo, tmp_path):
    edit_line(ok_repo / KIMI, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
              "self.language_model.set_eagle3_layers_to_capture()  # tracer: ignore[dead-write]")
    out = CliRunner().invoke(main, ["lint", "-C", str(ok_repo), "--protocol", "sglang-eagle3", "--format", "sarif",
                                    "--fail-on", "info", "--cache-dir", str(tmp_path / "cache")])
    assert out.exit_code == 1
    document = _validate_sarif(out.stdout)
    assert {r["ruleId"] for r in document["runs"][0]["results"]} == {"ids-dropped", "unused-suppression",
                                                                      "support-regression"}


def test_pre_commit_hook_definition():
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "tracer")
    assert hook["entry"] == "tracer lint" and hook["language"] == "python" and hook["pass_filenames"] is False


# -- real releases ------------------------------------------------------------------------

# Enough of a release for its chains and runner call sites: the model and runner
# packages, the scheduler side (managers) and the top-level modules.
PARTS = ["__init__.py", "version.py", "srt/__init__.py", "srt/models", "srt/model_executor", "srt/managers"]
RUNNER_0_5_6 = {
    ("ids-dropped", "sglang/srt/model_executor/cuda_graph_runner.py", 339),
    ("call-order", "sglang/srt/model_executor/model_runner.py", 552),
    ("ids-dropped", "sglang/srt/model_executor/model_runner.py", 2199),
}


@pytest.fixture(scope="module")
def lint_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("lint-cache")


@pytest.fixture(scope="module")
def release_pair(sglang_release, tmp_path_factory, lint_cache):
    """lint --base HEAD~1 results both ways between 0.5.6 and 0.5.16."""
    old, new = sglang_release("0.5.6"), sglang_release("0.5.16")
    results = {}
    for name, first, second in (("up", old, new), ("down", new, old)):
        repo = new_repo(tmp_path_factory.mktemp(name))
        commit_tree(repo, first, "first", PARTS)
        commit_tree(repo, second, "second", PARTS)
        results[name] = lint(repo, "HEAD~1", LintConfig(), options(lint_cache))
        results[name + "-repo"] = repo
    return results


@pytest.mark.real
def test_real_upgrade_fixes_the_0_5_6_runner(release_pair):
    """0.5.6's CudaGraphRunner calls the setter without ids before capture (cuda_graph_runner.py:339),
    _dummy_run does the same (model_runner.py:2199) and initialize() sets the configured ids only after
    init_device_graphs() (model_runner.py:552); 0.5.16 sets them with ids in
    configure_aux_hidden_state_capture before any capture. Upgrading fixes all three."""
    up = release_pair["up"]
    assert up["stats"]["mode"] == "full (sglang-dflash appears in the change)"  # 0.5.6 has no DFlash
    assert release_pair["down"]["stats"]["mode"] == "re-trace"
    fixed = {(f["slug"], f["file"], f["line"]) for f in up["fixed"]}
    assert RUNNER_0_5_6 <= fixed
    # the one runner finding left is the bare `except:` around the draft's ids, which moved from
    # ModelRunner.initialize (model_runner.py:548) to spec_aux_hidden_state.py:92 (silent-fallback, #15)
    left = {(f["slug"], f["file"], f["line"]) for f in up["findings"] if f["file"].startswith("sglang/srt/model_executor/")}
    assert left <= {("silent-fallback", "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py", 92)}


@pytest.mark.real
def test_real_downgrade_introduces_them(release_pair):
    down = release_pair["down"]
    new = {(f["slug"], f["file"], f["line"]) for f in down["findings"]}
    assert RUNNER_0_5_6 <= new
    assert all(f["entries"] == [] for f in down["findings"] if f["file"].startswith("sglang/srt/model_executor/"))


QWEN3_VL_DFLASH = ("broken-delegation", "sglang/srt/models/qwen3_vl.py", 1447,
                   ("sglang.srt.models.qwen3_vl.Qwen3VLForConditionalGeneration",))


@pytest.mark.real
def test_real_upgrade_introduces_the_qwen3_vl_dflash_delegation(release_pair):
    """0.5.16's Qwen3VLForConditionalGeneration.set_dflash_layers_to_capture calls
    self.model.set_dflash_layers_to_capture (qwen3_vl.py:1447), but self.model is a Qwen3LLMModel
    (language_model_cls default, 1230/1263) -> Qwen3Model -> Qwen2Model: none defines it (only the
    ForCausalLM classes do, qwen3.py:703). New in the upgrade; gone with DFlash in the downgrade."""
    assert QWEN3_VL_DFLASH in brief(release_pair["up"]["findings"])
    assert QWEN3_VL_DFLASH in brief(release_pair["down"]["fixed"])


@pytest.mark.real
def test_real_pair_is_symmetric(release_pair):
    """What the upgrade introduces for the protocol both releases have, the downgrade fixes, and back."""
    def eagle3(findings):
        return {(f["slug"], f["file"], f["line"]) for f in findings if f["protocol"] in ("sglang-eagle3", "")
                and not f["slug"].startswith("support-")}

    def changed(findings, slug):
        return {(f["protocol"], f["entry"]) for f in findings if f["slug"] == slug}
    up, down = release_pair["up"], release_pair["down"]
    # a verdict one way loses is a verdict the other way gains (the upgrade also adds entry classes)
    assert changed(down["findings"], "support-regression") <= changed(up["findings"], "support-gained")
    assert changed(up["findings"], "support-regression") <= changed(down["findings"], "support-gained")
    assert changed(down["findings"], "support-regression")
    # gone = fixed, or no longer reached (the head's chain of that entry now breaks before it)
    assert eagle3(up["fixed"] + up["unreached"]) == eagle3(down["findings"])
    assert eagle3(down["fixed"] + down["unreached"]) == eagle3(up["findings"])
    for result in (up, down):
        verdicts = {(m["protocol"], m["entry"]): m["verdict"] for m in result["models"]}
        for f in result["unreached"]:
            assert all(verdicts[(f["protocol"], e)] in ("broken", "unknown", "missing") for e in f["entries"]), (f["slug"], [verdicts[(f["protocol"], e)] for e in f["entries"]])
    # 0.5.16 adds DFlash: every DFlash finding is new in the upgrade and fixed in the downgrade.
    assert any(f["protocol"] == "sglang-dflash" for f in up["findings"])
    # ... and in the downgrade DFlash is gone: its findings are not new, every model it worked for lost it
    assert {f["slug"] for f in down["findings"] if f["protocol"] == "sglang-dflash"} == {"support-regression"}
    assert changed(down["findings"], "support-regression") >= {
        ("sglang-dflash", m["entry"]) for m in up["models"] if m["protocol"] == "sglang-dflash"
        and m["verdict"] == "ok" and not m["draft"] and m["entry"] in {n["entry"] for n in down["models"]}} - {None}


@pytest.mark.real
def test_real_downgrade_re_trace_matches_a_full_scan(release_pair, lint_cache):
    """The downgrade is answered by the re-trace (the upgrade by a full scan, as DFlash enters);
    a full scan of the working tree must say the same."""
    repo = release_pair["down-repo"]
    full = lint(repo, "HEAD~1", LintConfig(), options(lint_cache), full=True)
    assert full["stats"]["mode"] == "full"
    assert brief(full["findings"]) == brief(release_pair["down"]["findings"])
    assert brief(full["fixed"]) == brief(release_pair["down"]["fixed"])


@pytest.fixture(scope="module")
def repo_0_5_23(sglang_release, tmp_path_factory):
    repo = new_repo(tmp_path_factory.mktemp("r23"))
    commit_tree(repo, sglang_release("0.5.23"), "0.5.23", PARTS)
    return repo


MLLAMA4 = "sglang/srt/models/mllama4.py"
MLLAMA4_ENTRY = "sglang.srt.models.mllama4.Llama4ForConditionalGeneration"


@pytest.mark.real
@pytest.mark.parametrize("file, entry, old, new, slug", [
    (KIMI, KIMI_ENTRY, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
     "self.language_model.set_eagle3_layers_to_capture()", "ids-dropped"),
    (KIMI, KIMI_ENTRY, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
     "self.vision_tower.set_eagle3_layers_to_capture(layer_ids)", "broken-delegation"),
    (MLLAMA4, MLLAMA4_ENTRY, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
     "self.vision_model.set_eagle3_layers_to_capture(layer_ids)", "broken-delegation"),
], ids=["kimi-ids-dropped", "kimi-vision-tower", "mllama4-vision-model"])
def test_real_broken_wrapper_commit_fails_the_lint(repo_0_5_23, lint_cache, file, entry, old, new, slug):
    """0.5.23: kimi_k25.py:939 delegates to self.language_model (a DeepseekV3ForCausalLM, which inherits
    DeepseekV2ForCausalLM's setter); mllama4.py:973 delegates, behind a hasattr guard, to
    self.language_model (a Llama4ForCausalLM). A commit that drops the ids, or delegates to
    self.vision_tower (MoonViT3dPretrainedModel) / self.vision_model (Llama4VisionModel), neither of
    which has the setter, must fail `lint --base HEAD~1` on that line, and only there."""
    line = edit_line(repo_0_5_23 / file, old, new)
    git(repo_0_5_23, "commit", "-q", "-am", f"{file}: {new}")
    try:
        out = CliRunner().invoke(main, ["lint", "-C", str(repo_0_5_23), "--base", "HEAD~1",
                                        "--cache-dir", str(lint_cache), "--format", "json"])
        assert out.exit_code == 1, out.output
        result = json.loads(out.stdout)
        errors = [(f["slug"], f["file"], f["line"], f["entries"]) for f in result["findings"]
                  if f["severity"] == "error"]
        assert errors == [(slug, file, line, [entry]), ("support-regression", file, line, [entry])]
        assert set(result["affected"]["sglang-eagle3"]) == {entry}
        assert result["stats"]["mode"] == "re-trace"
        if slug == "broken-delegation" and file == KIMI:
            # deepseek_v2.py's silent fallback is not fixed: Kimi's chain no longer gets there
            assert [(f["slug"], f["file"], f["entries"]) for f in result["unreached"]] == [
                ("capture-skipped-on-branch", "sglang/srt/models/deepseek_v2.py", [entry]),
                ("silent-fallback", "sglang/srt/models/deepseek_v2.py", [entry])]
            assert not any(f["file"] == "sglang/srt/models/deepseek_v2.py" for f in result["fixed"])
            text = CliRunner().invoke(main, ["lint", "-C", str(repo_0_5_23), "--base", "HEAD~1",
                                             "--cache-dir", str(lint_cache)]).output
            assert ("no longer reached (their chains now stop before them; not fixed): capture-skipped-on-branch "
                    "sglang/srt/models/deepseek_v2.py:3202 (KimiK25ForConditionalGeneration); silent-fallback "
                    "sglang/srt/models/deepseek_v2.py:3465 (KimiK25ForConditionalGeneration)") in text
            assert "; fixed: 0; unchanged:" in text and "2 no longer reached" in text
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")


@pytest.mark.real
def test_real_next_commit_derives_its_base(repo_0_5_23, lint_cache):
    """After a commit to a real model file, the next lint's base (the new HEAD) is derived from the
    parent's record by re-tracing the commit's chains, and equals a fresh scan of that commit."""
    path = repo_0_5_23 / KIMI
    edit_line(path, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
              "self.language_model.set_eagle3_layers_to_capture()")
    lint(repo_0_5_23, None, LintConfig(), options(lint_cache))  # the record of HEAD exists now
    git(repo_0_5_23, "commit", "-q", "-am", "drop the ids")
    try:
        edit_line(repo_0_5_23 / MLLAMA4, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
                  "self.vision_model.set_eagle3_layers_to_capture(layer_ids)")
        derived_matches_fresh(repo_0_5_23, lint_cache)
        result = lint(repo_0_5_23, None, LintConfig(), options(lint_cache))
        assert [(f["slug"], f["file"]) for f in result["findings"] if f["severity"] == "error"] == [
            ("broken-delegation", MLLAMA4), ("support-regression", MLLAMA4)]
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")


@pytest.mark.real
def test_real_scan_sarif_validates(sglang_release, tmp_path, lint_cache):
    out = CliRunner().invoke(main, ["scan", str(sglang_release("0.5.6")), "--format", "sarif",
                                    "--cache-dir", str(lint_cache), "--fail-on", "never"])
    assert out.exit_code == 0
    document = _validate_sarif(out.stdout)
    assert {r["ruleId"] for r in document["runs"][0]["results"]} >= {"ids-dropped", "call-order"}


def test_lint_follows_a_change_in_a_module_the_chain_only_resolved_a_name_through(ok_repo, tmp_path):
    """Kimi-K2.5 imports its text model through a re-export module: no hop of its chain and no
    class of its MRO is there, but the chain read it. Pointing the re-export at a class without
    the setter must re-trace Kimi's chain (the recorded reads), as a --full lint does."""
    (ok_repo / "sglang/srt/models/kimi_text.py").write_text(
        '"""Re-export of the text model (tracer test)."""\n\n'
        "from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM  # noqa: F401\n")
    edit_line(ok_repo / KIMI, "from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM",
              "from sglang.srt.models.kimi_text import DeepseekV3ForCausalLM")
    git(ok_repo, "add", "-A")
    git(ok_repo, "commit", "-q", "-m", "re-export")
    cache = tmp_path / "cache"
    clean = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))
    assert clean["findings"] == []
    (ok_repo / "sglang/srt/models/kimi_text.py").write_text(
        '"""Re-export of the text model (tracer test)."""\n\nfrom torch import nn\n\n\n'
        "class DeepseekV3ForCausalLM(nn.Module):\n    def forward(self, input_ids):\n        return input_ids\n")
    result = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]))
    assert KIMI_ENTRY in result["affected"]["sglang-eagle3"]
    full = lint(ok_repo, None, LintConfig(), options(cache, ["sglang-eagle3"]), full=True)
    assert [f for f in full["findings"] if KIMI_ENTRY in f["entries"]]  # the break is real
    assert brief(full["findings"]) == brief(result["findings"])


# -- the gate on 0.5.23 (#25) ----------------------------------------------------------------------------

GPT_OSS = "sglang/srt/models/gpt_oss.py"
QWEN2 = "sglang/srt/models/qwen2.py"
DEEPSEEK = "sglang/srt/models/deepseek_v2.py"
QWEN2_ENTRY = "sglang.srt.models.qwen2.Qwen2ForCausalLM"
# 0.5.23's entry classes whose EAGLE-3 chain runs through DeepseekV2ForCausalLM.set_eagle3_layers_to_capture
DEEPSEEK_FAMILY = {"sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM",
                   "sglang.srt.models.deepseek_v2.DeepseekV3ForCausalLM",
                   "sglang.srt.models.deepseek_v2.DeepseekV32ForCausalLM",
                   "sglang.srt.models.glm4_moe.GlmMoeDsaForCausalLM",
                   "sglang.srt.models.mistral_large_3.MistralLarge3ForCausalLM", KIMI_ENTRY}
QWEN2_FALLBACK = '''            self.model.layers_to_capture = [
                2,
                num_layers // 2,
                num_layers - 3,
            ]  # Specific layers for EAGLE3 support
'''


def gate(repo: Path, cache: Path, *args: str):
    """`tracer lint --base HEAD~1` as CI runs it: (exit code, output)."""
    out = CliRunner().invoke(main, ["lint", "-C", str(repo), "--base", "HEAD~1", "--cache-dir", str(cache), *args])
    return out.exit_code, out.stdout


def commit_edits(repo: Path, path: str, *edits: tuple[str, str]) -> None:
    text = (repo / path).read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (repo / path).write_text(text)
    git(repo, "commit", "-q", "-am", f"edit {path}")


def line_of(repo: Path, path: str, text: str) -> int:
    hits = [i for i, line in enumerate((repo / path).read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


@pytest.mark.real
def test_real_renamed_setter_is_a_support_regression(repo_0_5_23, lint_cache):
    """#25 case 1: renaming GptOssForCausalLM.set_eagle3_layers_to_capture used to exit 0 (one hidden
    info finding). The verdict change is an error at the renamed def (gpt_oss.py:1337), naming the hop,
    in the text, github and SARIF outputs."""
    commit_edits(repo_0_5_23, GPT_OSS, ("    def set_eagle3_layers_to_capture(self, layer_ids: Optional",
                                        "    def set_eagle3_layers_capture(self, layer_ids: Optional"))
    try:
        code, text = gate(repo_0_5_23, lint_cache)
        assert code == 1
        assert (f"{GPT_OSS}:1337:5: support-regression [error] GptOssForCausalLM loses sglang-eagle3 support "
                "(ok -> missing): the change edits the setter hop GptOssForCausalLM.set_eagle3_layers_to_capture "
                f"({GPT_OSS}:1337 at the base); now: no set_eagle3_layers_to_capture in the MRO of "
                "GptOssForCausalLM") in text
        code, github = gate(repo_0_5_23, lint_cache, "--format", "github")
        assert code == 1 and f"::error file={GPT_OSS},line=1337,col=5,title=tracer support-regression::" in github
        assert "no findings" not in github
        code, sarif = gate(repo_0_5_23, lint_cache, "--format", "sarif")
        results = _validate_sarif(sarif)["runs"][0]["results"]
        assert [(r["ruleId"], r["level"]) for r in results if r["level"] == "error"] == [("support-regression", "error")]
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")


@pytest.mark.real
def test_real_base_class_rename_names_every_entry_that_lost_support(repo_0_5_23, lint_cache):
    """#25 case 1 and 5: renaming DeepseekV2ForCausalLM's setter drops EAGLE-3 from five models (ok ->
    missing) and breaks Kimi-K2.5's delegation (ok -> broken): one support-regression per entry class,
    all at the renamed def; Kimi's broken delegation suggests the renamed method, not DFlash's setter."""
    line = line_of(repo_0_5_23, DEEPSEEK, "    def set_eagle3_layers_to_capture(")
    commit_edits(repo_0_5_23, DEEPSEEK, ("    def set_eagle3_layers_to_capture(", "    def set_eagle3_layers("))
    try:
        code, text = gate(repo_0_5_23, lint_cache, "--format", "json")
        assert code == 1
        result = json.loads(text)
        lost = [(f["file"], f["line"], f["entry"], f["message"].split(": the change")[0].rsplit("(", 1)[1])
                for f in result["findings"] if f["slug"] == "support-regression"]
        assert sorted(e for _, _, e, _ in lost) == sorted(DEEPSEEK_FAMILY)
        assert {(file, at) for file, at, _, _ in lost} == {(DEEPSEEK, line)}
        assert {e: change for _, _, e, change in lost}[KIMI_ENTRY] == "ok -> broken)"
        assert {change for _, _, e, change in lost if e != KIMI_ENTRY} == {"ok -> missing)"}
        broken = next(f for f in result["findings"] if f["slug"] == "broken-delegation")
        assert broken["file"] == KIMI and broken["message"].endswith("(did you mean set_eagle3_layers?)")
        assert not any(f["slug"] == "support-regression" for f in result["fixed"])
        code, text = gate(repo_0_5_23, lint_cache)  # the text names the first, then the others on one line
        assert f"{DEEPSEEK}:{line}:5: support-regression [error] DeepseekV2ForCausalLM loses sglang-eagle3" in text
        assert ("the same change costs 5 more entry classes their support: DeepseekV32ForCausalLM (ok -> missing), "
                "DeepseekV3ForCausalLM (ok -> missing), GlmMoeDsaForCausalLM (ok -> missing), "
                "KimiK25ForConditionalGeneration (ok -> broken), MistralLarge3ForCausalLM (ok -> missing)") in text
        assert text.count("support-regression [error]") == 1
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")


@pytest.mark.real
def test_real_misspelled_write_in_the_no_ids_branch(repo_0_5_23, lint_cache):
    """#25 case 2: a misspelled state write in Qwen2's no-ids branch is a dead-write on that branch
    (the verdict was `ok`, exit 0, and `fixed: 3`); the row says what a draft without ids gets, and
    the unchanged findings of the edited statement stay unchanged (nothing fixed)."""
    commit_edits(repo_0_5_23, QWEN2, (QWEN2_FALLBACK,
                                      "            self.model.layer_to_capture = [2, num_layers // 2, num_layers - 3]\n"))
    try:
        code, text = gate(repo_0_5_23, lint_cache, "--format", "json", "--fail-on", "info")
        assert code == 1
        result = json.loads(text)
        assert [(f["slug"], f["file"], f["line"], f["entries"]) for f in result["findings"]] == [
            ("dead-write", QWEN2, 788, [QWEN2_ENTRY]), ("support-regression", QWEN2, 788, [QWEN2_ENTRY])]
        assert "self.model.layer_to_capture is written only when layer_ids is None (the fallback path)" \
            in result["findings"][0]["message"]
        assert result["fixed"] == [] and result["unreached"] == []
        row = next(m for m in result["models"] if m["entry"] == QWEN2_ENTRY and m["protocol"] == "sglang-eagle3")
        assert row["verdict"] == "broken" and "a draft on that path gets nothing captured" in row["reason"]
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")


@pytest.mark.real
@pytest.mark.parametrize("edits", [
    # move: the setter goes above get_embed_and_head
    "move",
    # rename a local, reformat the fallback list onto one line, add comments
    [("num_layers", "n"), (QWEN2_FALLBACK, "            # the usual default layers\n"
                                           "            self.model.layers_to_capture = [2, n // 2, n - 3]\n")],
    # reformat the other way: the explicit branch spread over lines, a comment after it
    [("            self.model.layers_to_capture = [val + 1 for val in layer_ids]\n",
      "            self.model.layers_to_capture = [\n                val + 1\n                for val in layer_ids\n"
      "            ]  # shifted by one\n")],
], ids=["move", "rename-reformat-comment", "reformat-explicit"])
def test_real_findings_keep_their_identity_across_edits(repo_0_5_23, lint_cache, edits):
    """#25 case 3: edits that keep what the code means leave every finding of the re-traced chains
    unchanged: nothing new (info included), nothing fixed, nothing unreached."""
    path = repo_0_5_23 / QWEN2
    text = path.read_text()
    start = text.index("    def set_eagle3_layers_to_capture(")
    end = text.index("\n\nEntryClass")
    setter = text[start:end] + "\n\n"
    if edits == "move":
        anchor = "    def get_embed_and_head(self):"
        edits = [(setter, ""), (anchor, setter + anchor)]
    text_after = text
    for old, new in edits:
        text_after = text_after.replace(old, new) if old == "num_layers" else text_after.replace(old, new, 1)
    assert text_after != text
    path.write_text(text_after.rstrip("\n") + "\n")
    git(repo_0_5_23, "commit", "-q", "-am", "edit")
    try:
        code, out = gate(repo_0_5_23, lint_cache, "--format", "json", "--fail-on", "info")
        result = json.loads(out)
        assert (code, result["findings"], result["fixed"], result["unreached"]) == (0, [], [], [])
        assert result["unchanged"] >= 10 and QWEN2_ENTRY in result["affected"]["sglang-eagle3"]
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")


@pytest.mark.real
def test_real_the_change_cannot_suppress_its_own_new_error(repo_0_5_23, lint_cache):
    """#25 case 4: a `# tracer: ignore` the change adds to its own new error is a new-suppression
    error under --base (it was "1 suppressed inline", exit 0); a suppression the base had stands."""
    commit_edits(repo_0_5_23, KIMI, ("self.language_model.set_eagle3_layers_to_capture(layer_ids)",
                                     "self.language_model.set_eagle3_layers_to_capture()  # tracer: ignore[ids-dropped]"))
    line = line_of(repo_0_5_23, KIMI, "# tracer: ignore[ids-dropped]")
    try:
        col = (repo_0_5_23 / KIMI).read_text().splitlines()[line - 1].index("# tracer") + 1
        code, text = gate(repo_0_5_23, lint_cache)
        assert code == 1
        assert (f"{KIMI}:{line}:{col}: new-suppression [error] `# tracer: ignore[ids-dropped]` is added by this change "
                "and hides a new ids-dropped finding") in text
        assert "under --base, suppressions come from the base" in text
        assert "1 suppressed inline (1 of them added by the change itself: new-suppression)" in text
        code, text = gate(repo_0_5_23, lint_cache, "--ignore", "new-suppression", "--ignore", "support-regression")
        assert code == 0  # a team that trusts its authors' suppressions says so
        # Once merged, the suppression is the base's: the next change that leaves the line alone passes.
        (repo_0_5_23 / KIMI).write_text((repo_0_5_23 / KIMI).read_text() + "# a later change\n")
        git(repo_0_5_23, "commit", "-q", "-am", "later")
        code, text = gate(repo_0_5_23, lint_cache, "--format", "json")
        assert code == 0 and json.loads(text)["findings"] == []
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")
    finally:
        git(repo_0_5_23, "reset", "-q", "--hard", "HEAD~1")
