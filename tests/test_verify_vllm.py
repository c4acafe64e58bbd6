"""tracer verify on vLLM: the CPU-side logic of the vLLM worker and of `--all`.

Fast; no vLLM. The torch-native stand-ins (attention over the harness's KV
slots, the MoE experts) are checked against plain formulas where torch is
importable. The ``real`` test runs vLLM 0.33.0's own LlamaForCausalLM on the
CPU from the wheel's .py files (examples/verify-h200 has the H200 runs).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.verify import allrun, stubs
from tracer.verify.vllm_case import FILLS, Case, _fill

REPO = Path(__file__).resolve().parent.parent
HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")


@pytest.mark.parametrize("raw, ids, source", [
    ({"eagle_aux_hidden_state_layer_ids": [1, 4, 6]}, [1, 4, 6], "eagle_aux_hidden_state_layer_ids"),
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 5]}}, [2, 5], "eagle_aux_hidden_state_layer_ids"),
    # gpu_model_runner: `if aux_layers:`: an empty list means the model's defaults
    ({"eagle_aux_hidden_state_layer_ids": []}, None, "get_eagle3_default_aux_hidden_state_layers"),
    ({}, None, "get_eagle3_default_aux_hidden_state_layers"),
])
def test_vllm_draft_ids_as_the_runner_reads_them(raw, ids, source):
    _, got, where = allrun.draft_for("vllm-eagle3", raw, 8)
    assert got == ids
    assert source in where


def test_vllm_default_draft_reaches_both_ends_of_the_loop():
    raw, ids, _ = allrun.draft_for("vllm-eagle3", None, 8)
    assert ids == [0, 3, 8]
    assert raw["architectures"] == ["LlamaForCausalLMEagle3"]


def test_a_vllm_tree_is_recognised_with_its_version(tmp_path):
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("")
    (tmp_path / "vllm" / "_version.py").write_text("__version__ = version = '0.33.0'\n")
    assert allrun.vllm_release(str(tmp_path)) == (str(tmp_path.resolve()), "0.33.0")
    assert allrun.vllm_release(str(tmp_path / "vllm"))[1] == "0.33.0"
    (tmp_path / "other").mkdir()
    assert allrun.vllm_release(str(tmp_path / "other")) is None


def _entry(name, static_layers, captured, partial=None, error=None):
    paths = {}
    for path in allrun.PATHS:
        if error:
            paths[path] = {"error": error, "at": "vllm/model_executor/models/deepseek_v2.py:1562"}
        else:
            paths[path] = {"captured": captured, "aux_count": len(captured)}
            if partial:
                paths[path]["partial"] = partial
    return {"entry": f"vllm.model_executor.models.x.{name}", "protocol": "vllm-eagle3", "verdict": "ok",
            "file": "vllm/model_executor/models/x.py", "runner_ids": [0, 3, 8],
            "wrapper": name.endswith("ForConditionalGeneration"),
            "static": {"available": True, "effective_layers": static_layers, "graph_layers": static_layers},
            "runtime": {"paths": paths, "layers_path": "model.layers"}}


def test_rows_compare_in_vllms_convention():
    """explain names the layer whose output is captured; vLLM ids are layer inputs (+1)."""
    results = [_entry("LlamaForCausalLM", [-1, 2, 7], [0, 3, 8]),
               _entry("Qwen2_5_VLForConditionalGeneration", [], [0, 3, 8]),
               _entry("DeepseekV3ForCausalLM", [-1, 2, 7], None, error="TypeError: unsupported operand")]
    rows = allrun.build_rows(results, list(allrun.PATHS))
    llama = [r for r in rows if r["entry"] == "LlamaForCausalLM"]
    assert [r["static"] for r in llama] == [[0, 3, 8]] * 3
    assert all(r["agree"] is True for r in llama)
    assert all(r["agree"] is False for r in rows if r["entry"].startswith("Qwen2_5_VL"))
    deepseek = [r for r in rows if r["entry"] == "DeepseekV3ForCausalLM"]
    assert all(r["runtime"] == "error" and r["agree"] is None for r in deepseek)
    counts = allrun.counts(results, rows, list(allrun.PATHS))["vllm-eagle3"]
    assert (counts["all_paths_ran"], counts["rows_agree"], counts["rows_disagree"]) == (2, 3, 3)
    assert counts["wrappers_all_paths"] == ["Qwen2_5_VLForConditionalGeneration"]


def test_render_names_vllms_convention_and_the_framework():
    results = [_entry("LlamaForCausalLM", [-1, 2, 7], [0, 3, 8], partial=[8])]
    rows = allrun.build_rows(results, list(allrun.PATHS))
    report = {"framework": {"root": "/x", "version": "0.33.0", "layout": "vllm"}, "device": "cuda",
              "device_name": "NVIDIA H200", "layers": 8, "paths": list(allrun.PATHS),
              "drafts": {"vllm-eagle3": {"runner_ids": [0, 3, 8], "source": "eagle_aux_hidden_state_layer_ids"}},
              "rows": rows, "entries": results, "counts": allrun.counts(results, rows, list(allrun.PATHS))}
    text = allrun.render(report)
    assert text.startswith("tracer verify --all: vllm 0.33.0")
    assert "id i = the input of layer i" in text
    assert "[0,3,8] partial" in text
    md = allrun.render_markdown(report)
    assert md.startswith("vllm 0.33.0") and "| LlamaForCausalLM | x.py | vllm-eagle3 | extend |" in md


def test_restatic_recomputes_rows_from_the_saved_configs(monkeypatch):
    results = [_entry("LlamaForCausalLM", None, [1, 4, 8])]
    results[0]["static"] = {"available": False, "why": "tracer's explain not importable"}
    results[0]["config_json"] = {"num_hidden_layers": 8}
    report = {"framework": {"root": "/x", "version": "0.33.0", "layout": "vllm"}, "layers": 8,
              "paths": list(allrun.PATHS), "entries": results,
              "drafts": {"vllm-eagle3": {"config": {"eagle_aux_hidden_state_layer_ids": [1, 4, 8]}}}}
    seen = []

    def predict(root, entry, target, draft, protocol, scan):
        seen.append((root, entry, target, draft["eagle_aux_hidden_state_layer_ids"], protocol))
        return {"available": True, "effective_layers": [0, 3, 6], "graph_layers": [0, 3, 6]}

    monkeypatch.setattr(allrun.static, "predict", predict)
    out = allrun.restatic(report, {"tool": "t"}, "/tree")
    assert seen == [("/tree", results[0]["entry"], {"num_hidden_layers": 8}, [1, 4, 8], "vllm-eagle3")]
    assert [r["agree"] for r in out["rows"]] == [False, False, False]  # static [1,4,7] vs runtime [1,4,8]
    assert out["counts"]["vllm-eagle3"]["rows_disagree"] == 3


def test_missing_config_fields_are_filled_and_said():
    case = Case("/x", "vllm.model_executor.models.teleflm.TeleFLMForCausalLM", 8, "cpu", 0)
    case.config = {"raw": {"num_hidden_layers": 8, "hidden_size": 64}}
    assert _fill(case, AttributeError("'LlamaConfig' object has no attribute 'use_mup'"))
    assert _fill(case, AttributeError("'LlamaConfig' object has no attribute 'n_layer'"))
    assert case.config["raw"]["use_mup"] is False and case.config["raw"]["n_layer"] == 8
    assert any("use_mup" in n for n in case.notes)
    # a field already there, or one the harness has no value for, is not guessed
    assert not _fill(case, AttributeError("'LlamaConfig' object has no attribute 'use_mup'"))
    assert not _fill(case, AttributeError("'LlamaConfig' object has no attribute 'frobnicate'"))
    assert not _fill(case, TypeError("object has no attribute 'n_layer'"))
    assert "frobnicate" not in FILLS


def test_forced_and_dotted_stubs_and_stub_types_in_pydantic_fields():
    pydantic = pytest.importorskip("pydantic")
    code = (
        "import sys; from tracer.verify import stubs\n"
        "stubs.install([], force=['json_stub_root_x', 'email.stubbed_sub'])\n"
        "import json_stub_root_x.types as t; import email.stubbed_sub.deep as d\n"
        "import email.utils  # the real package beside its stubbed subpackage\n"
        "import pydantic\n"
        "class M(pydantic.BaseModel):\n    field: t.Thing | None = None\n"
        "print(M(field=3).field, getattr(d, '__stub__', False), email.utils.__name__)\n"
        "try:\n    t.Thing()\nexcept stubs.StubCalled:\n    print('loud')\n"
        "else:\n    print('quiet')\n")
    del pydantic
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-600:]
    # a stub called without a tensor is import-time use (a decorator factory, a constant)
    assert out.stdout.split() == ["3", "True", "email.utils", "quiet"]


def test_stub_called_with_a_tensor_is_loud():
    torch = pytest.importorskip("torch")
    stub = stubs._make_stub("fake_ext.op")
    with pytest.raises(stubs.StubCalled):
        stub(torch.zeros(1))


@needs_torch
def test_native_attention_is_causal_over_the_kv_slots():
    import torch
    import torch.nn.functional as F

    from tracer.verify import vllm_env

    class Layer:
        num_heads, num_kv_heads, head_size, head_size_v = 4, 2, 8, 8
        sliding_window = None
        layer_name = "layers.0.attn"

    torch.manual_seed(0)
    vllm_env.CTX.kv = {}
    layer = Layer()
    q, k, v = (torch.randn(5, n * 8) for n in (4, 2, 2))
    vllm_env.CTX.positions = torch.arange(5)
    prefill = vllm_env._native_attention(layer, q, k, v)
    ref = F.scaled_dot_product_attention(q.view(5, 4, 8).transpose(0, 1),
                                         k.view(5, 2, 8).repeat_interleave(2, 1).transpose(0, 1),
                                         v.view(5, 2, 8).repeat_interleave(2, 1).transpose(0, 1),
                                         is_causal=True).transpose(0, 1).reshape(5, 32)
    assert torch.allclose(prefill, ref, atol=1e-5)
    # a decode step at position 5 sees the five cached tokens and itself
    q1, k1, v1 = (torch.randn(1, n * 8) for n in (4, 2, 2))
    vllm_env.CTX.positions = torch.tensor([5])
    step = vllm_env._native_attention(layer, q1, k1, v1)
    full = F.scaled_dot_product_attention(
        q1.view(1, 4, 8).transpose(0, 1),
        torch.cat([k, k1]).view(6, 2, 8).repeat_interleave(2, 1).transpose(0, 1),
        torch.cat([v, v1]).view(6, 2, 8).repeat_interleave(2, 1).transpose(0, 1)).transpose(0, 1).reshape(1, 32)
    assert torch.allclose(step, full, atol=1e-5)


@needs_torch
def test_native_experts_gated_and_not():
    import torch
    import torch.nn.functional as F

    from tracer.verify import vllm_env

    torch.manual_seed(0)
    x = torch.randn(3, 8)
    w13, w2 = torch.randn(4, 2 * 6, 8), torch.randn(4, 8, 6)
    ids = torch.tensor([[0, 2], [1, 3], [2, 2]])
    weights = torch.tensor([[0.7, 0.3], [0.5, 0.5], [0.2, 0.8]])
    out = vllm_env._native_experts(x, w13, w2, weights, ids)
    want = torch.zeros(3, 8)
    for t in range(3):
        for s in range(2):
            e = int(ids[t, s])
            gate, up = (w13[e] @ x[t]).chunk(2)
            want[t] += weights[t, s] * (w2[e] @ (F.silu(gate) * up))
    assert torch.allclose(out, want, atol=1e-4)
    relu2 = vllm_env._native_experts(x, w13[:, :6], w2, weights, ids, activation="relu2_no_mul")
    e = int(ids[0, 0])
    first = weights[0, 0] * (w2[e] @ F.relu(w13[e, :6] @ x[0]).square()) + weights[0, 1] * (
        w2[int(ids[0, 1])] @ F.relu(w13[int(ids[0, 1]), :6] @ x[0]).square())
    assert torch.allclose(relu2[0], first, atol=1e-4)


def test_the_h200_evidence_is_consistent():
    """The saved reports behind README's numbers: counts recomputed from their rows."""
    folder = REPO / "examples" / "verify-h200"
    for name, least in (("vllm-0.33.0-ids-1-4-6", 40), ("vllm-0.33.0-ids-0-3-8", 30),
                        ("sglang-0.5.21-dflash", 25)):
        report = json.loads((folder / f"{name}.json").read_text())
        protocol = next(iter(report["counts"]))
        again = allrun.counts(report["entries"], report["rows"], report["paths"])[protocol]
        assert again == report["counts"][protocol]
        assert again["all_paths_ran"] >= least
        assert (folder / f"{name}.command").read_text().startswith("python3 -P -m tracer.verify.cli --all")


@pytest.mark.real
@needs_torch
def test_vllm_llama_captures_layer_inputs_on_cpu(tmp_path):
    """vLLM 0.33.0's own LlamaForCausalLM (the wheel's .py files, no compiled
    extension) on the CPU: ids [0,3,8] are the inputs of layers 0, 3 and 8."""
    sys.path.insert(0, str(REPO / "tests"))
    from releases import ReleaseUnavailable, release_dir

    try:
        root = release_dir("0.33.0", "vllm")
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("pydantic") is None:
        pytest.skip("transformers / pydantic not importable")
    out = tmp_path / "o.jsonl"
    run = subprocess.run([sys.executable, "-m", "tracer.verify.vllm_case", "--framework", str(root), "--entry",
                          "vllm.model_executor.models.llama.LlamaForCausalLM", "--protocol",
                          "vllm-eagle3=0,3,8", "--out", str(out)], capture_output=True, text=True, cwd=REPO,
                         timeout=400)
    assert out.exists(), run.stderr[-2000:]
    record = json.loads(out.read_text().splitlines()[0])
    assert record.get("error") is None, record
    assert {p: v["captured"] for p, v in record["paths"].items()} == {"extend": [0, 3, 8], "decode": [0, 3, 8]}
