"""`tracer explain` on LMDeploy 0.18.0 (issue #19): the ids travel on the config object.

configurations/llama.py:13 LlamaModelConfigBuilder.build takes cfg from
DefaultModelConfigBuilder.build (default.py: `return ModelConfig(..., num_layers=
hf_config.num_hidden_layers, ...)`) and, with spec_method == 'eagle3' and not a draft,
writes hf_config.aux_hidden_state_layers = (2, num_layers // 2, num_layers - 3) (line 28);
models/llama.py:232 LlamaModel.__init__ stores getattr(config, 'aux_hidden_state_layers',
tuple()), and the loop at 264 appends hidden_states + residual before layer idx runs: the
input of layers 2, 16, 29 of a 32-layer Llama, the outputs of layers 1, 15, 28. The draft's
eagle_aux_hidden_state_layer_ids is never read for the target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import release_dir

CONFIGS = Path(__file__).resolve().parent / "data" / "configs"


def _explain(tmp_path, ids, *extra):
    (tmp_path / "d").mkdir(exist_ok=True)
    (tmp_path / "d" / "config.json").write_text(json.dumps(
        {"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 4096, "eagle_aux_hidden_state_layer_ids": ids}))
    run = subprocess.run([sys.executable, "-m", "tracer", "explain", str(release_dir("0.18.0", "lmdeploy")),
                          "--target-config", str(CONFIGS / "llama-3.1-8b"), "--draft-config", str(tmp_path / "d"),
                          "--no-cache", "--format", "json", *extra], capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


@pytest.mark.real
def test_llama_builder_layers_are_evaluated(tmp_path):
    result = _explain(tmp_path, [3, 16, 29])
    assert result["entry"] == "lmdeploy.pytorch.models.llama.LlamaForCausalLM"
    assert result["layers_to_capture"] == [2, 16, 29]
    assert result["captured_indices"] == [2, 16, 29] and result["effective_layers"] == [1, 15, 28]
    assert result["loop"]["file"] == "lmdeploy/pytorch/models/llama.py" and result["loop"]["line"] == 264
    assert result["ids_written_by"] == "LlamaModelConfigBuilder.build"
    steps = "\n".join(result["steps"])
    assert "line 26: `spec_method == 'eagle3'` is True" in steps
    assert "writes hf_config.aux_hidden_state_layers = [2, 16, 29] (line 28)" in steps
    assert "LlamaModel.__init__ (lmdeploy/pytorch/models/llama.py:216) stores self.aux_hidden_state_layers" in steps
    # the draft asks for the inputs of 3, 16, 29 (LMDeploy's reading), which nothing passes on
    [found] = result["findings"]
    assert (found["slug"], found["severity"], found["file"], found["line"]) == (
        "fallback-triggered", "warning", "lmdeploy/pytorch/configurations/llama.py", 28)
    assert "the draft's ids [3, 16, 29]" in found["message"] and "never read" in found["message"]
    assert "captures the outputs of layers [1, 15, 28]" in found["message"]


@pytest.mark.real
def test_a_draft_trained_on_the_builders_layers_is_quiet(tmp_path):
    # SGLang's ids [1, 15, 28] name the outputs of layers 1, 15, 28: what LMDeploy captures
    assert _explain(tmp_path, [1, 15, 28], "--draft-framework", "sglang")["findings"] == []
    # in LMDeploy's own reading the same outputs are the inputs of 2, 16, 29
    assert _explain(tmp_path, [2, 16, 29])["findings"] == []


@pytest.mark.real
def test_qwen3_reads_the_dflash_context_not_the_eagle3_config(tmp_path):
    """qwen3.py:268 and qwen3_5.py:840 read get_build_model_context().spec_model_ctx.
    target_aux_hidden_state_layers, which spec_decode/base.py:75 fills from
    specdecode_config.target_layer_ids, set only for method 'dflash' (config.py:733-768):
    under EAGLE-3 it is (), and no builder writes config.aux_hidden_state_layers for them,
    so their EAGLE-3 verdict stays `missing`."""
    from tracer.api import scan_to_json

    data = scan_to_json(str(release_dir("0.18.0", "lmdeploy")), cache_dir=str(tmp_path / "cache"))
    models = {m["entry"].rsplit(".", 1)[-1]: m for m in data["models"]}
    for name in ("Qwen3ForCausalLM", "Qwen3_5ForConditionalGeneration"):
        assert models[name]["verdict"] == "missing", name
        assert "no config builder writes aux_hidden_state_layers" in models[name]["reason"]
