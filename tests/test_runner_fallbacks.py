"""Runner-side fallbacks and DSpark verdicts on real SGLang releases (issue #15),
each line read in the unpacked wheel.

- 0.5.23 model_executor/model_runner_components/spec_aux_hidden_state.py:186-196:
  `try: eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None) ...
  config.eagle_aux_hidden_state_layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
  except Exception: config.eagle_aux_hidden_state_layer_ids = None` (no log; the setter
  then captures its default layers). 0.5.16 has the same at :92 under a bare `except:`;
  0.5.6 in ModelRunner.initialize (model_runner.py:548, bare `except:`).
- 0.5.23 speculative/dflash_utils.py:568-571: DFlashDraftConfig.resolve_target_layer_ids,
  `if self.target_layer_ids is None: ... return build_target_layer_ids(...)`, no log
  (sglang #37475: the right count, the wrong layers). 0.5.16: :422.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real


def _runner_fallbacks(scan: dict) -> set[tuple[str, str, int]]:
    return {(f["protocol"], f["file"], f["line"]) for f in scan["findings"]
            if f["slug"] == "silent-fallback" and f["entry"] is None}


def test_runner_fallbacks_on_0_5_23(scanned_release):
    scan = scanned_release("0.5.23")
    assert _runner_fallbacks(scan) == {
        ("sglang-eagle3", "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py", 195),
        ("sglang-dflash", "sglang/srt/speculative/dflash_utils.py", 571),
        ("sglang-dspark", "sglang/srt/speculative/dflash_utils.py", 571),
    }
    eagle = next(f for f in scan["findings"] if f["slug"] == "silent-fallback" and f["line"] == 195)
    assert eagle["severity"] == "warning"
    assert "`eagle_config.eagle_aux_hidden_state_layer_ids` under `except Exception`" in eagle["message"]
    assert "makes it None and logs nothing" in eagle["message"]
    assert eagle["chain"] == ["sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state."
                              "_resolve_eagle_aux_hidden_state"]
    dflash = next(f for f in scan["findings"] if f["slug"] == "silent-fallback" and f["line"] == 571
                  and f["protocol"] == "sglang-dflash")
    assert "build_target_layer_ids(" in dflash["message"] and "self.target_layer_ids is None" in dflash["message"]
    assert "dflash_config.target_layer_ids" in dflash["message"]


@pytest.mark.parametrize("version,site", [
    ("0.5.16", ("sglang-eagle3", "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py", 92)),
    ("0.5.16", ("sglang-dflash", "sglang/srt/speculative/dflash_utils.py", 422)),
    ("0.5.6", ("sglang-eagle3", "sglang/srt/model_executor/model_runner.py", 548)),
])
def test_runner_fallbacks_on_older_releases(scanned_release, version, site):
    assert site in _runner_fallbacks(scanned_release(version))


def _dspark(scan: dict) -> dict[str, dict]:
    return {m["entry"].rsplit(".", 1)[-1]: m for m in scan["models"]
            if m["protocol"] == "sglang-dspark" and m["verdict"] != "missing"}


def test_dspark_verdicts_on_0_5_23(scanned_release):
    """attention_backend_setup.py:63-64 `if is_dspark and hasattr(model, "set_dspark_layers_to_capture"):
    model.set_dspark_layers_to_capture(dflash_target_layer_ids)`, before graph capture."""
    scan = scanned_release("0.5.23")
    models = _dspark(scan)
    assert set(models) == {"BailingMoeV3ForCausalLM", "DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN",
                           "KimiK3ForConditionalGeneration", "KimiK3LinearForCausalLM", "KimiLinearForCausalLM",
                           "MiniMaxM3SparseForConditionalGeneration"}
    # kimi_linear.py:803-809 writes self.model.dspark_layers_to_capture, read in KimiLinearModel.forward (727)
    kimi = models["KimiLinearForCausalLM"]
    assert kimi["verdict"] == "ok"
    assert [(h["kind"], h["line"]) for h in kimi["chain"]] == [("setter", 803), ("write", 809), ("read", 727)]
    # deepseek_v4.py:4853-4861; the wrapper Kimi-K3 delegates to its linear LM (3568 -> 3054 -> 3066)
    assert models["DeepseekV4ForCausalLM"]["verdict"] == "ok"
    k3 = models["KimiK3ForConditionalGeneration"]
    assert [(h["kind"], h["line"]) for h in k3["chain"] if h["kind"] != "read"] == [
        ("setter", 3568), ("delegate", 3054), ("write", 3066)]
    # the MTP head inherits the setter but self.model = DeepseekV4ModelNextN (deepseek_v4_nextn.py:272)
    # never reads dspark_layers_to_capture: a draft head, not judged, its chain alone broken
    nextn = models["DeepseekV4ForCausalLMNextN"]
    assert (nextn["verdict"], nextn["chain_verdict"], nextn["findings"]) == ("draft", "broken", ["dead-write"])
    site = next(s for s in scan["call_sites"] if s["protocol"] == "sglang-dspark")
    assert (site["file"].rsplit("/", 1)[-1], site["line"], site["passes_ids"], site["before_graph_capture"]) == (
        "attention_backend_setup.py", 64, True, True)


def test_dspark_verdicts_on_0_5_16(scanned_release):
    """Only DeepSeek-V4 has the setter (deepseek_v4.py:2449-2457; DeepseekV4Model.forward reads it at
    2295); the runner calls it at attention_backend_setup.py:57."""
    scan = scanned_release("0.5.16")
    models = _dspark(scan)
    assert set(models) == {"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN"}
    v4 = models["DeepseekV4ForCausalLM"]
    assert v4["verdict"] == "ok"
    assert [(h["kind"], h["line"]) for h in v4["chain"]] == [("setter", 2449), ("write", 2457), ("read", 2295)]
    assert models["DeepseekV4ForCausalLMNextN"]["verdict"] == "draft"
    assert [(s["line"], s["before_graph_capture"]) for s in scan["call_sites"]
            if s["protocol"] == "sglang-dspark"] == [(57, True)]


def test_capture_skipped_on_the_two_batch_overlap_path_0_5_23(scanned_release):
    """qwen2_moe.py:1179-1186 `if forward_batch.can_run_tbo: hidden_states = model_forward_stages(
    layers=self.layers, enable_tbo=True, ...)` else the capturing loop; minimax_m2.py:981 the same;
    deepseek_v2.py:3202-3203 runs the layers after first_k_dense_replace through model_forward_stages
    when TBO shortened the capturing loop (3166-3173). Verdicts stay ok."""
    scan = scanned_release("0.5.23")
    skipped = {(f["file"].rsplit("/", 1)[-1], f["line"]) for f in scan["findings"]
               if f["slug"] == "capture-skipped-on-branch" and f["protocol"] == "sglang-eagle3"
               and f["severity"] == "warning"}
    assert {("qwen2_moe.py", 1179), ("minimax_m2.py", 981), ("minimax_m3.py", 1923),
            ("deepseek_v2.py", 3202)} <= skipped
    qwen = next(f for f in scan["findings"] if f["slug"] == "capture-skipped-on-branch"
                and f["file"].endswith("qwen2_moe.py") and f["severity"] == "warning"
                and f["protocol"] == "sglang-eagle3")
    assert "`forward_batch.can_run_tbo`" in qwen["message"] and "(line 1180)" in qwen["message"]
    models = {m["entry"].rsplit(".", 1)[-1]: m for m in scan["models"] if m["protocol"] == "sglang-eagle3"}
    assert models["Qwen2MoeForCausalLM"]["verdict"] == "ok"
    assert "capture-skipped-on-branch" in models["Qwen2MoeForCausalLM"]["findings"]
    # MiMo-V2's overlap path is taken only when nothing is to be captured
    # (`forward_batch.can_run_tbo and not self.layers_to_capture`, mimo_v2.py:1155): quiet
    assert not [f for f in scan["findings"] if f["slug"] == "capture-skipped-on-branch"
                and f["file"].endswith("mimo_v2.py")]
