"""`explain --draft-framework` (issue #15): a draft whose ids were meant in another
framework's convention. SGLang's id i names the output of layer i, vLLM's the input of
layer i; vLLM PR 43671 served a MiniMax-M2 draft trained on SGLang's convention, and
position-0 acceptance was about 10%."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import release_dir

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "vllm-registries"


def _configs(tmp_path, target: dict, draft: dict) -> tuple[Path, Path]:
    for name, data in (("t", target), ("d", draft)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(data))
    return tmp_path / "t", tmp_path / "d"


def _explain(root, target, draft, *extra, cache=None):
    caching = ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    return subprocess.run([sys.executable, "-m", "tracer", "explain", str(root), "--target-config", str(target),
                           "--draft-config", str(draft), *caching, *extra], capture_output=True, text=True)


@pytest.fixture()
def llama_configs(tmp_path):
    return _configs(tmp_path, {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 8, "hidden_size": 64},
                    {"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 64,
                     "eagle_aux_hidden_state_layer_ids": [1, 3, 5]})


def test_a_draft_from_sglang_on_a_vllm_tree_is_one_layer_early(llama_configs):
    target, draft = llama_configs
    run = _explain(EXAMPLE, target, draft, "--draft-framework", "sglang", "--format", "json")
    assert run.returncode == 1, run.stderr
    result = json.loads(run.stdout)
    assert result["draft_convention"] == {"framework": "sglang", "id_shift": 1}
    assert result["effective_layers"] == [0, 2, 4]
    [found] = result["findings"]
    # where vLLM stores the ids as given (EagleModelMixin._set_aux_hidden_state_layers)
    assert (found["slug"], found["file"], found["line"]) == (
        "convention-mismatch", "vllm/model_executor/models/interfaces.py", 8)
    assert "meant in sglang's convention (id i names the output of layer i: the outputs of layers [1, 3, 5])" \
        in found["message"]
    assert "vllm reads id i as the input of layer i" in found["message"]
    assert "captures the outputs of layers [0, 2, 4]: every captured layer is one layer early" in found["message"]
    assert found["hint"].startswith("give vllm the ids [2, 4, 6]")


def test_the_same_convention_or_none_stays_quiet(llama_configs):
    target, draft = llama_configs
    for extra in ((), ("--draft-framework", "vllm"), ("--draft-framework", "lmdeploy")):
        run = _explain(EXAMPLE, target, draft, *extra, "--format", "json")
        assert run.returncode == 0, (extra, run.stdout[-500:], run.stderr)
        assert json.loads(run.stdout)["findings"] == [], extra


def test_the_text_says_which_convention_the_ids_are_read_in(llama_configs):
    target, draft = llama_configs
    run = _explain(EXAMPLE, target, draft, "--draft-framework", "sglang")
    assert "draft asks, in sglang's convention, for the outputs of layers [1, 3, 5]" in run.stdout
    assert "convention-mismatch [error]" in run.stdout


def test_an_unknown_framework_is_a_one_line_usage_error(llama_configs):
    target, draft = llama_configs
    run = _explain(EXAMPLE, target, draft, "--draft-framework", "nosuch")
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "Traceback" not in run.stderr
    assert "--draft-framework nosuch: no protocol pack describes that framework" in run.stderr


def test_scan_with_the_configs_takes_the_draft_framework_too(llama_configs):
    """`scan --target-config/--draft-config --draft-framework` reports what explain does."""
    target, draft = llama_configs
    run = subprocess.run([sys.executable, "-m", "tracer", "scan", str(EXAMPLE), "--target-config", str(target),
                          "--draft-config", str(draft), "--draft-framework", "sglang", "--no-cache",
                          "--format", "json"], capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    found = [f for f in json.loads(run.stdout)["findings"] if f["slug"] == "convention-mismatch"]
    assert [(f["file"], f["line"]) for f in found] == [("vllm/model_executor/models/interfaces.py", 8)]
    alone = subprocess.run([sys.executable, "-m", "tracer", "scan", str(EXAMPLE), "--draft-framework", "sglang"],
                           capture_output=True, text=True)
    assert alone.returncode == 2 and "--draft-framework needs --target-config" in alone.stderr


@pytest.mark.real
def test_minimax_m2_draft_trained_on_sglang_served_by_vllm_0_33(tmp_path, release_cache):
    """MiniMax-M2's shape (62 layers, hidden 3072) and a draft whose ids [2, 31, 59] were
    meant as SGLang's outputs of layers 2, 31, 59. vLLM 0.33.0 stores them as given
    (interfaces.py:1617) and minimax_m2.py's loop captures the hidden state entering those
    layers: the outputs of layers 1, 30, 58."""
    target, draft = _configs(
        tmp_path, {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "num_hidden_layers": 62,
                   "hidden_size": 3072},
        {"architectures": ["Eagle3MiniMaxM2ForCausalLM"], "hidden_size": 3072,
         "eagle_aux_hidden_state_layer_ids": [2, 31, 59]})
    root = release_dir("0.33.0", "vllm")
    run = _explain(root, target, draft, "--draft-framework", "sglang", "--format", "json", cache=release_cache)
    assert run.returncode == 1, run.stderr
    result = json.loads(run.stdout)
    assert result["entry"] == "vllm.model_executor.models.minimax_m2.MiniMaxM2ForCausalLM"
    assert result["effective_layers"] == [1, 30, 58]
    assert [(f["slug"], f["file"], f["line"]) for f in result["findings"]] == [
        ("convention-mismatch", "vllm/model_executor/models/interfaces.py", 1617)]
    message = result["findings"][0]["message"]
    assert "the outputs of layers [2, 31, 59]" in message and "outputs of layers [1, 30, 58]" in message
    assert "one layer early" in message
    assert result["findings"][0]["hint"].startswith("give vllm the ids [3, 32, 60]")
    # read in vLLM's own convention the same ids are what the draft asks for: no finding
    plain = _explain(root, target, draft, "--format", "json", cache=release_cache)
    assert plain.returncode == 0 and json.loads(plain.stdout)["findings"] == []
