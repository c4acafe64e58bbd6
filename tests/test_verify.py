"""tracer verify: the runtime harness.

The fast tests need neither torch nor SGLang. The ``real`` tests run SGLang's
own model classes (real releases from PyPI, unpacked in the test cache) on the
CPU, in a subprocess per release (SGLang keeps process-wide singletons), and
assert the layers each path really captures: the table in
shared/runtime-harness-notes.md, plus the wrapper (Llama-4) and flag-based MoE
(Qwen3-MoE) families. ``tracer verify --all`` is run on a handful of families
derived from the release (no hand-written config: Qwen3, Mistral, Gemma-3,
the loop model Nanbeige, GLM-4-MoE, the Qwen2.5-VL wrapper, DeepSeek-V3), one
worker process each, EAGLE-3 and DFlash. They skip, with the reason, where
torch or transformers is not importable (.ci/install-verify.sh installs them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.verify import families, stubs
from tracer.verify.runs import judge

REPO = Path(__file__).resolve().parent.parent
DRAFTS = REPO / "examples" / "verify-h200" / "drafts"
HAVE_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch/transformers not importable "
                                 "(bash .ci/install-verify.sh installs the CPU harness)")


# ---------------------------------------------------------------- no torch


def test_the_command_imports_without_torch():
    code = ("import sys, tracer.verify.cli, tracer.verify.harness, tracer.verify.adapters; "
            "bad = [m for m in ('torch', 'sglang', 'transformers') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


def test_stubs_are_permissive_at_import_and_loud_when_used():
    stubs.install(["tracer_verify_fake_pkg"])
    import tracer_verify_fake_pkg as fake
    from tracer_verify_fake_pkg.sub import Thing, jit

    @jit
    def kernel(x):
        return x

    class Derived(Thing):
        pass

    decorated_by_factory = fake.autotune(configs=[], key=["n"])
    assert decorated_by_factory is not None
    with pytest.raises(stubs.StubCalled):
        kernel(1)
    with pytest.raises(stubs.StubCalled):
        kernel[(1,)](1)  # triton-style grid launch
    with pytest.raises(stubs.StubCalled):
        Derived()
    assert "tracer_verify_fake_pkg" in stubs.installed()
    assert any("jit" in name for name in stubs.report()["tracer_verify_fake_pkg"])


def test_stub_hands_back_the_frameworks_own_names():
    import types

    source = types.ModuleType("tracer_verify_source")
    source.RMSNorm = object
    sys.modules["tracer_verify_source"] = source
    stubs.install(["tracer_verify_vllm"])
    stubs.hand_back("tracer_verify_vllm.layers", "tracer_verify_source")
    from tracer_verify_vllm.layers import RMSNorm

    assert RMSNorm is object


def test_real_packages_are_never_stubbed():
    assert "json" not in stubs.install(["json"])


@pytest.mark.parametrize("name, runner", [
    ("ids-1-2-3", [1, 2, 3]), ("ids-0-2-4", [0, 2, 4]), ("ids-0-2-5-last", [0, 2, 5]),
    ("no-ids", None)])
def test_draft_ids_as_the_runner_reads_them(name, runner):
    draft = families.read_draft_ids(str(DRAFTS / name))
    assert draft.runner == runner


def test_top_level_ids_are_not_what_the_runner_passes(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}))
    draft = families.read_draft_ids(str(tmp_path))
    assert draft.requested == [1, 15, 28] and draft.runner is None


def test_shrink_keeps_architecture_and_layers():
    raw = json.loads((REPO / "tests/data/configs/deepseek-v3/config.json").read_text())
    small = families.shrink_config(raw, None)
    assert small["num_hidden_layers"] == 61 and small["first_k_dense_replace"] == 3
    assert small["hidden_size"] == 64 and small["n_routed_experts"] == 6
    assert small["num_key_value_heads"] == small["num_attention_heads"]
    assert "num_nextn_predict_layers" not in small
    assert families.shrink_config(raw, 8)["num_hidden_layers"] == 8


def test_entries_map_to_families():
    assert families.family_for_entry("DeepseekV3ForCausalLM").key == "deepseek_v3"
    assert families.family_for_entry("Llama4ForConditionalGeneration").wrapper
    with pytest.raises(KeyError):
        families.family_for_entry("NoSuchForCausalLM")


def _row(runner, paths, static=None):
    return {"draft": {"runner": runner, "requested": runner, "source": "x"},
            "static": static or {"available": False},
            "runtime": {"paths": paths, "setter_calls": []}}


def test_judge_passes_only_when_every_path_captures_the_asked_layers():
    ok = {"captured": [1, 2, 3]}
    assert judge(_row([1, 2, 3], {"extend": ok, "decode": ok}))["verdict"] == "PASS"
    dropped = _row([0, 2, 5], {"extend": {"captured": [0, 2]}})
    assert judge(dropped)["verdict"] == "FAIL"
    graph_differs = _row(None, {"extend": {"captured": [1, 2]}, "cuda_graph": {"captured": [0, 2]}})
    assert "paths capture different layers" in " ".join(judge(graph_differs)["problems"])
    static = {"available": True, "effective_layers": [1, 2, 3], "graph_layers": [1, 2, 3]}
    assert judge(_row([1, 2, 3], {"extend": ok}, static))["static_agrees"] is True
    unknown = {"available": True, "effective_layers": None, "graph_layers": None}
    judged = judge(_row([1, 2, 3], {"extend": ok}, unknown))
    assert judged["verdict"] == "PASS" and judged["static_agrees"] is None


# ---------------------------------------------------------------- real releases

ENTRIES = ["Qwen2ForCausalLM", "LlamaForCausalLM", "Qwen3MoeForCausalLM",
           "DeepseekV2ForCausalLM", "Llama4ForConditionalGeneration"]
DRAFT_NAMES = ["ids-1-2-3", "ids-0-2-4", "ids-0-2-5-last", "no-ids"]
ERROR = "error"

# captured outputs of (layer index, -1 = embedding) for L = 6, per draft, on
# the eager paths (extend and decode); runtime-harness-notes.md, "What SGLang
# actually captures".
PLAIN = {"ids-1-2-3": [1, 2, 3], "ids-0-2-4": [0, 2, 4], "ids-0-2-5-last": [0, 2], "no-ids": [1, 2]}
EXPECTED = {
    "0.5.23": {
        "Qwen2ForCausalLM": PLAIN, "LlamaForCausalLM": PLAIN, "Qwen3MoeForCausalLM": PLAIN,
        "Llama4ForConditionalGeneration": PLAIN,
        # the first-id rule: +1 only when ids[0] == 1; the packer refuses 2 of 3
        "DeepseekV2ForCausalLM": {"ids-1-2-3": [1, 2, 3], "ids-0-2-4": [-1, 1, 3],
                                  "ids-0-2-5-last": [-1, 1, 4], "no-ids": ERROR},
    },
    # 0.5.6 always adds +1. Its graph runner first calls the setter with no
    # ids (the fallback), then the runner calls it with the draft's ids; the
    # flag-based MoE keeps the flags of both calls.
    "0.5.6": dict({entry: PLAIN for entry in ENTRIES}, Qwen3MoeForCausalLM={
        "ids-1-2-3": [1, 2, 3], "ids-0-2-4": [0, 1, 2, 4], "ids-0-2-5-last": [0, 1, 2],
        "no-ids": [1, 2]}),
}


def _run_release(version: str, release_root: Path, tmp: Path) -> dict:
    out = tmp / f"verify-{version}.json"
    cmd = [sys.executable, "-m", "tracer.verify.cli", "--framework", str(release_root),
           "--device", "cpu", "--layers", "6", "--format", "json", "-o", str(out)]
    for entry in ENTRIES:
        cmd += ["--entry", entry]
    for name in DRAFT_NAMES:
        cmd += ["--draft-config", str(DRAFTS / name)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    assert out.is_file(), proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def verified(sglang_release_full, tmp_path_factory):
    results = {}

    def get(version):
        if version not in results:
            results[version] = _run_release(version, sglang_release_full(version),
                                            tmp_path_factory.mktemp(f"verify-{version}"))
        return results[version]

    return get


@needs_torch
@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.23", "0.5.6"])
def test_captured_layers_on_a_real_release(verified, version):
    report = verified(version)
    assert report["device"] == "cpu"
    assert report["framework"]["version"] == version
    assert report["framework"]["layout"] == ("runtime-context" if version == "0.5.23" else "batch-fields")
    seen = set()
    for row in report["rows"]:
        name = next(n for n in DRAFT_NAMES if families.read_draft_ids(str(DRAFTS / n)).runner
                    == row["draft"]["runner"])
        expected = EXPECTED[version][row["entry"]][name]
        for path in ("extend", "decode"):
            got = row["runtime"]["paths"][path]
            if expected == ERROR:
                assert "error" in got, (row["entry"], name, path, got)
            else:
                assert got.get("captured") == expected, (row["entry"], name, path, got)
                # the states SGLang computed are transformers' own, layer by layer
                if "max_diff_vs_transformers" in got and row["family"] != "llama4":
                    assert got["max_diff_vs_transformers"] < 1e-4
        seen.add((row["entry"], name))
    assert len(seen) == len(ENTRIES) * len(DRAFT_NAMES)
    # the stand-ins are import-only: a run that passed never called one
    assert "triton" in report["stubs"] or version == "0.5.6"


@needs_torch
@pytest.mark.real
def test_deepseek_first_id_rule_and_setter_state_0_5_23(verified):
    rows = {(r["entry"], tuple(r["draft"]["runner"] or ())): r for r in verified("0.5.23")["rows"]}
    row = rows[("DeepseekV2ForCausalLM", (0, 2, 4))]
    assert row["runtime"]["setter_calls"][0]["result"]["layers_to_capture"] == [0, 2, 4]
    assert "captured 2 of 3" in rows[("DeepseekV2ForCausalLM", ())]["runtime"]["paths"]["extend"]["error"]
    # the flag-based MoE writes a flag per layer; an id of the last layer
    # indexes past the layer list
    moe = rows[("Qwen3MoeForCausalLM", (0, 2, 5))]["runtime"]["setter_calls"][0]["result"]
    assert "IndexError" in moe.get("error", "")


@needs_torch
@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.23", "0.5.6"])
def test_static_prediction_agrees_with_the_runtime(verified, version):
    """Where tracer's static side makes a prediction, it names the layers the
    runtime captured. A runtime error is not a layer list; those rows are
    left to the error assertions above."""
    checked = 0
    for row in verified(version)["rows"]:
        static = row["static"]
        if not static.get("available") or static.get("effective_layers") is None:
            continue
        paths = row["runtime"]["paths"]
        if any("error" in p for p in paths.values()):
            continue
        assert row["judgement"]["static_agrees"], (row["entry"], row["draft"]["runner"], static, paths)
        checked += 1
    if checked == 0:
        pytest.skip("the static engine made no prediction here")


@needs_torch
@pytest.mark.real
def test_deepseek_v3_real_shape_first_id_rule_0_5_23(sglang_release_full, tmp_path):
    """DeepSeek-V3's real config (61 layers, sizes shrunk) with the ids
    Kimi/DeepSeek drafts ship: 0.5.23 adds +1 only when the first id is 1,
    so [2,30,58] captures the outputs of layers [1,29,57]."""
    out = tmp_path / "v3.json"
    cmd = [sys.executable, "-m", "tracer.verify.cli", "--framework", str(sglang_release_full("0.5.23")),
           "--device", "cpu", "--entry", "DeepseekV3ForCausalLM",
           "--target-config", str(REPO / "examples/verify-h200/targets/deepseek-v3"),
           "--draft-config", str(DRAFTS / "ids-2-30-58"), "-o", str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
                          capture_output=True, text=True, timeout=900)
    assert out.is_file(), proc.stderr[-3000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert row["runtime"]["num_hidden_layers"] == 61
    for path in ("extend", "decode"):
        assert row["runtime"]["paths"][path]["captured"] == [1, 29, 57]
        assert row["runtime"]["paths"][path]["max_diff_vs_transformers"] < 1e-4
    assert row["judgement"]["verdict"] == "FAIL"  # asked [2,30,58]
    if row["static"].get("effective_layers") is not None:
        assert row["static"]["effective_layers"] == [1, 29, 57]


# ---------------------------------------------------------------- derived families (verify --all)

from tracer.verify import allrun, derive  # noqa: E402


def test_shrink_keeps_patterns_and_resizes_per_layer_lists():
    raw = {"num_hidden_layers": 12, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 150000, "layer_types": ["sliding_attention"] * 5 + ["full_attention"] + [
               "sliding_attention"] * 5 + ["full_attention"],
           "mlp_layer_types": ["dense"] + ["sparse"] * 11, "per_layer_config": {"05": {"head_dim": 512}},
           "head_dim": 128, "num_experts": 64, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
           "rope_parameters": {"rope_type": "default", "mrope_section": [16, 24, 24]},
           "vision_config": {"hidden_size": 1280, "depth": 32, "num_heads": 16, "out_hidden_size": 4096,
                             "deepstack_visual_indexes": [8, 16, 24]}}
    small, notes = derive.shrink_config(raw, 8)
    assert small["num_hidden_layers"] == 8 and small["hidden_size"] == 64 and small["vocab_size"] == 256
    assert small["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"] + ["sliding_attention"] * 2
    assert small["mlp_layer_types"] == ["dense"] + ["sparse"] * 7
    assert small["per_layer_config"] == {}  # the override now equals the global head_dim
    assert small["num_experts"] == 6 and small["num_experts_per_tok"] == 2 and small["first_k_dense_replace"] == 3
    assert sum(small["rope_parameters"]["mrope_section"]) == 8  # head_dim 16 / 2
    vision = small["vision_config"]
    assert vision["depth"] == 1 and vision["out_hidden_size"] == 64 and vision["deepstack_visual_indexes"] == [0]


def test_hybrid_layers_become_attention_and_say_so():
    small, notes = derive.shrink_config({"num_hidden_layers": 4, "hidden_size": 2048,
                                         "layer_types": ["linear_attention"] * 3 + ["full_attention"],
                                         "hybrid_override_pattern": "M-M*"}, 4)
    assert small["layer_types"] == ["full_attention"] * 4 and small["hybrid_override_pattern"] == "*-**"
    assert any("ARCHITECTURE CHANGED" in n for n in notes)


def test_dflash_draft_ids_as_the_runner_reads_them():
    raw, ids, source = allrun.draft_for("sglang-dflash", {"dflash_config": {"target_layer_ids": [0, 3, 6]}}, 8)
    assert ids == [0, 3, 6]
    # no ids: spec_aux_hidden_state.py builds them from the draft's layer count
    _, ids, source = allrun.draft_for("sglang-dflash", {"num_hidden_layers": 3}, 8)
    assert ids == [1, 3, 5] and source == "build_target_layer_ids"
    assert allrun.protocol_of_draft({"dflash_config": {}}) == "sglang-dflash"
    assert allrun.protocol_of_draft({"eagle_config": {}}) == "sglang-eagle3"


def test_rows_one_per_entry_protocol_path_and_counted_failures():
    entries = [
        {"entry": "m.a.AForCausalLM", "protocol": "sglang-eagle3", "file": "a.py", "runner_ids": [0, 3, 5],
         "static": {"available": True, "effective_layers": [0, 3, 5], "graph_layers": [1, 3, 4]},
         "runtime": {"paths": {"extend": {"captured": [0, 3, 5]}, "decode": {"captured": [0, 3, 5]},
                               "cuda_graph": {"captured": [1, 3, 4]}}, "setter_calls": []}},
        {"entry": "m.b.BForCausalLM", "protocol": "sglang-eagle3", "file": "b.py", "runner_ids": [0, 3, 5],
         "static": {"available": True, "effective_layers": [0, 3, 5], "graph_layers": [0, 3, 5]},
         "runtime": {"error": "DeriveError: config class not found (tried BForCausalLM)"}},
    ]
    rows = allrun.build_rows(entries, list(allrun.PATHS))
    assert len(rows) == 6 and all(r["agree"] for r in rows[:3]) and rows[3]["runtime"] == "not built"
    counts = allrun.counts(entries, rows, list(allrun.PATHS))["sglang-eagle3"]
    assert counts["all_paths_ran"] == 1 and counts["not_built"] == {"config class not found": 1}


DERIVED = ["Qwen3ForCausalLM", "MistralForCausalLM", "Gemma3ForCausalLM", "NanbeigeForCausalLM",
           "Glm4MoeForCausalLM", "Qwen2_5_VLForConditionalGeneration", "DeepseekV3ForCausalLM"]
# L = 8, EAGLE-3 ids [0,3,5], DFlash ids [0,3,6] (examples/verify-h200/drafts)
DERIVED_EXPECTED = {
    ("Qwen3ForCausalLM", "sglang-eagle3"): [0, 3, 5], ("Qwen3ForCausalLM", "sglang-dflash"): [0, 3, 6],
    ("MistralForCausalLM", "sglang-eagle3"): [0, 3, 5], ("MistralForCausalLM", "sglang-dflash"): [0, 3, 6],
    # Gemma-3 hands on hidden_states without the residual: the layers are the
    # asked ones, the tensors are not the residual stream
    ("Gemma3ForCausalLM", "sglang-eagle3"): [0, 3, 5],
    # a loop model (num_loops = 2): ids count unrolled steps
    ("NanbeigeForCausalLM", "sglang-dflash"): [0, 3, 6],
    ("Glm4MoeForCausalLM", "sglang-eagle3"): [0, 3, 5],
    ("Qwen2_5_VLForConditionalGeneration", "sglang-eagle3"): [0, 3, 5],
    # DeepSeek's first-id rule (0.5.23): no +1 unless ids[0] == 1
    ("DeepseekV3ForCausalLM", "sglang-eagle3"): [-1, 2, 4], ("DeepseekV3ForCausalLM", "sglang-dflash"): [0, 3, 6],
}


@needs_torch
@pytest.mark.real
def test_verify_all_derived_families_0_5_23(sglang_release_full, tmp_path):
    """A handful of families derived from the release (no hand-written
    config, random weights), each in its own worker, both protocols."""
    out = tmp_path / "all.json"
    cmd = [sys.executable, "-m", "tracer.verify.cli", "--all", "--framework", str(sglang_release_full("0.5.23")),
           "--device", "cpu", "-j", "2", "--timeout", "400", "--cache-dir", str(tmp_path / "scan-cache"),
           "--draft-config", str(DRAFTS / "ids-0-3-5"), "--draft-config", str(DRAFTS / "dflash-0-3-6"),
           "--work-dir", str(tmp_path / "work"), "-o", str(out)]
    for entry in DERIVED:
        cmd += ["--entry", entry]
    proc = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
                          capture_output=True, text=True, timeout=900)
    assert out.is_file(), proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["paths"] == ["extend", "decode"]
    seen = {}
    for row in report["rows"]:
        seen[(row["entry"], row["protocol"], row["path"])] = row
    # Gemma-3's rotary code calls einops, which .ci/install-verify.sh does not
    # install: then its rows say so (a stub was called), counted, not hidden
    have_einops = importlib.util.find_spec("einops") is not None
    for (entry, protocol), expected in DERIVED_EXPECTED.items():
        for path in ("extend", "decode"):
            row = seen[(entry, protocol, path)]
            if entry == "Gemma3ForCausalLM" and not have_einops:
                assert row["runtime"] == "error" and "einops" in row["error"], row
                continue
            assert row["runtime"] == expected, (entry, protocol, path, row)
            if isinstance(row["static"], list):  # where the static side predicts, it agrees
                assert row["agree"], row
    if have_einops:
        assert all(seen[("Gemma3ForCausalLM", "sglang-eagle3", p)].get("partial_stream") for p in ("extend", "decode"))
    assert not any(seen[("Qwen3ForCausalLM", "sglang-eagle3", p)].get("partial_stream") for p in ("extend", "decode"))
    entry = next(e for e in report["entries"] if e["entry"].endswith(".Qwen2_5_VLForConditionalGeneration"))
    assert entry["wrapper"] and entry["runtime"]["provenance"]["config_class"].endswith("Qwen2_5_VLConfig")


@needs_torch
@pytest.mark.real
def test_verify_all_0_5_6_runner_order(sglang_release_full, tmp_path):
    """0.5.6's graph runner calls the setter without ids before the runner
    passes the draft's: on the CPU (no graph) the eager paths capture the
    draft's layers, and the recorded call order shows the fallback first."""
    out = tmp_path / "all.json"
    cmd = [sys.executable, "-m", "tracer.verify.cli", "--all", "--framework", str(sglang_release_full("0.5.6")),
           "--device", "cpu", "-j", "2", "--protocol", "sglang-eagle3", "--cache-dir", str(tmp_path / "c"),
           "--draft-config", str(DRAFTS / "ids-0-3-5"), "--entry", "Qwen3ForCausalLM", "--entry", "Phi3ForCausalLM",
           "-o", str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
                          capture_output=True, text=True, timeout=900)
    assert out.is_file(), proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["protocols"] == ["sglang-eagle3"] and report["protocols_absent"] == []
    for res in report["entries"]:
        calls = res["runtime"]["setter_calls"]
        assert [c["call"].split("(")[0] for c in calls] == ["set_eagle3_layers_to_capture", "capture decode CUDA graph",
                                                            "set_eagle3_layers_to_capture"]
        assert calls[0]["result"]["layers_to_capture"] == [2, 4, 5]  # the fallback [2, L//2, L-3]
        for path in ("extend", "decode"):
            assert res["runtime"]["paths"][path]["captured"] == [0, 3, 5]
