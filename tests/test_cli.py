"""The command line as a user meets it: exit codes, formats, errors in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def tracer(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracer", *args], capture_output=True, text=True, cwd=cwd)


def test_clean_tree_exits_zero_and_prints_chains_only_when_asked(tmp_path):
    result = tracer("scan", str(EXAMPLES / "ok"), "--cache-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    # a clean tree: no ok chain is printed, only the summary, counting target models
    assert "KimiK25ForConditionalGeneration" not in result.stdout
    lines = result.stdout.rstrip().splitlines()
    assert lines[0].startswith("Scanned sglang ") and "sglang-eagle3: 12 target models (12 ok)" in lines[1]
    assert lines[-1].startswith("No findings.")
    for flag in ("--show-chains", "-v"):
        verbose = tracer("scan", str(EXAMPLES / "ok"), "--cache-dir", str(tmp_path), flag).stdout
        assert "ok      sglang.srt.models.kimi_k25.KimiK25ForConditionalGeneration" in verbose
        assert "delegate   DeepseekV2ForCausalLM.set_eagle3_layers_to_capture" in verbose


def test_broken_tree_exits_one_with_path_line_col_slug(tmp_path):
    result = tracer("scan", str(EXAMPLES / "broken-delegation"), "--cache-dir", str(tmp_path))
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    path, line, col, rest = first.split(":", 3)
    assert path.endswith(".py") and line.isdigit() and col.isdigit()
    assert rest.strip().startswith("broken-delegation [error]")
    # then the models needing attention, with why, then the summary
    assert "  broken  " in result.stdout and "why: " in result.stdout
    assert "why: broken-delegation at sglang/srt/models/internvl.py:39 (above)" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("Found 3 errors.")


def test_fail_on_never_and_warning(tmp_path):
    assert tracer("scan", str(EXAMPLES / "broken-delegation"), "--cache-dir", str(tmp_path),
                  "--fail-on", "never").returncode == 0
    # silent-fallback is a warning: only --fail-on warning turns it into exit 1
    assert tracer("scan", str(EXAMPLES / "silent-fallback"), "--cache-dir", str(tmp_path)).returncode == 0
    assert tracer("scan", str(EXAMPLES / "silent-fallback"), "--cache-dir", str(tmp_path),
                  "--fail-on", "warning").returncode == 1


def test_not_a_framework_is_a_clear_usage_error(tmp_path):
    (tmp_path / "x.py").write_text("print(1)\n")
    result = tracer("scan", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.startswith("tracer: error:") and "no supported framework" in result.stderr
    assert "Traceback" not in result.stderr
    missing = tracer("scan", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr


def test_json_has_the_documented_fields(tmp_path):
    result = tracer("scan", str(EXAMPLES / "call-order"), "--format", "json", "--cache-dir", str(tmp_path))
    data = json.loads(result.stdout)
    assert set(data) >= {"tool", "root", "protocols", "models", "call_sites", "findings", "stats"}
    model = data["models"][0]
    assert set(model) >= {"entry", "protocol", "verdict", "chain", "state_owner", "state_attribute"}
    assert set(model["chain"][0]) >= {"qualname", "file", "line", "resolved_by"}
    site = data["call_sites"][0]
    assert set(site) >= {"caller", "file", "line", "passes_ids", "before_graph_capture"}
    finding = data["findings"][0]
    assert set(finding) >= {"slug", "severity", "entry", "file", "line", "message", "hint"}
    assert {f["slug"] for f in data["findings"]} == {"call-order", "ids-dropped"}


def test_json_columns_are_1_based_like_the_text_and_schema_1_documents_still_read(tmp_path):
    from tracer.present.scan_json import SCHEMA_VERSION, from_json, to_json

    tree = str(EXAMPLES / "call-order")
    data = json.loads(tracer("scan", tree, "--format", "json", "--cache-dir", str(tmp_path)).stdout)
    assert data["schema_version"] == SCHEMA_VERSION == 2
    text = tracer("scan", tree, "--cache-dir", str(tmp_path), "-q").stdout
    for f in data["findings"]:
        assert f"{f['file']}:{f['line']}:{f['col']}: {f['slug']} [" in text, (f, text)
        assert f["col"] >= 1
    sarif = json.loads(tracer("scan", tree, "--format", "sarif", "--cache-dir", str(tmp_path)).stdout)
    regions = sorted((r["locations"][0]["physicalLocation"]["region"]["startLine"],
                      r["locations"][0]["physicalLocation"]["region"]["startColumn"]) for r in sarif["runs"][0]["results"])
    assert regions == sorted((f["line"], f["col"]) for f in data["findings"])
    # read back: the same columns; a version-1 document (no schema_version, col 0-based) reads as it was meant
    typed = from_json(data)
    assert to_json(typed)["findings"] == data["findings"]
    old = dict(data, findings=[dict(f, col=f["col"] - 1) for f in data["findings"]])
    del old["schema_version"]
    assert [f.col for f in from_json(old).findings] == [f.col for f in typed.findings]


def test_github_and_sarif_formats(tmp_path):
    github = tracer("scan", str(EXAMPLES / "dead-write"), "--format", "github", "--cache-dir", str(tmp_path))
    assert github.stdout.startswith("::error file=sglang/srt/models/")
    assert "title=tracer dead-write" in github.stdout
    assert github.stdout.splitlines()[-1].startswith("::notice title=tracer summary::")
    sarif = json.loads(tracer("scan", str(EXAMPLES / "dead-write"), "--format", "sarif",
                              "--cache-dir", str(tmp_path)).stdout)
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"dead-write"}
    assert all(r["locations"][0]["physicalLocation"]["region"]["startLine"] > 0 for r in results)


def test_rules_documents_every_slug():
    listing = tracer("rules")
    assert listing.returncode == 0
    from tracer.checks import SLUGS

    assert len(SLUGS) == 25  # duplicate-registration (TensorRT-LLM pack), convention-mismatch (explain), lint's three
    for slug in SLUGS:  # every slug the catalogue has, the explain ones and unused-suppression too
        assert slug in listing.stdout
        page = tracer("rules", slug).stdout
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
            assert heading in page
    unknown = tracer("rules", "no-such-rule")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_graph_json_uses_qualified_names(tmp_path):
    data = json.loads(tracer("graph", str(EXAMPLES / "ok"), "--cache-dir", str(tmp_path)).stdout)
    assert "sglang.srt.models.qwen2.Qwen2ForCausalLM.set_eagle3_layers_to_capture" in data["nodes"]
    assert ["sglang.srt.models.qwen2.Qwen2ForCausalLM.set_eagle3_layers_to_capture",
            "sglang.srt.models.qwen2.Qwen2Model.layers_to_capture"] in data["edges"]


def test_graph_all_on_any_python_tree(tmp_path):
    tree = tmp_path / "proj"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "a.py").write_text("from pkg.b import helper\n\ndef main():\n    helper()\n    unknown_call()\n")
    (tree / "pkg" / "b.py").write_text("class K:\n    def m(self):\n        return self.n()\n    def n(self):\n"
                                       "        return 1\n\ndef helper():\n    K().m()\n")
    result = tracer("graph", str(tree), "--all", "--no-cache")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert ["pkg.a.main", "pkg.b.helper"] in data["edges"]
    assert ["pkg.b.K.m", "pkg.b.K.n"] in data["edges"]
    assert ["pkg.b.helper", "pkg.b.K.__init__"] not in data["edges"]  # K has no __init__: not invented
    assert data["stats"]["calls_unbound"] >= 1


def test_scan_of_the_srt_folder_itself(tmp_path):
    srt = EXAMPLES / "ok" / "sglang" / "srt"
    data = json.loads(tracer("scan", str(srt), "--format", "json", "--cache-dir", str(tmp_path)).stdout)
    assert any(m["entry"].endswith("Qwen2ForCausalLM") and m["verdict"] == "ok" for m in data["models"])
    assert all(not m["file"].startswith("sglang/") for m in data["models"])  # relative to the given root


def test_unchanged_tree_is_answered_from_the_result_cache_and_an_edit_is_seen(tmp_path):
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "ok", tree)
    cache = tmp_path / "cache"
    first = json.loads(tracer("scan", str(tree), "--format", "json", "--cache-dir", str(cache)).stdout)
    second = json.loads(tracer("scan", str(tree), "--format", "json", "--cache-dir", str(cache)).stdout)
    assert not first["stats"].get("result_cache") and second["stats"].get("result_cache")
    assert second["models"] == first["models"] and second["findings"] == first["findings"]
    # An edit (even one that keeps the size) must be seen: the wrapper now skips the ids.
    kimi = tree / "sglang" / "srt" / "models" / "kimi_k25.py"
    text = kimi.read_text()
    assert "self.language_model.set_eagle3_layers_to_capture(layer_ids)" in text
    kimi.write_text(text.replace("self.language_model.set_eagle3_layers_to_capture(layer_ids)",
                                 "self.language_model.set_eagle3_layers_to_capture(         )"))
    third = tracer("scan", str(tree), "--format", "json", "--cache-dir", str(cache))
    data = json.loads(third.stdout)
    assert not data["stats"].get("result_cache")
    assert third.returncode == 1
    assert any(f["slug"] == "ids-dropped" and f["file"].endswith("kimi_k25.py") for f in data["findings"])


def _schema_validator():
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parent.parent / "docs" / "scan-json.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_lists_every_slug_of_the_catalogue():
    from tracer.checks import SLUGS

    schema = _schema_validator().schema
    enums = [node["enum"] for node in _walk(schema) if isinstance(node, dict) and "dead-write" in node.get("enum", ())]
    assert enums and all(enum == list(SLUGS) for enum in enums)


def _walk(node):
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from _walk(child)


def test_scan_json_matches_its_schema(tmp_path):
    """docs/scan-json.schema.json is the interface: every example tree's JSON is valid,
    with and without effective layers; a JSON with an unknown slug is not."""
    validator = _schema_validator()
    for tree in sorted(p for p in EXAMPLES.iterdir() if (p / "EXPECT.toml").is_file()):
        out = tracer("scan", str(tree), "--format", "json", "--cache-dir", str(tmp_path))
        data = json.loads(out.stdout)
        assert not list(validator.iter_errors(data)), (tree.name, [e.message for e in validator.iter_errors(data)][:3])
    configs = Path(__file__).parent / "data" / "configs"
    out = tracer("scan", str(EXAMPLES / "ok"), "--format", "json", "--cache-dir", str(tmp_path),
                 "--target-config", str(configs / "qwen2.5-7b"), "--draft-config", str(configs / "draft-no-ids"))
    data = json.loads(out.stdout)
    assert not list(validator.iter_errors(data))
    data["findings"].append(dict(data["findings"][0] if data["findings"] else {}, slug="no-such-slug"))
    assert list(validator.iter_errors(data))


@pytest.mark.real
def test_real_release_json_matches_its_schema(scanned_release):
    validator = _schema_validator()
    data = scanned_release("0.5.23")
    errors = [e.message for e in validator.iter_errors(data)]
    assert errors == [], errors[:3]


def test_sarif_with_effective_layer_findings(tmp_path):
    """Issue 12's first bug: SARIF of a scan with --target-config/--draft-config printed
    `internal error: KeyError: 'fallback-triggered'`; the driver's rules are the catalogue."""
    configs = Path(__file__).parent / "data" / "configs"
    out = tracer("scan", str(EXAMPLES / "ok"), "--target-config", str(configs / "qwen2.5-7b"),
                 "--draft-config", str(configs / "draft-no-ids"), "--format", "sarif", "--cache-dir", str(tmp_path))
    assert out.returncode in (0, 1), out.stderr
    document = json.loads(out.stdout)
    rules = {r["id"] for r in document["runs"][0]["tool"]["driver"]["rules"]}
    from tracer.checks import SLUGS

    assert rules == set(SLUGS)
    assert "fallback-triggered" in {r["ruleId"] for r in document["runs"][0]["results"]}


def test_explain_reads_a_latin1_model_file(tmp_path):
    """Issue 12's third bug: explain had its own file reader and died with UnicodeDecodeError
    on a `# -*- coding: latin-1 -*-` model file that scan reads fine."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "ok", tree)
    qwen2 = tree / "sglang" / "srt" / "models" / "qwen2.py"
    qwen2.write_bytes(b"# -*- coding: latin-1 -*-\n# Copyright \xa9 the authors (latin-1)\n" + qwen2.read_bytes())
    configs = Path(__file__).parent / "data" / "configs"
    out = tracer("explain", str(tree), "--target-config", str(configs / "qwen2.5-7b"),
                 "--draft-config", str(configs / "draft-eagle-config"), "--no-cache")
    assert "Traceback" not in out.stderr and "UnicodeDecodeError" not in out.stderr, out.stderr
    assert "Eager path captures the outputs of" in out.stdout, out.stdout + out.stderr
    scan = json.loads(tracer("scan", str(tree), "--format", "json", "--no-cache").stdout)
    assert not scan["input_errors"]


def test_packs_are_strict(tmp_path):
    """An unknown or mistyped key is an error naming the file and the key; a --rules pack
    cannot silently replace a built-in one."""
    from tracer.config.packs import KEYS, ProtocolError, builtin_protocols, parse_protocol

    base = 'name = "x"\nframework = "f"\nsetter = "s"\nstate_attribute = "a"\n[detect]\npackage = "f"\n'
    assert parse_protocol(base, "x.toml").setter == "s"
    for bad, words in (('logging_call = ["log"]\n' + base, "unknown key 'logging_call'"),
                       (base + "[fallback]\nlogging_call = [\"log\"]\n", "did you mean 'fallback.logging_calls'?"),
                       (base.replace('setter = "s"', "setter = 3"), "'setter' must be a string"),
                       (base + "[fallback]\nlogging_calls = \"log\"\n", "'fallback.logging_calls' must be a list"),
                       (base.replace('name = "x"\n', ""), "missing required key 'name'")):
        with pytest.raises(ProtocolError) as caught:
            parse_protocol(bad, "bad.toml")
        assert str(caught.value).startswith("bad.toml: ") and words in str(caught.value)
    # every key of every built-in pack is one some stage reads (KEYS maps each to a Protocol field)
    assert all(p.source.startswith("rules/") for p in builtin_protocols())
    assert len({field for field, _, _ in KEYS.values()}) == len(KEYS)
    shadow = tmp_path / "shadow.toml"
    shadow.write_text(base.replace('name = "x"', 'name = "sglang-eagle3"'))
    out = tracer("scan", str(EXAMPLES / "ok"), "--rules", str(shadow), "--no-cache")
    assert out.returncode == 2 and "has the name of a built-in pack" in out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("tracer: error: ")
