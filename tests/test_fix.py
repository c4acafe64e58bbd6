"""`--fix` / `--unsafe-fixes` / `--diff`: tests generated from the catalogue's fixes (each fix on its
check's must-fire examples: the fixed example is quiet and its chains ok; on the other examples
the fix declines), then the verified loop (rollback), the commands, SARIF and a real release."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_checks import _findings, _tree

from tracer.checks import CATALOGUE, FIXES, rule_text
from tracer.checks.trees import model, model_file
from tracer.cli import main
from tracer.fix.codemods import CODEMODS
from tracer.fix.verified import fix_findings, write_fixes
from tracer.lint.records import Options, scan_with_dependencies


def _fix_example(tmp_path: Path, slug: str, example, unsafe: bool = True):
    """(tree root, report) of the slug's findings in the example, fixed and verified."""
    root, _ = _tree(tmp_path / "fixing", example)
    options = Options((example.protocol,), (), None, False, 1)
    record = scan_with_dependencies(root, options)
    findings, hook = record["scan"]["findings"], None
    if example.target_config is not None:
        from tracer.effective.annotate import annotate_scan
        from tracer.fix.effective import Configs, effective_hook
        from tracer.present.scan_json import from_json, to_json

        target, draft = tmp_path / "target.json", tmp_path / "draft.json"
        target.write_text(json.dumps(example.target_config))
        draft.write_text(json.dumps(example.draft_config))
        packs = options.packs()
        findings = to_json(annotate_scan(from_json(record["scan"]), packs, target, draft, use_cache=False,
                                         pp=example.pp))["findings"]
        hook = effective_hook(Configs(str(target), str(draft), example.pp), packs, record["scan"]["protocols"])
    findings = [f for f in findings if f["slug"] == slug]
    return root, fix_findings(root, record, findings, options, unsafe=unsafe, effective=hook)


def _cases():
    for slug, fix in FIXES.items():
        for index, example in enumerate(CATALOGUE[slug].fires):
            yield pytest.param(slug, index, example, id=f"{slug}-fires-{index}")


def test_every_fix_names_a_codemod_a_variant_and_the_examples_it_repairs():
    for slug, fix in FIXES.items():
        rule = CATALOGUE[slug]
        assert rule.autofix is fix and fix.codemod in CODEMODS
        assert set(fix.variants) <= set(rule.messages), slug
        assert fix.repairs and all(0 <= i < len(rule.fires) for i in fix.repairs), slug
        assert fix.before != fix.after


@pytest.mark.parametrize("slug, index, example", list(_cases()))
def test_fix_on_each_must_fire_example(tmp_path, slug, index, example):
    root, report = _fix_example(tmp_path, slug, example)
    fix = FIXES[slug]
    statuses = [o.status for o in report.outcomes if o.slug == slug]
    if index not in fix.repairs:
        assert "fixed" not in statuses and not report.fixed  # the fix declines: nothing is written
        return
    assert statuses and set(statuses) == {"fixed"}, [(o.status, o.why) for o in report.outcomes]
    assert report.summary().startswith(f"fixed {len(statuses)} (verified by re-trace), 0 not fixable")
    before = {p: (root / p).read_text() for p in report.fixed}
    assert write_fixes(root, report) == sorted(report.fixed)
    changed = [p for p in report.fixed if (root / p).read_text() != before[p]]
    assert changed, "the fix wrote nothing"
    # the fixed example, scanned afresh (not re-traced): quiet, and every target chain ok
    fixed_example = type(example)(files=tuple((p, (root / p).read_text()) for p, _ in example.files),
                                  protocol=example.protocol, target_config=example.target_config,
                                  draft_config=example.draft_config, pp=example.pp)
    findings, _ = _findings(tmp_path / "rescan", fixed_example)
    assert [f["message"] for f in findings if f["slug"] == slug] == []
    from tracer.api import scan_tree
    from tracer.config.packs import load_protocols

    rescanned = scan_tree(root, load_protocols([example.protocol]), use_cache=False).result
    assert [m.verdict for m in rescanned.models if not m.draft and m.verdict != "missing"] == \
           ["ok"] * len([m for m in rescanned.models if not m.draft and m.verdict != "missing"])


def test_only_the_findings_lines_change(tmp_path):
    example = CATALOGUE["dead-write"].fires[1]
    root, report = _fix_example(tmp_path, "dead-write", example)
    (path, text), = report.fixed.items()
    old, new = report.originals[path].splitlines(), text.splitlines()
    assert len(old) == len(new)
    assert [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b] == [report.outcomes[0].line]
    assert "self.model.layers_to_capture = [val + 1" in new[report.outcomes[0].line - 1]


_WRAPPED_TWICE_BROKEN = '''
class FooVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = FooForCausalLM(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.language_model.set_eagle3_layer_to_capture(layer_ids)
'''


def test_a_finding_the_repaired_chain_exposes_is_not_new(tmp_path):
    """The delegation fix is right, but the method it now reaches writes a misspelled attribute: the
    wrapper's chain now reports the dead-write the inner class's chain already had. That finding was
    already reported, so the fix is kept (the dead-write has its own fix)."""
    from tracer.checks import example
    from tracer.checks.trees import SETTER

    broken_inner = SETTER.replace("self.model.layers_to_capture = [val + 1", "self.model.layers_to_captur = [val + 1")
    tree = example(model_file("foo", model(setter=broken_inner, extra=_WRAPPED_TWICE_BROKEN,
                                           entry="[FooForCausalLM, FooVLForConditionalGeneration]")))
    root, report = _fix_example(tmp_path, "broken-delegation", tree)
    assert [(o.status, o.why) for o in report.outcomes] == [("fixed", "")]


def _stubbed(tmp_path, change):
    """The dead-write example fixed with a re-trace whose answer after the fix ``change`` alters."""
    import tracer.lint.retrace as real

    example = CATALOGUE["dead-write"].fires[1]
    root, _ = _tree(tmp_path, example)
    options = Options((example.protocol,), (), None, False, 1)
    record = scan_with_dependencies(root, options)

    def retrace(root, record, touched, options, view=None, keep=None):
        head = real.retrace(root, record, touched, options, view=view, keep=keep)
        return change(head) if view else head

    findings = [f for f in record["scan"]["findings"] if f["slug"] == "dead-write"]
    return fix_findings(root, record, findings, options, retrace_with=retrace)


def test_a_fix_that_brings_a_new_finding_is_rolled_back(tmp_path):
    def new_finding(head):
        (entry,) = head["affected"]["sglang-eagle3"]
        extra = {"slug": "flag-not-set", "severity": "error", "protocol": "sglang-eagle3", "entry": entry,
                 "entries": [entry], "file": "sglang/srt/models/foo.py", "line": 30, "message": "made up", "hint": ""}
        return dict(head, findings=head["findings"] + [extra])

    report = _stubbed(tmp_path, new_finding)
    assert [(o.status, o.why) for o in report.outcomes] == [("rolled-back", "a new finding appears: flag-not-set (made up)")]
    assert report.fixed == {} and report.summary() == ("fixed 0 (verified by re-trace), 1 not fixable automatically "
                                                       "(1 rolled back: the re-trace did not confirm them)")


def test_a_fix_whose_finding_stays_is_rolled_back(tmp_path):
    def unchanged(head):
        return dict(head, findings=head["findings"] + [{**f, "message": f["message"]} for f in STAYS])

    STAYS: list = []
    example = CATALOGUE["dead-write"].fires[1]
    root, _ = _tree(tmp_path / "base", example)
    record = scan_with_dependencies(root, Options((example.protocol,), (), None, False, 1))
    STAYS.extend(f for f in record["scan"]["findings"] if f["slug"] == "dead-write")
    report = _stubbed(tmp_path / "stub", unchanged)
    assert [(o.status, o.why) for o in report.outcomes] == [("rolled-back", "its finding is still there")]


def test_unsafe_fixes_wait_for_the_flag(tmp_path):
    root, report = _fix_example(tmp_path, "call-order", CATALOGUE["call-order"].fires[0], unsafe=False)
    assert [o.status for o in report.outcomes] == ["unsafe"] and report.fixed == {}
    assert report.summary() == "fixed 0 (verified by re-trace), 0 not fixable automatically; 1 more with --unsafe-fixes"


def _dead_write_tree(tmp_path: Path) -> Path:
    root, _ = _tree(tmp_path, CATALOGUE["dead-write"].fires[1])
    return root


def test_scan_diff_prints_the_fix_and_writes_nothing(tmp_path):
    root = _dead_write_tree(tmp_path)
    model_path = root / "sglang/srt/models/foo.py"
    before = model_path.read_bytes()
    result = CliRunner().invoke(main, ["scan", str(root), "--no-cache", "--diff"])
    assert result.exit_code == 1, result.output
    assert "-            self.model.layers_to_captur = [val + 1" in result.output
    assert "+            self.model.layers_to_capture = [val + 1" in result.output
    assert "would fix 1 (verified by re-trace), 0 not fixable automatically" in result.output
    assert model_path.read_bytes() == before


def test_scan_fix_writes_keeping_the_mode_and_the_tree_scans_ok(tmp_path):
    root = _dead_write_tree(tmp_path)
    model_path = root / "sglang/srt/models/foo.py"
    os.chmod(model_path, 0o640)
    result = CliRunner().invoke(main, ["scan", str(root), "--no-cache", "--fix"])
    assert result.exit_code == 0, result.output
    assert "fixed 1 (verified by re-trace), 0 not fixable automatically" in result.output
    assert "No findings." in result.output and "1 target model (1 ok)" in result.output
    assert "self.model.layers_to_capture = [val + 1" in model_path.read_text()
    assert os.stat(model_path).st_mode & 0o777 == 0o640


def test_scan_fix_never_writes_through_a_link(tmp_path):
    root = _dead_write_tree(tmp_path / "a")
    model_path = root / "sglang/srt/models/foo.py"
    outside = tmp_path / "outside.py"
    shutil.move(model_path, outside)
    model_path.symlink_to(outside)
    before = outside.read_text()
    result = CliRunner().invoke(main, ["scan", str(root), "--no-cache", "--fix"])
    assert "fixed 0 (verified by re-trace), 1 not fixable automatically" in result.output, result.output
    assert outside.read_text() == before and model_path.is_symlink()


def test_sarif_carries_the_fix(tmp_path):
    root = _dead_write_tree(tmp_path)
    result = CliRunner().invoke(main, ["scan", str(root), "--no-cache", "--diff", "--format", "sarif"])
    sarif = json.loads(result.stdout)
    (found,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "dead-write"]
    (change,) = found["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "sglang/srt/models/foo.py"
    (replacement,) = change["replacements"]
    line = found["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert replacement["deletedRegion"]["startLine"] == line and replacement["deletedRegion"]["endLine"] == line + 1
    assert replacement["insertedContent"]["text"].strip().startswith("self.model.layers_to_capture = [val + 1")


def test_rules_show_the_fix_and_its_example():
    assert "## Fix (safe: --fix applies it)" in rule_text(CATALOGUE["dead-write"])
    assert "self.model.layers_to_capture = [val + 1" in rule_text(CATALOGUE["dead-write"]).split("After:")[1]
    assert "## Fix (unsafe: applied only with --unsafe-fixes)" in rule_text(CATALOGUE["call-order"])
    assert "## Fix\nNone:" in rule_text(CATALOGUE["unresolved"])
    listing = {line.split()[0]: line for line in CliRunner().invoke(main, ["rules"]).output.splitlines()}
    assert listing["dead-write"].endswith(" [fix]") and listing["call-order"].endswith(" [unsafe fix]")
    assert not listing["unresolved"].endswith("fix]")


def test_lint_fix_on_a_change(tmp_path):
    root, _ = _tree(tmp_path, CATALOGUE["dead-write"].quiet[0])
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    model_path = root / "sglang/srt/models/foo.py"
    model_path.write_text(model_path.read_text().replace("layers_to_capture = [val + 1", "layers_to_captur = [val + 1"))
    cache = str(tmp_path / "cache")
    shown = CliRunner().invoke(main, ["lint", "-C", str(root), "--cache-dir", cache, "--diff"])
    assert shown.exit_code == 1 and "+            self.model.layers_to_capture = [val + 1" in shown.output
    sarif = CliRunner().invoke(main, ["lint", "-C", str(root), "--cache-dir", cache, "--diff", "--format", "sarif"])
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    # the misspelled write, and the model losing support because of it (lint's support-regression)
    assert sorted(r["ruleId"] for r in results) == ["dead-write", "support-regression"]
    (found,) = [r for r in results if r["ruleId"] == "dead-write"]
    (replacement,) = found["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["insertedContent"]["text"].strip().startswith("self.model.layers_to_capture = [val + 1")
    fixed = CliRunner().invoke(main, ["lint", "-C", str(root), "--cache-dir", cache, "--fix"])
    assert fixed.exit_code == 0, fixed.output
    # one edit: the misspelled write and the regression it caused are both gone on the re-trace
    assert "fixed 2 (verified by re-trace)" in fixed.output and "new findings: none" in fixed.output
    assert subprocess.run(git + ["diff", "--quiet"]).returncode == 0  # back to the committed text


@pytest.fixture(scope="module")
def release_cache(tmp_path_factory):
    """One summary cache for this module's real-release tests (the second one runs warm)."""
    return str(tmp_path_factory.mktemp("fix-release-cache"))


def _planted(tree: Path, release: Path, plants: dict[str, tuple[str, str]]) -> dict[str, str]:
    """``release`` linked into ``tree`` with each model file's ``right`` text replaced by ``wrong``;
    the release's own texts."""
    shutil.copytree(release, tree, copy_function=os.link)  # links: the cached release's files
    texts = {}
    for name, (right, wrong) in plants.items():
        path = tree / "sglang/srt/models" / name
        texts[name] = path.read_text()
        assert texts[name].count(right) == 1
        path.unlink()  # its own file now: the release in the cache stays as it was (a fix renames a new file in)
        path.write_text(texts[name].replace(right, wrong))
    return texts


@pytest.mark.real
def test_planted_misspellings_in_a_real_release(tmp_path, sglang_release, release_cache):
    """A copy of SGLang 0.5.23 with `layers_to_captur` planted in Qwen2ForCausalLM's setter and
    `set_eagle3_layer_to_capture` in Kimi-K2.5's delegation: --diff shows the two one-line fixes, --fix
    writes them, and the fixed tree's files are the release's own and both chains ok again (Kimi-K2.5's
    repaired chain reaches DeepSeek-V2's capture-skipped-on-branch, already reported for DeepSeek: not new)."""
    tree = tmp_path / "rel"
    texts = _planted(tree, sglang_release("0.5.23"), {
        "qwen2.py": ("self.model.layers_to_capture = [val + 1", "self.model.layers_to_captur = [val + 1"),
        "kimi_k25.py": ("self.language_model.set_eagle3_layers_to_capture(layer_ids)",
                        "self.language_model.set_eagle3_layer_to_capture(layer_ids)")})
    cache = release_cache
    args = ["scan", str(tree), "--cache-dir", cache, "--protocol", "sglang-eagle3", "--select",
            "dead-write,broken-delegation"]
    shown = CliRunner().invoke(main, args + ["--diff"])
    assert shown.exit_code == 1, shown.output
    assert "-            self.model.layers_to_captur = [val + 1 for val in layer_ids]" in shown.output
    assert "+        self.language_model.set_eagle3_layers_to_capture(layer_ids)" in shown.output
    lines = shown.output.splitlines()
    assert len([x for x in lines if x.startswith("+") and not x.startswith("+++")]) == 2
    assert len([x for x in lines if x.startswith("-") and not x.startswith("---")]) == 2
    assert "would fix 2 (verified by re-trace), 0 not fixable automatically" in shown.output
    fixed = CliRunner().invoke(main, args + ["--fix", "--format", "json"])
    for name, text in texts.items():
        assert (tree / "sglang/srt/models" / name).read_text() == text  # exactly the release's own lines again
    scan = json.loads(fixed.stdout)
    verdicts = {m["entry"].rsplit(".", 1)[1]: m["verdict"] for m in scan["models"]
                if m["entry"].endswith(("qwen2.Qwen2ForCausalLM", "kimi_k25.KimiK25ForConditionalGeneration"))}
    assert verdicts == {"Qwen2ForCausalLM": "ok", "KimiK25ForConditionalGeneration": "ok"}
    assert [f for f in scan["findings"] if f["severity"] != "info"] == []


@pytest.mark.real
def test_planted_offset_in_a_real_release_with_configs(tmp_path, sglang_release, release_cache):
    """Qwen2's explicit ids stored without the +1 its loop needs (a Qwen2 target, a draft trained on
    [1, 13, 24]): only --unsafe-fixes stores val + 1, verified on the effective layers."""
    tree = tmp_path / "rel"
    texts = _planted(tree, sglang_release("0.5.23"), {"qwen2.py": (
        "self.model.layers_to_capture = [val + 1 for val in layer_ids]", "self.model.layers_to_capture = list(layer_ids)")})
    target, draft = tmp_path / "target.json", tmp_path / "draft.json"
    target.write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 28, "hidden_size": 64}))
    draft.write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64,
                                 "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 13, 24]}}))
    args = ["scan", str(tree), "--cache-dir", release_cache, "--protocol", "sglang-eagle3", "--select",
            "offset-mismatch", "--target-config", str(target), "--draft-config", str(draft)]
    safe = CliRunner().invoke(main, args + ["--diff"])
    assert safe.exit_code == 0 and "1 more with --unsafe-fixes" in safe.output, safe.output
    fixed = CliRunner().invoke(main, args + ["--unsafe-fixes", "--format", "json"])
    assert "fixed 1 (verified by re-trace), 0 not fixable automatically" in fixed.output
    assert (tree / "sglang/srt/models/qwen2.py").read_text() == texts["qwen2.py"]
    scan = json.loads(fixed.stdout)
    assert [f for f in scan["findings"] if f["slug"] == "offset-mismatch"] == []
    (qwen,) = [m for m in scan["models"] if m["entry"].endswith("qwen2.Qwen2ForCausalLM")]
    assert qwen["verdict"] == "ok" and qwen["effective_layers"] == [1, 13, 24]


def test_a_guessed_fallback_returned_gets_a_local_and_a_log_line(tmp_path):
    """The runner-side form (DFlash's guesser): ``return guess(...)`` becomes the layers in a local,
    the warning, ``return`` the local; verified on the dflash pack's re-trace."""
    from tracer.checks import example
    from tracer.checks.chain_checks import _RUNNER_GUESS

    guess = _RUNNER_GUESS.replace('"""DFlash layer choice (example)."""\n',
                                  '"""DFlash layer choice (example)."""\nimport logging\n\nlogger = logging.getLogger(__name__)\n')
    from tracer.checks.trees import SETTER

    dflash_model = model(setter=SETTER.replace("set_eagle3_", "set_dflash_"))
    tree = example(model_file("foo", dflash_model), ("sglang/srt/speculative/guess.py", guess), protocol="sglang-dflash")
    root, report = _fix_example(tmp_path, "silent-fallback", tree)
    assert [(o.status, o.why) for o in report.outcomes] == [("fixed", "")]
    text = report.fixed["sglang/srt/speculative/guess.py"]
    assert "            fallback_layers = build_target_layer_ids(target_num_layers, draft_num_layers)\n" \
           "            logger.warning(\"DraftConfig.resolve_target_layer_ids: self.target_layer_ids is None; using the " \
           "fallback layers %s\", fallback_layers)\n            return fallback_layers  # expect: silent-fallback\n" in text


def test_the_runner_except_gets_a_warning_first_in_its_handler(tmp_path):
    from tracer.checks import example
    from tracer.checks.chain_checks import _RUNNER_EXCEPT
    from tracer.checks.trees import runner

    path, text = runner(_RUNNER_EXCEPT)
    text = text.replace('"""ModelRunner (example)."""\n', '"""ModelRunner (example)."""\nimport logging\n\n'
                                                          'logger = logging.getLogger(__name__)\n')
    root, report = _fix_example(tmp_path, "silent-fallback", example(model_file("foo", model()), (path, text)))
    assert [(o.status, o.why) for o in report.outcomes] == [("fixed", "")]
    assert "        except Exception:  # expect: silent-fallback\n            logger.warning(\"ModelRunner.initialize: no " \
           "eagle_config.eagle_aux_hidden_state_layer_ids in the draft config; the setter falls back to %s\", " \
           "\"[2, num_layers // 2, num_layers - 3]\")\n            self.ids = None\n" in report.fixed[path]


def test_a_fallback_handed_on_is_logged_before_the_call():
    from tracer.fix.codemods import CODEMODS

    source = ("import logging\nlogger = logging.getLogger(__name__)\n\n\nclass A:\n    def set(self, ids=None):\n"
              "        if ids is None:\n            n = 8\n            self.model.set(\n                [\n"
              "                    2,\n                    n // 2,\n                ]\n            )  # keep\n")
    fields = {"value": "[2, n // 2]", "param": "ids", "owner_name": "A", "method": "set"}
    fixed = CODEMODS["log_fallback"](source, 9, fields)
    assert fixed == source.replace("            self.model.set(\n",
                                   "            logger.warning(\"A.set: ids is None; using the fallback layers %s\", "
                                   "[2, n // 2])\n            self.model.set(\n")
    assert CODEMODS["log_fallback"](source.replace("logger = logging.getLogger(__name__)\n", "")
                                    .replace("import logging\n", ""), 7, fields) is None  # no logger: declines
    assert CODEMODS["log_fallback"](source, 9, dict(fields, value="[2, f(n)]")) is None  # a call: not twice


def test_the_call_moves_no_higher_than_what_it_needs():
    from tracer.fix.codemods import CODEMODS

    source = ("class R:\n    def initialize(self):\n        self.prepare()\n        if self.skip:\n            return\n"
              "        ids = self.args.ids\n        self.load()\n        self.capture_graphs()\n        self.model.set(ids)\n")
    fixed = CODEMODS["move_before_capture"](source, 9, {})
    assert fixed == source.replace("        self.load()\n        self.capture_graphs()\n        self.model.set(ids)\n",
                                   "        self.model.set(ids)\n        self.load()\n        self.capture_graphs()\n")
    first = source.replace("        ids = self.args.ids\n        self.load()\n        self.capture_graphs()\n", "")
    assert CODEMODS["move_before_capture"](first, 6, {}) is None  # right after the early return: nowhere to go


def test_scan_unsafe_fixes_with_configs_verify_the_effective_layers(tmp_path):
    example = CATALOGUE["offset-mismatch"].fires[0]
    root, _ = _tree(tmp_path, example)
    target, draft = tmp_path / "target.json", tmp_path / "draft.json"
    target.write_text(json.dumps(example.target_config))
    draft.write_text(json.dumps(example.draft_config))
    args = ["scan", str(root), "--no-cache", "--target-config", str(target), "--draft-config", str(draft)]
    safe_only = CliRunner().invoke(main, args + ["--fix"])
    assert "fixed 0 (verified by re-trace), 0 not fixable automatically; 1 more with --unsafe-fixes" in safe_only.output
    fixed = CliRunner().invoke(main, args + ["--unsafe-fixes"])
    assert "fixed 1 (verified by re-trace), 0 not fixable automatically" in fixed.output, fixed.output
    assert fixed.exit_code == 0 and "offset-mismatch" not in fixed.output.split("fixed 1")[1]
    assert "self.model.layers_to_capture = [val + 1 for val in layer_ids]" in (root / "sglang/srt/models/foo.py").read_text()


def test_nothing_outside_the_scanned_tree_is_touched(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    root = tmp_path / "tree"
    root.mkdir()
    finding = {"slug": "dead-write", "file": "../outside.py", "line": 1, "entry": "m.C", "protocol": "p",
               "message": "self.model.x is written, but the decoder loop reads y: nothing is captured",
               "hint": "Write y (check the spelling)."}
    report = fix_findings(root, {}, [finding], Options((), (), None, False, 1))
    assert [o.status for o in report.outcomes] == ["not-fixable"] and report.fixed == {}
    assert outside.read_text() == "x = 1\n"


def test_the_window_keeps_every_other_byte():
    """A blank line with trailing spaces and a string literal further left than the def stay as they were."""
    from tracer.fix.codemods import CODEMODS

    source = ("class A:\n    def set(self, ids):\n        doc = '''\nflush left\n'''\n        \n"
              "        self.model.layers_to_captur = ids\n\n\nx = 1  \n")
    fields = {"target": "self.model.layers_to_captur", "attribute": "layers_to_capture"}
    fixed = CODEMODS["rename_write"](source, 7, fields)
    assert fixed == source.replace("layers_to_captur =", "layers_to_capture =")
    plain = source.replace("        doc = '''\nflush left\n'''\n", "")
    assert CODEMODS["rename_write"](plain, 4, fields) == plain.replace("layers_to_captur =", "layers_to_capture =")
