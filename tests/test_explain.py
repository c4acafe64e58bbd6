"""Effective layers from real configs: explain_model on a small framework-shaped
tree written here (every finding slug must fire, and a clean chain must stay
quiet), then on real SGLang releases (marked `real`), asserting the exact
layer lists and the runtime truth of runtime-harness-notes.md."""

import json
import re
import struct
from pathlib import Path

import pytest
from conftest import release_dir

from tracer.config.packs import load_protocols
from tracer.effective import configs
from tracer.effective.explain import explain_model as _explain_model
from tracer.effective.explain import stage_ranges
from tracer.effective.sources import Sources
from tracer.present.explain_text import format_explanation
from tracer.present.scan_json import call_site_from_json, model_from_json
from tracer.resolve.tree import open_project

CONFIGS = Path(__file__).parent / "data" / "configs"
EXPECTATIONS = Path(__file__).parent / "data" / "real_expectations.json"
EAGLE3 = load_protocols(["sglang-eagle3"])[0]
_PROJECTS: dict = {}


def load_target_config(path):
    return configs.load_target_config(path, text_keys=EAGLE3.target_text_config_keys)


def load_draft_config(path):
    return configs.load_draft_config(path, ids_keys=EAGLE3.draft_ids_keys, count_keys=EAGLE3.draft_count_keys)


def sources(root) -> Sources:
    key = str(root)
    if key not in _PROJECTS:
        _PROJECTS[key] = Sources(*open_project(root, [EAGLE3], use_cache=False))
    return _PROJECTS[key]


def explain_model(root, model, call_sites, target, draft, pp=1, protocol=EAGLE3):
    """explain on a chain written as the scan JSON writes it (hops by qualname, file, line)."""
    typed = model_from_json(dict({"file": "", "line": 0, "reason": "", "verdict": "ok"}, **model), ())
    sites = [call_site_from_json(s) for s in call_sites]
    _PROJECTS.pop(str(root), None) if str(root).startswith("/tmp") else None
    return _explain_model(sources(root), typed, sites, target, draft, protocol, pp=pp)

TOY = '''\
import torch


class ToyModel(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch):
        hidden_states = self.embed_tokens(input_ids)
        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = self.layers[i](hidden_states)
        if not self.pp_group.is_last_rank:
            return hidden_states
        return hidden_states, aux_hidden_states


class ToyForCausalLM(torch.nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


class ToyNoShiftForCausalLM(ToyForCausalLM):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            layer_ids = [1, 2, 3]
        self.model.layers_to_capture = list(layer_ids)


class ToyForConditionalGeneration(torch.nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)
'''

PP_UTILS = '''\
import os


def get_pp_indices(num_hidden_layers, pp_rank, pp_size):
    partition_list_str = os.getenv("SGLANG_PP_LAYER_PARTITION", None)
    if partition_list_str is not None:
        partitions = [int(layer) for layer in partition_list_str.split(",")]
        start_layer = sum(partitions[:pp_rank])
        end_layer = start_layer + partitions[pp_rank]
    else:
        layers_per_partition = num_hidden_layers // pp_size
        start_layer = pp_rank * layers_per_partition
        end_layer = start_layer + layers_per_partition
        if pp_rank == pp_size - 1:
            end_layer = num_hidden_layers
    return (start_layer, end_layer)
'''


def line_of(text: str, needle: str, nth: int = 1) -> int:
    count = 0
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            count += 1
            if count == nth:
                return number
    raise AssertionError(needle)


@pytest.fixture
def toy(tmp_path):
    models = tmp_path / "sglang" / "srt" / "models"
    models.mkdir(parents=True)
    (models / "toy.py").write_text(TOY)
    distributed = tmp_path / "sglang" / "srt" / "distributed"
    distributed.mkdir(parents=True)
    (distributed / "utils.py").write_text(PP_UTILS)
    return tmp_path


FILE = "sglang/srt/models/toy.py"
SETTER = "def set_eagle3_layers_to_capture"


def toy_model(entry="ToyForCausalLM", setter_nth=1):
    read = {"kind": "read", "qualname": "sglang.srt.models.toy.ToyModel.forward", "file": FILE,
            "line": line_of(TOY, "if i in self.layers_to_capture")}
    write = {"kind": "write", "qualname": "sglang.srt.models.toy.ToyModel.layers_to_capture", "file": FILE,
             "line": line_of(TOY, "self.model.layers_to_capture =", 1)}
    setter = {"kind": "setter", "qualname": f"sglang.srt.models.toy.{entry}.set_eagle3_layers_to_capture",
              "file": FILE, "line": line_of(TOY, SETTER, setter_nth)}
    return {"entry": f"sglang.srt.models.toy.{entry}", "protocol": "sglang-eagle3", "verdict": "ok",
            "chain": [setter, write, read]}


def wrapper_model():
    model = toy_model()
    outer = {"kind": "setter", "qualname": "sglang.srt.models.toy.ToyForConditionalGeneration.set_eagle3_layers_to_capture",
             "file": FILE, "line": line_of(TOY, SETTER, 3)}
    inner = dict(model["chain"][0], kind="delegate", call_file=FILE,
                 call_line=line_of(TOY, "self.language_model.set_eagle3"), passes_ids=True)
    model["entry"] = "sglang.srt.models.toy.ToyForConditionalGeneration"
    model["chain"] = [outer, inner] + model["chain"][1:]
    return model


def target(tmp_path, layers, hidden=64, nested=False, name="target"):
    folder = tmp_path / name
    folder.mkdir()
    config = {"architectures": ["ToyForCausalLM"], "num_hidden_layers": layers, "hidden_size": hidden}
    if nested:
        config = {"architectures": ["ToyForConditionalGeneration"], "text_config": config}
    (folder / "config.json").write_text(json.dumps(config))
    return load_target_config(folder)


def draft(tmp_path, ids=None, key="eagle_config", fc_states=None, hidden=64, name="draft", **extra):
    folder = tmp_path / name
    folder.mkdir()
    config = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": hidden, **extra}
    if ids is not None:
        if key == "eagle_config":
            config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids}
        else:
            config[key] = ids
    (folder / "config.json").write_text(json.dumps(config))
    if fc_states is not None:
        raw = json.dumps({"fc.weight": {"dtype": "BF16", "shape": [hidden, fc_states * hidden],
                                        "data_offsets": [0, 2 * hidden * fc_states * hidden]}}).encode()
        (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(2 * hidden * fc_states * hidden))
    return load_draft_config(folder)


def slugs(result):
    return [f["slug"] for f in result["findings"]]


# ------------------------------------------------------------------ quiet


def test_clean_chain_has_no_findings(toy, tmp_path):
    result = explain_model(toy, toy_model(), [], target(tmp_path, 8), draft(tmp_path, [1, 3, 5], fc_states=3))
    assert result["requested_ids"] == [1, 3, 5]
    assert result["ids_key"] == "eagle_config.eagle_aux_hidden_state_layer_ids"
    assert result["layers_to_capture"] == [2, 4, 6]
    assert result["captured_indices"] == [2, 4, 6]
    assert result["effective_layers"] == [1, 3, 5]
    assert result["expected_aux"] == {"count": 3, "source": "fc.weight input width 192 = 3 x 64"}
    assert result["findings"] == []
    assert result["graph_layers"] is None  # no call sites: the graph path is not computed
    text = format_explanation(result)
    assert "captures the input of layers [2, 4, 6], i.e. the output of layer 1, layer 3, layer 5" in text
    assert "No findings." in text


def test_wrapper_delegates_with_text_config(toy, tmp_path):
    result = explain_model(toy, wrapper_model(), [], target(tmp_path, 8, nested=True), draft(tmp_path, None))
    # The inner setter reads num_hidden_layers from text_config: fallback [2, 4, 5].
    assert result["layers_to_capture"] == [2, 4, 5]
    assert result["effective_layers"] == [1, 3, 4]
    assert "self.config = the text config" in result["steps"][2]
    assert "passes None to self.language_model.set_eagle3_layers_to_capture" in result["steps"][1]


# ------------------------------------------------------------------ each slug fires


def test_fallback_triggered_when_draft_names_no_ids(toy, tmp_path):
    result = explain_model(toy, toy_model(), [], target(tmp_path, 32, hidden=4096), draft(tmp_path, None, hidden=4096))
    assert result["layers_to_capture"] == [2, 16, 29]
    assert result["effective_layers"] == [1, 15, 28]
    [finding] = result["findings"]
    assert finding["slug"] == "fallback-triggered"
    assert "names no layer ids" in finding["message"] and "[1, 15, 28]" in finding["message"]
    assert (finding["file"], finding["line"]) == (FILE, line_of(TOY, "self.model.layers_to_capture ="))


def test_fallback_triggered_for_top_level_ids(toy, tmp_path):
    d = draft(tmp_path, [1, 15, 28], key="eagle_aux_hidden_state_layer_ids", hidden=4096)
    result = explain_model(toy, toy_model(), [], target(tmp_path, 32, hidden=4096), d)
    assert result["requested_ids"] == [1, 15, 28] and result["runner_ids"] is None
    assert result["effective_layers"] == [1, 15, 28]  # the fallback happens to match here
    assert slugs(result) == ["fallback-triggered"]
    assert "which the runner does not read" in result["findings"][0]["message"]


def test_offset_mismatch(toy, tmp_path):
    model = toy_model("ToyNoShiftForCausalLM", setter_nth=2)
    result = explain_model(toy, model, [], target(tmp_path, 8), draft(tmp_path, [2, 4, 6]))
    assert result["layers_to_capture"] == [2, 4, 6]
    assert result["effective_layers"] == [1, 3, 5]
    assert slugs(result) == ["offset-mismatch"]
    message = result["findings"][0]["message"]
    assert "[2, 4, 6]" in message and "[3, 5, 7]" in message and "[1, 3, 5]" in message


def test_unreachable_layer_and_count_mismatch(toy, tmp_path):
    # Runtime truth: ids [0, 2, 5] on a 6-layer qwen2 -> [1, 3, 6] -> outputs [0, 2].
    result = explain_model(toy, toy_model(), [], target(tmp_path, 6), draft(tmp_path, [0, 2, 5]))
    assert result["layers_to_capture"] == [1, 3, 6]
    assert result["effective_layers"] == [0, 2]
    assert slugs(result) == ["unreachable-layer", "count-mismatch"]
    unreachable = result["findings"][0]
    assert "[6]" in unreachable["message"] and unreachable["line"] == line_of(TOY, "for i in range(self.start_layer")


def test_duplicate_fallback_entries_collapse(toy, tmp_path):
    result = explain_model(toy, toy_model(), [], target(tmp_path, 6), draft(tmp_path, None, num_aux_hidden_states=3))
    assert result["layers_to_capture"] == [2, 3, 3]
    assert result["effective_layers"] == [1, 2]
    assert slugs(result) == ["fallback-triggered", "count-mismatch"]
    assert "repeats an index" in result["findings"][1]["message"]


def test_count_mismatch_from_fc_width(toy, tmp_path):
    result = explain_model(toy, toy_model(), [], target(tmp_path, 8), draft(tmp_path, [1, 3, 5], fc_states=4))
    assert slugs(result) == ["count-mismatch"]
    assert "expects 4 aux states" in result["findings"][0]["message"]
    assert "3 x 64 = 192 inputs instead of 256" in result["findings"][0]["message"]


def test_count_mismatch_for_a_draft_of_another_target(toy, tmp_path):
    d = draft(tmp_path, [1, 3, 5], target_hidden_size=7168)
    result = explain_model(toy, toy_model(), [], target(tmp_path, 8), d)
    assert "count-mismatch" in slugs(result)
    assert "hidden size 7168" in result["findings"][0]["message"]


def test_pipeline_guard(toy, tmp_path):
    # 8 layers on 2 stages: rank 0 runs 0..3, rank 1 runs 4..7; ids [1, 5] -> [2, 6].
    result = explain_model(toy, toy_model(), [], target(tmp_path, 8), draft(tmp_path, [1, 5]), pp=2)
    assert result["ranks"] == [{"rank": 0, "layers": [0, 4], "returned_early": True},
                               {"rank": 1, "layers": [4, 8], "returned_early": False}]
    assert result["layers_to_capture"] == [2, 6]
    assert result["effective_layers"] == [5]
    assert slugs(result) == ["pipeline-guard", "count-mismatch"]
    guard = result["findings"][0]
    assert "[2]" in guard["message"] and "returns early off the last rank" in guard["message"]
    assert guard["line"] == line_of(TOY, "            return", 2)


def test_pipeline_ranges_cannot_be_computed(toy, tmp_path):
    """What cannot be computed is unknown, not a finding."""
    (toy / "sglang" / "srt" / "distributed" / "utils.py").unlink()
    result = explain_model(toy, toy_model(), [], target(tmp_path, 8), draft(tmp_path, [1, 5]), pp=2)
    assert "pipeline-guard" not in slugs(result)
    assert any("could not be computed" in u["why"] for u in result["unknowns"])
    assert result["effective_layers"] is None


def test_stage_ranges_use_the_tree_s_own_function(toy):
    ranges, how = stage_ranges(sources(toy), EAGLE3, 10, 3)
    assert ranges == [(0, 3), (3, 6), (6, 10)]
    assert "get_pp_indices" in how


# ------------------------------------------------------------------ call order and CUDA graphs


def sites(*calls):
    return [{"protocol": "sglang-eagle3", "caller": c[0], "file": "runner.py", "line": c[1],
             "passes_ids": c[2], "before_graph_capture": c[3]} for c in calls]


def test_graphs_keep_the_fallback_when_the_ids_call_comes_after_capture(toy, tmp_path):
    calls = sites(("ModelRunner.initialize", 552, True, False), ("CudaGraphRunner.__init__", 339, False, True))
    result = explain_model(toy, toy_model(), calls, target(tmp_path, 61), draft(tmp_path, [2, 30, 58]))
    # Calls before graph capture ran first: no ids -> fallback, captured into the graphs.
    assert [c["line"] for c in result["calls"]] == [339, 552]
    assert result["layers_to_capture"] == [3, 31, 59]
    assert result["effective_layers"] == [2, 30, 58]
    assert result["graph_layers_to_capture"] == [2, 30, 58]
    assert result["graph_layers"] == [1, 29, 57]
    assert result["graph_layers_differ"] is True
    assert slugs(result) == ["fallback-triggered"]
    assert "replayed graphs capture the outputs of layers [1, 29, 57]" in result["findings"][0]["message"]
    text = format_explanation(result)
    assert "Replayed CUDA graphs capture the outputs of: layer 1, layer 29, layer 57" in text


def test_explicit_order_and_same_layers(toy, tmp_path):
    calls = sites(("a", 10, True, True), ("b", 20, True, False))
    calls[0]["order"], calls[1]["order"] = 1, 2
    result = explain_model(toy, toy_model(), calls, target(tmp_path, 8), draft(tmp_path, [1, 3, 5]))
    assert result["graph_layers"] == result["effective_layers"] == [1, 3, 5]
    assert result["graph_layers_differ"] is False and result["findings"] == []


def test_last_call_without_ids(toy, tmp_path):
    calls = sites(("a", 10, True, True), ("b", 20, False, False))
    result = explain_model(toy, toy_model(), calls, target(tmp_path, 8), draft(tmp_path, [1, 3, 5]))
    assert result["effective_layers"] == [1, 3, 4]
    assert result["graph_layers"] == [1, 3, 5]
    assert slugs(result) == ["fallback-triggered", "fallback-triggered"]
    assert "passes no ids" in result["findings"][0]["message"]


def test_call_of_unknown_kind_leaves_the_state_unknown(toy, tmp_path):
    calls = sites(("a", 10, True, False), ("b", 20, None, False))
    result = explain_model(toy, toy_model(), calls, target(tmp_path, 8), draft(tmp_path, [1, 3, 5]))
    assert result["effective_layers"] is None
    assert "passes ids is unknown" in result["layers_to_capture"]["why"]


def test_unknown_is_reported_not_guessed(toy, tmp_path):
    # A target config without num_hidden_layers in the model's own config (wrapper's top level).
    model = toy_model()
    t = target(tmp_path, 8, nested=True)
    result = explain_model(toy, model, [], t, draft(tmp_path, None))
    assert result["layers_to_capture"][0] == 2
    assert result["effective_layers"] is None
    assert any("num_hidden_layers" in u["why"] for u in result["unknowns"])
    assert "could not be determined" in format_explanation(result)


# ------------------------------------------------------------------ scan JSON


def test_result_is_plain_json(toy, tmp_path):
    calls = sites(("a", 10, False, True), ("b", 20, True, False))
    result = explain_model(toy, toy_model(), calls, target(tmp_path, 8, nested=True), draft(tmp_path, [1, 3, 5]))
    assert json.loads(json.dumps(result)) == result
    assert "(each id +1)" in result["steps"][-1]


def test_annotate_scan_adds_layers_and_findings(toy, tmp_path):
    from tracer.effective.annotate import annotate_scan
    from tracer.present.scan_json import from_json, to_json

    model = toy_model()
    scan = from_json({"root": str(toy), "protocols": ["sglang-eagle3"], "models": [dict(model, file=FILE, line=1)],
                      "findings": [], "call_sites": sites(("ModelRunner.initialize", 552, True, False),
                                                         ("CudaGraphRunner.__init__", 339, False, True))})
    t, d = target(tmp_path, 61), draft(tmp_path, [2, 30, 57])
    out = to_json(annotate_scan(scan, [EAGLE3], t.path, d.path, use_cache=False))
    [annotated] = out["models"]
    assert annotated["effective_layers"] == [2, 30, 57]
    assert annotated["graph_layers"] == [1, 29, 57]
    assert [f["slug"] for f in out["findings"]] == ["fallback-triggered"]
    assert out["findings"][0]["entry"] == model["entry"] and out["findings"][0]["line"] == 339
    assert scan.findings == () and scan.models[0].effective_layers is None  # the input is not changed
    # A config naming an architecture the scan does not know is an input error.
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"architectures": ["Nope"], "num_hidden_layers": 4}))
    out = to_json(annotate_scan(scan, [EAGLE3], other, draft(tmp_path, [1], name="d2").path, use_cache=False))
    assert "no scanned entry class matches ['Nope']" in out["input_errors"][0]["reason"]


def test_explain_command(toy, tmp_path):
    from click.testing import CliRunner

    from tracer.cli import main

    # the tree as a release has it: the model class registered, its inner model built in __init__
    registered = TOY.replace("class ToyForCausalLM(torch.nn.Module):\n", "class ToyForCausalLM(torch.nn.Module):\n"
                             "    def __init__(self, config):\n        super().__init__()\n"
                             "        self.model = ToyModel(config)\n\n")
    (toy / "sglang" / "srt" / "models" / "toy.py").write_text(registered + "\n\nEntryClass = [ToyForCausalLM]\n")
    t = target(tmp_path, 6)
    d = draft(tmp_path, [0, 2, 5])
    runner = CliRunner()

    result = runner.invoke(main, ["explain", str(toy), "--no-cache", "--target-config", str(t.path),
                                  "--draft-config", str(d.path.parent)])
    assert result.exit_code == 1, result.output  # error findings
    assert "unreachable-layer [error]" in result.output
    # scan's line shape: path:line:col: slug [severity] protocol: message, the hint below
    found = re.search(r"^(\S+\.py):(\d+):(\d+): unreachable-layer \[error\] sglang-eagle3: .+\n    hint: \S",
                      result.output, re.M)
    assert found, result.output
    assert "Eager path captures the outputs of: layer 0, layer 2" in result.output
    base = ["explain", str(toy), "--no-cache"]
    result = runner.invoke(main, base + ["--target-config", str(t.path), "--draft-config", str(d.path), "--format", "json"])
    assert json.loads(result.output)["effective_layers"] == [0, 2]
    result = runner.invoke(main, base + ["--target-config", str(t.path), "--draft-config", str(d.path), "--entry", "Nope"])
    assert result.exit_code == 2 and "entry class matches Nope" in result.output
    (tmp_path / "bad.json").write_text("{")
    result = runner.invoke(main, base + ["--target-config", str(tmp_path / "bad.json"), "--draft-config", str(d.path)])
    assert result.exit_code == 2 and "not valid JSON" in result.output


def test_format_shows_pipeline_stages(toy, tmp_path):
    result = explain_model(toy, toy_model(), [], target(tmp_path, 8), draft(tmp_path, [1, 5]), pp=2)
    text = format_explanation(result)
    assert "rank 0: layers 0..3 (the setter returns early here)" in text
    assert "rank 1: layers 4..7 (the setter runs here)" in text


def test_other_protocols_are_not_guessed(toy, tmp_path):
    model = dict(toy_model(), protocol="sglang-dflash")
    result = explain_model(toy, model, [], target(tmp_path, 8), draft(tmp_path, [1, 3, 5]))
    assert result["effective_layers"] is None and result["findings"] == []
    assert "explain was given sglang-eagle3; this chain is sglang-dflash" in result["unknowns"][0]["why"]


# ------------------------------------------------------------------ real releases

def needs_cache(test):
    return test


def release(version):
    return release_dir(version)


def expected_model(version, entry):
    data = json.loads(EXPECTATIONS.read_text())[version]
    return next(m for m in data["models"] if m["entry"].endswith(entry)), data["call_sites"]


def chain(setter, write, read, delegate=None):
    def hop(kind, where, **extra):
        return {"kind": kind, "qualname": where[0], "file": where[1], "line": where[2], **extra}

    hops = [hop("setter", setter)]
    if delegate:
        hops.append(hop("delegate", delegate, passes_ids=True))
    hops += [hop("write", write), hop("read", read)]
    return {"entry": setter[0].rsplit(".", 1)[0], "protocol": "sglang-eagle3", "verdict": "ok", "chain": hops}


M = "sglang/srt/models/"
REAL_CHAINS = {
    ("0.5.6", "qwen2"): chain(("sglang.srt.models.qwen2.Qwen2ForCausalLM.set_eagle3_layers_to_capture", M + "qwen2.py", 652),
                              ("sglang.srt.models.qwen2.Qwen2Model.layers_to_capture", M + "qwen2.py", 659),
                              ("sglang.srt.models.qwen2.Qwen2Model.forward", M + "qwen2.py", 357)),
    ("0.5.23", "qwen2"): chain(("sglang.srt.models.qwen2.Qwen2ForCausalLM.set_eagle3_layers_to_capture", M + "qwen2.py", 781),
                               ("sglang.srt.models.qwen2.Qwen2Model.layers_to_capture", M + "qwen2.py", 788),
                               ("sglang.srt.models.qwen2.Qwen2Model.forward", M + "qwen2.py", 462)),
    ("0.5.6", "llama"): chain(("sglang.srt.models.llama.LlamaForCausalLM.set_eagle3_layers_to_capture", M + "llama.py", 730),
                              ("sglang.srt.models.llama.LlamaModel.layers_to_capture", M + "llama.py", 737),
                              ("sglang.srt.models.llama.LlamaModel.forward", M + "llama.py", 339)),
    ("0.5.23", "llama"): chain(("sglang.srt.models.llama.LlamaForCausalLM.set_eagle3_layers_to_capture", M + "llama.py", 929),
                               ("sglang.srt.models.llama.LlamaModel.layers_to_capture", M + "llama.py", 936),
                               ("sglang.srt.models.llama.LlamaModel.forward", M + "llama.py", 492)),
    ("0.5.6", "deepseek_v2"): chain(("sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM.set_eagle3_layers_to_capture", M + "deepseek_v2.py", 4089),
                                    ("sglang.srt.models.deepseek_v2.DeepseekV2Model.layers_to_capture", M + "deepseek_v2.py", 4096),
                                    ("sglang.srt.models.deepseek_v2.DeepseekV2Model.forward", M + "deepseek_v2.py", 3288)),
    ("0.5.16", "deepseek_v2"): chain(("sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM.set_eagle3_layers_to_capture", M + "deepseek_v2.py", 2915),
                                     ("sglang.srt.models.deepseek_v2.DeepseekV2Model.layers_to_capture", M + "deepseek_v2.py", 2922),
                                     ("sglang.srt.models.deepseek_v2.DeepseekV2Model.forward", M + "deepseek_v2.py", 2613)),
    ("0.5.23", "deepseek_v2"): chain(("sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM.set_eagle3_layers_to_capture", M + "deepseek_v2.py", 3458),
                                     ("sglang.srt.models.deepseek_v2.DeepseekV2Model.layers_to_capture", M + "deepseek_v2.py", 3465),
                                     ("sglang.srt.models.deepseek_v2.DeepseekV2Model.forward", M + "deepseek_v2.py", 3194)),
    ("0.5.16", "kimi_k25"): chain(("sglang.srt.models.kimi_k25.KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture", M + "kimi_k25.py", 921),
                                  ("sglang.srt.models.deepseek_v2.DeepseekV2Model.layers_to_capture", M + "deepseek_v2.py", 2922),
                                  ("sglang.srt.models.deepseek_v2.DeepseekV2Model.forward", M + "deepseek_v2.py", 2613),
                                  delegate=("sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM.set_eagle3_layers_to_capture", M + "deepseek_v2.py", 2915)),
    ("0.5.23", "kimi_k25"): chain(("sglang.srt.models.kimi_k25.KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture", M + "kimi_k25.py", 928),
                                  ("sglang.srt.models.deepseek_v2.DeepseekV2Model.layers_to_capture", M + "deepseek_v2.py", 3465),
                                  ("sglang.srt.models.deepseek_v2.DeepseekV2Model.forward", M + "deepseek_v2.py", 3194),
                                  delegate=("sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM.set_eagle3_layers_to_capture", M + "deepseek_v2.py", 3458)),
    ("0.5.23", "gpt_oss"): chain(("sglang.srt.models.gpt_oss.GptOssForCausalLM.set_eagle3_layers_to_capture", M + "gpt_oss.py", 1337),
                                 ("sglang.srt.models.gpt_oss.GptOssModel.layers_to_capture", M + "gpt_oss.py", 1344),
                                 ("sglang.srt.models.gpt_oss.GptOssModel.forward", M + "gpt_oss.py", 719)),
}


def tiny(tmp_path, layers, ids, name):
    """The runtime harness's tiny configs: L layers, hidden 64."""
    t = target(tmp_path, layers, name=f"t-{name}")
    d = draft(tmp_path, ids, name=f"d-{name}")
    return t, d


# Runtime truth (runtime-harness-notes.md, "What SGLang actually captures"): L=6 unless given.
RUNTIME_TRUTH = [
    # (version, family, ids, layers, layers_to_capture, captured outputs)
    ("0.5.6", "qwen2", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
    ("0.5.23", "qwen2", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
    ("0.5.6", "llama", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
    ("0.5.23", "llama", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
    ("0.5.6", "deepseek_v2", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
    ("0.5.23", "deepseek_v2", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
    ("0.5.23", "deepseek_v2", [0, 2, 4], 6, [0, 2, 4], [-1, 1, 3]),
    ("0.5.6", "deepseek_v2", [0, 2, 4], 6, [1, 3, 5], [0, 2, 4]),
    ("0.5.23", "deepseek_v2", [0, 2, 5], 6, [0, 2, 5], [-1, 1, 4]),
    ("0.5.6", "qwen2", [0, 2, 5], 6, [1, 3, 6], [0, 2]),
    ("0.5.23", "qwen2", [0, 2, 5], 6, [1, 3, 6], [0, 2]),
    ("0.5.6", "deepseek_v2", [0, 2, 5], 6, [1, 3, 6], [0, 2]),
    ("0.5.6", "qwen2", None, 6, [2, 3, 3], [1, 2]),
    ("0.5.23", "qwen2", None, 6, [2, 3, 3], [1, 2]),
    ("0.5.6", "qwen2", None, 8, [2, 4, 5], [1, 3, 4]),
    ("0.5.23", "deepseek_v2", None, 8, [2, 4, 5], [1, 3, 4]),
    # Not in the harness table; 0.5.16 shares 0.5.23's first-id rule.
    ("0.5.16", "deepseek_v2", [0, 2, 4], 6, [0, 2, 4], [-1, 1, 3]),
    ("0.5.16", "deepseek_v2", [1, 2, 3], 6, [2, 3, 4], [1, 2, 3]),
]


@pytest.mark.real
@needs_cache
@pytest.mark.parametrize("version, family, ids, layers, ltc, outputs", RUNTIME_TRUTH)
def test_runtime_truth(tmp_path, version, family, ids, layers, ltc, outputs):
    root = release(version)
    t, d = tiny(tmp_path, layers, ids, "x")
    result = explain_model(root, REAL_CHAINS[(version, family)], [], t, d)
    assert result["layers_to_capture"] == ltc
    assert result["effective_layers"] == outputs
    assert [u for u in result["unknowns"] if "loop" in u["why"] or "capture" in u["why"]] == []


@pytest.mark.real
@needs_cache
def test_deepseek_0523_fallback_on_six_layers_captures_two(tmp_path):
    # The harness saw AuxHiddenStatePacker raise "captured 2 of 3"; statically: [2, 3, 3] -> 2 states.
    t, d = tiny(tmp_path, 6, None, "ds")
    result = explain_model(release("0.5.23"), REAL_CHAINS[("0.5.23", "deepseek_v2")], [], t, d)
    assert result["layers_to_capture"] == [2, 3, 3]
    assert result["effective_layers"] == [1, 2]
    assert slugs(result) == ["fallback-triggered", "count-mismatch"]


@pytest.mark.real
@needs_cache
def test_kimi_k25_across_releases(tmp_path):
    """Kimi-K2.5 (61 layers, 7168) with a draft trained on [2, 30, 58] and fc 3 x 7168."""
    t = load_target_config(CONFIGS / "kimi-k2.5")
    d = draft(tmp_path, [2, 30, 58], hidden=7168, fc_states=3)
    for version in ("0.5.16", "0.5.23"):
        result = explain_model(release(version), REAL_CHAINS[(version, "kimi_k25")], [], t, d)
        # The wrapper passes the ids on; DeepSeek's first-id rule keeps them unshifted.
        assert result["layers_to_capture"] == [2, 30, 58]
        assert result["effective_layers"] == [1, 29, 57]
        assert slugs(result) == ["offset-mismatch"]
        assert "self.config = the text config" in result["steps"][2]
    # The same draft on pp=4: 0.5.23 stages [0,15) [15,30) [30,45) [45,61); only index 58 survives.
    result = explain_model(release("0.5.23"), REAL_CHAINS[("0.5.23", "kimi_k25")], [], t, d, pp=4)
    assert [r["layers"] for r in result["ranks"]] == [[0, 15], [15, 30], [30, 45], [45, 61]]
    assert result["effective_layers"] == [57]
    assert slugs(result) == ["offset-mismatch", "pipeline-guard", "count-mismatch"]


@pytest.mark.real
@needs_cache
def test_deepseek_v3_056_with_runner_call_order(tmp_path):
    """0.5.6: CudaGraphRunner calls the setter without ids before capture; the ids call comes after."""
    root = release("0.5.6")
    model, call_sites = expected_model("0.5.6", "deepseek_v2.DeepseekV3ForCausalLM")
    t = load_target_config(CONFIGS / "deepseek-v3")
    d = draft(tmp_path, [2, 30, 58], hidden=7168, fc_states=3)
    result = explain_model(root, model, call_sites, t, d)
    assert result["layers_to_capture"] == [3, 31, 59]
    assert result["effective_layers"] == [2, 30, 58]
    assert result["graph_layers_to_capture"] == [2, 30, 58]
    assert result["graph_layers"] == [1, 29, 57]
    assert slugs(result) == ["fallback-triggered"]


@pytest.mark.real
@needs_cache
def test_qwen3_moe_056_markers_accumulate(tmp_path):
    """0.5.6 Qwen3-MoE marks layers and never clears the marks: eager captures the union."""
    root = release("0.5.6")
    model, call_sites = expected_model("0.5.6", "qwen3_moe.Qwen3MoeForCausalLM")
    t, d = tiny(tmp_path, 8, [1, 2, 3], "moe")
    result = explain_model(root, model, call_sites, t, d)
    assert result["layers_to_capture"] == [2, 3, 4]
    assert result["captured_indices"] == [2, 3, 4, 5]
    assert result["effective_layers"] == [1, 2, 3, 4]
    assert result["graph_layers"] == [1, 3, 4]
    assert slugs(result) == ["fallback-triggered", "count-mismatch"]


@pytest.mark.real
@needs_cache
def test_llama_049_without_ids(tmp_path):
    """0.4.9 Llama-3.1-8B with a draft that names no ids: [2, 16, 29] -> outputs [1, 15, 28]."""
    root = release("0.4.9")
    model, call_sites = expected_model("0.4.9", "llama.LlamaForCausalLM")
    t = load_target_config(CONFIGS / "llama-3.1-8b")
    d = load_draft_config(CONFIGS / "draft-no-ids")
    result = explain_model(root, model, call_sites, t, d)
    assert result["layers_to_capture"] == [2, 16, 29]
    assert result["effective_layers"] == [1, 15, 28]
    assert result["graph_layers"] == [1, 15, 28]
    assert slugs(result) == ["fallback-triggered"]


@pytest.mark.real
@needs_cache
def test_gpt_oss_0523_final_boundary(tmp_path):
    """gpt-oss 0.5.23 captures index L at the final norm, so an id of L-1 is not lost."""
    t, d = tiny(tmp_path, 6, [1, 3, 5], "oss")
    result = explain_model(release("0.5.23"), REAL_CHAINS[("0.5.23", "gpt_oss")], [], t, d)
    assert result["layers_to_capture"] == [2, 4, 6]
    assert result["effective_layers"] == [1, 3, 5]
    assert result["findings"] == []


@pytest.mark.real
@needs_cache
def test_gpt_oss_0517_ids_that_name_the_final_boundary(tmp_path):
    """gpt-oss 0.5.17's setter keeps ids whose maximum is the layer count (they are
    hidden-state boundaries) and shifts the others: neither is an offset-mismatch
    (issue #13: the pack's one shift said [2, 4, 6] should have been [3, 5, 7])."""
    model = chain(("sglang.srt.models.gpt_oss.GptOssForCausalLM.set_eagle3_layers_to_capture", M + "gpt_oss.py", 1328),
                  ("sglang.srt.models.gpt_oss.GptOssModel.layers_to_capture", M + "gpt_oss.py", 1343),
                  ("sglang.srt.models.gpt_oss.GptOssModel.forward", M + "gpt_oss.py", 726))
    t, d = tiny(tmp_path, 6, [2, 4, 6], "oss-boundaries")
    result = explain_model(release_dir("0.5.17"), model, [], t, d)
    assert result["layers_to_capture"] == [2, 4, 6]
    assert result["effective_layers"] == [1, 3, 5]
    assert result["findings"] == []
    t, d = tiny(tmp_path, 6, [1, 3, 5], "oss-outputs")
    result = explain_model(release_dir("0.5.17"), model, [], t, d)
    assert result["layers_to_capture"] == [2, 4, 6]
    assert result["effective_layers"] == [1, 3, 5]
    assert result["findings"] == []


DFLASH = load_protocols(["sglang-dflash"])[0]


def _dflash_draft(tmp_path, ids, name):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["DFlashDraftModel"], "hidden_size": 64,
                                                    "dflash_config": {"target_layer_ids": ids}}))
    return configs.load_draft_config(folder, ids_keys=DFLASH.draft_ids_keys, count_keys=DFLASH.draft_count_keys)


@pytest.mark.real
@needs_cache
def test_a_loop_that_captures_after_the_layer_takes_ids_as_given(tmp_path):
    """SGLang 0.5.23 Beam tests `layer_id in self.layers_to_capture` after the layer ran
    (beam.py:1167), so it captures the output of layer i and its DFlash setter stores the
    ids unshifted (1373): correct by this model's own convention, not the pack's +1."""
    model = dict(chain(("sglang.srt.models.beam.BeamForCausalLM.set_dflash_layers_to_capture", M + "beam.py", 1360),
                       ("sglang.srt.models.beam.BeamModel.layers_to_capture", M + "beam.py", 1373),
                       ("sglang.srt.models.beam.BeamModel.forward", M + "beam.py", 1167)), protocol="sglang-dflash")
    t = target(tmp_path, 8, name="t-beam")
    result = explain_model(release("0.5.23"), model, [], t, _dflash_draft(tmp_path, [1, 3, 5], "d-beam"),
                           protocol=DFLASH)
    assert result["layers_to_capture"] == [1, 3, 5], result["unknowns"]
    assert result["effective_layers"] == [1, 3, 5]
    assert [f["slug"] for f in result["findings"]] == []
    # the fused loop (1206) runs the layer through a method, self.layers[layer_id].forward_fused(...)
    fused = dict(model, chain=model["chain"][:2] + [
        {"kind": "read", "qualname": "sglang.srt.models.beam.BeamModel._forward_fused", "file": M + "beam.py",
         "line": 1226}])
    result = explain_model(release("0.5.23"), fused, [], t, _dflash_draft(tmp_path, [1, 3, 5], "d-beam-fused"),
                           protocol=DFLASH)
    assert result["loop"]["line"] == 1206
    assert result["effective_layers"] == [1, 3, 5] and result["findings"] == []
    assert "after the layer ran" in format_explanation(dict(result, protocol="sglang-dflash"))


@pytest.mark.real
@needs_cache
def test_dflash_id_of_the_last_layer_raises_at_start_up(tmp_path):
    """SGLang issue 32204's shape on 0.5.23: Qwen3-MoE's DFlash setter shifts each id by one
    and marks self.layers[id] (qwen3_moe.py:990), so the last layer's id (7 of 8) is an
    IndexError at start-up: unreachable-layer (raises) for DFlash, from the DFlash pack's keys."""
    model = {"entry": "sglang.srt.models.qwen3_moe.Qwen3MoeForCausalLM", "protocol": "sglang-dflash", "chain": [
        {"kind": "setter", "qualname": "sglang.srt.models.qwen3_moe.Qwen3MoeForCausalLM.set_dflash_layers_to_capture",
         "file": M + "qwen3_moe.py", "line": 1145},
        {"kind": "delegate", "qualname": "sglang.srt.models.qwen3_moe.Qwen3MoeModel.set_dflash_layers_to_capture",
         "file": M + "qwen3_moe.py", "line": 987, "passes_ids": True},
        {"kind": "write", "qualname": "sglang.srt.models.qwen3_moe.Qwen3MoeModel.layers_to_capture",
         "file": M + "qwen3_moe.py", "line": 988},
        {"kind": "read", "qualname": "sglang.srt.models.qwen2_moe.Qwen2MoeModel.forward", "file": M + "qwen2_moe.py",
         "line": 1201}]}
    t = target(tmp_path, 8, name="t-qwen3-moe")
    result = explain_model(release("0.5.23"), model, [], t, _dflash_draft(tmp_path, [1, 3, 7], "d-32204"),
                           protocol=DFLASH)
    assert [(f["slug"], f["file"], f["line"]) for f in result["findings"]] == [
        ("unreachable-layer", M + "qwen3_moe.py", 990)]
    assert "IndexError" in result["findings"][0]["message"]
    assert result["findings"][0]["hint"] == "ids must be in 0..6 for a target of 8 layers"
    ok = explain_model(release("0.5.23"), model, [], t, _dflash_draft(tmp_path, [1, 3, 6], "d-32204-ok"),
                       protocol=DFLASH)
    assert ok["findings"] == [] and ok["effective_layers"] == [1, 3, 6]


@pytest.mark.real
@needs_cache
def test_qwen2_5_7b_across_releases(tmp_path):
    """Qwen2.5-7B (28 layers) with ids [1, 13, 27]: the last layer's output is dropped in every release."""
    t = load_target_config(CONFIGS / "qwen2.5-7b")
    d = draft(tmp_path, [1, 13, 27], hidden=3584)
    for version in ("0.5.6", "0.5.23"):
        result = explain_model(release(version), REAL_CHAINS[(version, "qwen2")], [], t, d)
        assert result["layers_to_capture"] == [2, 14, 28]
        assert result["effective_layers"] == [1, 13]
        assert slugs(result) == ["unreachable-layer", "count-mismatch"]


@pytest.mark.real
@needs_cache
def test_end_to_end_with_the_scan_engine(tmp_path):
    """The scan engine's own chain and call sites for 0.5.23, picked by the Kimi-K2.5 config."""
    from tracer.api import scan_tree
    from tracer.effective.annotate import explain

    root = release("0.5.23")
    scan = scan_tree(str(root)).result
    model, result = explain(scan, [EAGLE3], CONFIGS / "kimi-k2.5", CONFIGS / "draft-eagle-config")
    assert model.entry == "sglang.srt.models.kimi_k25.KimiK25ForConditionalGeneration"
    assert result["layers_to_capture"] == [2, 30, 58]
    assert result["effective_layers"] == [1, 29, 57]
    # 0.5.23 makes its one configured call before graph capture: graphs agree with eager
    # (or are not computed when the scan reports no runner call sites).
    assert result["graph_layers"] in ([1, 29, 57], None) and not result["graph_layers_differ"]
    assert slugs(result) == ["offset-mismatch"]
    # at the write the evaluation took (3473, ids kept as given), not the not-taken fallback at 3465
    assert [(f["file"], f["line"]) for f in result["findings"]] == [("sglang/srt/models/deepseek_v2.py", 3473)]


@pytest.mark.real
@needs_cache
def test_qwen3_vl_0523_writes_itself_and_the_loop_is_found_by_name(tmp_path):
    """Qwen3-VL's wrapper asks hasattr(self.model, setter): Qwen3LLMModel (via Qwen3Model, Qwen2Model)
    has none, so it writes the list itself; the chain here has no reader, so the owner's forward is found by name."""
    model = {"entry": "sglang.srt.models.qwen3_vl.Qwen3VLForConditionalGeneration", "protocol": "sglang-eagle3", "chain": [
        {"kind": "setter", "qualname": "sglang.srt.models.qwen3_vl.Qwen3VLForConditionalGeneration.set_eagle3_layers_to_capture",
         "file": M + "qwen3_vl.py", "line": 1777},
        {"kind": "write", "qualname": "sglang.srt.models.qwen3_vl.Qwen3LLMModel.layers_to_capture", "file": M + "qwen3_vl.py", "line": 1795},
    ]}
    folder = tmp_path / "qwen3-vl"
    folder.mkdir()
    # Qwen3-VL-8B: the text model (36 layers, 4096) nested under text_config.
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
                                                    "text_config": {"num_hidden_layers": 36, "hidden_size": 4096}}))
    t = load_target_config(folder)
    result = explain_model(release("0.5.23"), model, [], t, draft(tmp_path, [1, 17, 32], hidden=4096))
    assert "`hasattr(self.model, \"set_eagle3_layers_to_capture\")` is False" in result["steps"][1]
    assert result["layers_to_capture"] == [2, 18, 33]
    assert result["effective_layers"] == [1, 17, 32]
    assert result["findings"] == []
    assert any("found from the MRO of" in note for note in result["notes"])


@pytest.mark.real
@needs_cache
def test_qwen3_moe_056_loop_found_by_name(tmp_path):
    """The same Qwen3-MoE chain as the scan engine reports it: no forward reader, two call lines."""
    model, call_sites = expected_model("0.5.6", "qwen3_moe.Qwen3MoeForCausalLM")
    model = dict(model, chain=[h for h in model["chain"] if not (h["kind"] == "read" and h["qualname"].endswith(".forward"))])
    model["chain"].append(dict(model["chain"][1], call_line=843))
    t, d = tiny(tmp_path, 8, [1, 2, 3], "moe2")
    result = explain_model(release("0.5.6"), model, call_sites, t, d)
    assert result["captured_indices"] == [2, 3, 4, 5]
    assert result["effective_layers"] == [1, 2, 3, 4]
    assert result["loop"]["file"] == M + "qwen2_moe.py"


@pytest.mark.real
@needs_cache
def test_qwen3_moe_056_last_layer_id_raises_at_start_up(tmp_path):
    """Qwen2MoeModel's setter marks self.layers[i] for every entry: id L-1 becomes index L and raises IndexError."""
    model, _ = expected_model("0.5.6", "qwen3_moe.Qwen3MoeForCausalLM")
    t, d = tiny(tmp_path, 8, [1, 3, 7], "moe3")
    result = explain_model(release("0.5.6"), model, [], t, d)
    assert result["effective_layers"] is None
    [finding] = result["findings"]
    assert finding["slug"] == "unreachable-layer"
    assert (finding["file"], finding["line"]) == ("sglang/srt/models/qwen2_moe.py", 567)
    assert "IndexError" in finding["message"] and "index 8" in finding["message"]


@pytest.mark.real
@needs_cache
@pytest.mark.parametrize("version, setter_line, effective, found", [
    # 0.5.16: the setter writes the list, the forward tests per-layer marks nobody sets.
    ("0.5.16", 1491, [], ["unreachable-layer", "count-mismatch"]),
    # 0.5.23: the setter also marks the layers (in range), so the same ids are captured.
    ("0.5.23", 2056, [0, 2, 3], []),
])
def test_minimax_m3_marks_across_releases(tmp_path, version, setter_line, effective, found):
    model = {"entry": "sglang.srt.models.minimax_m3.MiniMaxM3SparseForCausalLM", "protocol": "sglang-eagle3", "chain": [
        {"kind": "setter", "qualname": "sglang.srt.models.minimax_m3.MiniMaxM3SparseForCausalLM.set_eagle3_layers_to_capture",
         "file": M + "minimax_m3.py", "line": setter_line},
        {"kind": "write", "qualname": "sglang.srt.models.minimax_m3.MiniMaxM3Model.layers_to_capture",
         "file": M + "minimax_m3.py", "line": setter_line + 8},
    ]}
    t, d = tiny(tmp_path, 6, [0, 2, 3], "m3")
    result = explain_model(release(version), model, [], t, d)
    assert result["layers_to_capture"] == [1, 3, 4]
    assert result["effective_layers"] == effective
    assert slugs(result) == found


@pytest.mark.real
@needs_cache
def test_seed_story_kimi_k25_with_the_embedding_id(tmp_path):
    """The seed debugging story: a Kimi-K2.5 draft trained on cat([embedding, layer 2, layer 30]) names
    ids [-1, 2, 30]. Stock 0.5.23 keeps them as given (first id is not 1): -1 is never visited, 2 and 30
    capture the outputs of layers 1 and 29, and the fc gets 2 x 7168 inputs instead of 3 x 7168."""
    t = load_target_config(CONFIGS / "kimi-k2.5")
    d = draft(tmp_path, [-1, 2, 30], hidden=7168, fc_states=3)
    result = explain_model(release("0.5.23"), REAL_CHAINS[("0.5.23", "kimi_k25")], [], t, d)
    assert result["layers_to_capture"] == [-1, 2, 30]
    assert result["effective_layers"] == [1, 29]
    assert slugs(result) == ["offset-mismatch", "unreachable-layer", "count-mismatch"]
    assert "2 x 7168 = 14336 inputs instead of 21504" in result["findings"][2]["message"]
    text = format_explanation(result)
    assert "Eager path captures the outputs of: layer 1, layer 29" in text
