"""TensorRT-LLM: the layer ids travel in a forward argument (``spec_metadata``), entry classes come
from ``@register_auto_model("Arch")``, a name registered twice is reported.

TensorRT-LLM publishes no installable wheel on PyPI and its repository is too large to fetch, so
the proof is synthetic: the generated trees of tracer/checks/argument_trees.py (one part varied at a
time) here, and the hand-written trees examples/trtllm-* (tests/test_examples.py). The README says
which real files they were shaped after and what the pack says about those.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tracer.api import scan_to_json, scan_tree
from tracer.checks.argument_trees import PROTOCOL, argument_tree
from tracer.checks.config_trees import config_tree
from tracer.config.packs import ProtocolError, load_protocols, parse_protocol
from tracer.index.decorators import duplicates, read_decorated

QWEN3 = "tensorrt_llm/_torch/models/modeling_qwen3.py"
UTILS = "tensorrt_llm/_torch/models/modeling_utils.py"
EAGLE3 = "tensorrt_llm/_torch/speculative/eagle3.py"
ENTRY = "tensorrt_llm._torch.models.modeling_qwen3.Qwen3ForCausalLM"


def _write(tmp_path, files):
    for path, text in files:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        for parent in target.relative_to(tmp_path).parents:
            if str(parent) != ".":
                (tmp_path / parent / "__init__.py").touch()
    return tmp_path


def _scan(tmp_path, files, protocol=PROTOCOL):
    return scan_to_json(_write(tmp_path, files), [protocol], use_cache=False)


def _line(files, path, needle):
    text = dict(files)[path]
    return next(i for i, row in enumerate(text.split("\n"), 1) if needle in row)


def _model(scan, entry=ENTRY):
    return next(m for m in scan["models"] if m["entry"] == entry)


def test_decorator_rows_and_a_name_registered_twice():
    text = ('@register_auto_model("A")\nclass A: ...\n\n@other("B")\nclass B: ...\n\n'
            '@mod.register_auto_model("C")\n@register_auto_model("A2")\nclass C: ...\n')
    rows = read_decorated(text, "pkg.m", ("register_auto_model",))
    assert [(r.architecture, r.class_name, r.line) for r in rows] == [("A", "A", 1), ("C", "C", 7), ("A2", "C", 8)]
    again = read_decorated('@register_auto_model("A")\nclass Z: ...\n', "pkg.n", ("register_auto_model",))
    found = duplicates(rows + again)
    assert [(d.architecture, d.first.module, d.last.module, d.last.line) for d in found] == [("A", "pkg.m", "pkg.n", 1)]


def test_the_metadata_is_followed_from_the_entry_forward_to_the_layer_hook(tmp_path):
    files = argument_tree()
    scan = _scan(tmp_path, files)
    assert scan["framework"]["name"] == "tensorrt-llm" and scan["protocols"] == [PROTOCOL]
    model = _model(scan)
    assert model["verdict"] == "ok" and model["findings"] == []
    assert model["state_owner"] == "tensorrt_llm._torch.models.modeling_qwen3.Qwen3DecoderLayer"
    hops = [(h["kind"], h["qualname"].rsplit(".", 2)[-2] + "." + h["qualname"].rsplit(".", 1)[-1], h["line"])
            for h in model["chain"]]
    assert hops == [
        ("setter", "DecoderModelForCausalLM.forward", _line(files, UTILS, "def forward")),
        ("delegate", "Qwen3Model.forward", _line(files, QWEN3, "def forward(self, attn_metadata")),
        ("delegate", "Qwen3DecoderLayer.forward", _line(files, QWEN3, "def forward(self, hidden_states")),
        ("read", "Qwen3DecoderLayer.forward", _line(files, QWEN3, "spec_metadata.maybe_capture_hidden_states")),
        ("write", "Eagle3SpecMetadata.maybe_capture_hidden_states", _line(files, EAGLE3, "def maybe_capture")),
    ]


def test_metadata_swallowed_in_kwargs_is_a_broken_delegation_at_the_loop_call(tmp_path):
    files = argument_tree(model_loop="swallowed")
    model = _model(_scan(tmp_path, files))
    assert model["verdict"] == "broken" and model["findings"] == ["broken-delegation"]
    scan = _scan(tmp_path, files)
    found = [(f["slug"], f["file"], f["line"], f["chain"]) for f in scan["findings"]]
    assert found == [("broken-delegation", QWEN3, _line(files, QWEN3, "layer(hidden_states, residual)"),
                      ["tensorrt_llm._torch.models.modeling_utils.DecoderModelForCausalLM.forward",
                       "tensorrt_llm._torch.models.modeling_qwen3.Qwen3Model.forward"])]
    assert "inside **kwargs" in scan["findings"][0]["message"]


def test_a_hook_nobody_calls_is_a_dead_write_at_the_hand_off(tmp_path):
    files = argument_tree(layer_hook="never")
    scan = _scan(tmp_path, files)
    assert _model(scan)["verdict"] == "broken"
    [found] = scan["findings"]
    assert (found["slug"], found["file"], found["line"]) == (
        "dead-write", QWEN3, _line(files, QWEN3, "spec_metadata=spec_metadata)"))
    assert found["chain"][-1] == "tensorrt_llm._torch.models.modeling_qwen3.Qwen3DecoderLayer.forward"


def test_a_hook_on_one_branch_warns_unless_the_branch_is_switched_off_for_capturing_layers(tmp_path):
    files = argument_tree(layer_hook="branch")
    scan = _scan(tmp_path / "a", files)
    assert _model(scan)["verdict"] == "ok"
    assert [(f["slug"], f["line"]) for f in scan["findings"]] == [
        ("capture-skipped-on-branch", _line(files, QWEN3, "if self.fused:"))]
    guarded = _scan(tmp_path / "b", argument_tree(layer_hook="branch-guarded"))
    assert guarded["findings"] == [] and _model(guarded)["verdict"] == "ok"


def test_the_default_that_logs_nothing_is_a_silent_fallback(tmp_path):
    files = argument_tree(default_log="silent")
    scan = _scan(tmp_path, files)
    assert _model(scan)["verdict"] == "ok"
    [found] = scan["findings"]
    assert (found["slug"], found["file"], found["line"], found["entry"]) == (
        "silent-fallback", EAGLE3, _line(files, EAGLE3, "self.layers_to_capture = (1,"), None)


def test_an_entry_whose_forward_takes_no_metadata_is_missing(tmp_path):
    files = [(p, t.replace("input_ids=None, spec_metadata=None, **kwargs):", "input_ids=None):")
              .replace("spec_metadata=spec_metadata)\n        return self.lm_head", ")\n        return self.lm_head"))
             for p, t in argument_tree()]
    model = _model(_scan(tmp_path, files))
    assert model["verdict"] == "missing" and model["findings"] == ["missing-setter"]


def test_a_receiver_of_unknown_class_is_unknown_not_ok(tmp_path):
    files = [(p, t.replace("self.model = model", "self.model = MODELS[config.arch](config)")) for p, t in
             argument_tree()]
    scan = _scan(tmp_path, files)
    model = _model(scan)
    assert model["verdict"] == "unknown" and model["findings"] == ["unresolved"]
    assert [(f["slug"], f["file"], f["line"]) for f in scan["findings"]] == [
        ("unresolved", UTILS, _line(files, UTILS, "hidden_states = self.model("))]


def test_text_output_has_the_editor_shape_and_exit_status(tmp_path):
    _write(tmp_path, argument_tree(model_loop="swallowed"))
    run = subprocess.run([sys.executable, "-m", "tracer", "scan", str(tmp_path), "--no-cache"],
                         capture_output=True, text=True)
    line = _line(argument_tree(model_loop="swallowed"), QWEN3, "layer(hidden_states, residual)")
    assert run.returncode == 1
    assert f"{QWEN3}:{line}:" in run.stdout and "broken-delegation [error]" in run.stdout


def test_a_registry_update_table_reports_its_duplicates_too(tmp_path):
    files = [(p, t + "MODULE_MAP.update({\n    'FooForCausalLM': f'{PATH}.bar.BarForCausalLM',\n})\n")
             if p.endswith("module_map.py") else (p, t) for p, t in config_tree()]
    result = scan_tree(_write(tmp_path, files), load_protocols(["lmdeploy-eagle3"]), use_cache=False).result
    found = [(f.slug, f.file, f.line, f.entry) for f in result.findings if f.slug == "duplicate-registration"]
    table = "lmdeploy/pytorch/models/module_map.py"
    assert found == [("duplicate-registration", table, _line(files, table, "'FooForCausalLM': f'{PATH}.bar"), None)]


@pytest.mark.parametrize("text, message", [
    ('name="x"\nframework="f"\nsetter="forward"\nstate_attribute="s"\n[detect]\npackage="p"\n[entry]\nkind="decorator"\n',
     "'entry.kind' decorator needs 'entry.decorators'"),
    ('name="x"\nframework="f"\nsetter="forward"\nstate_attribute="s"\n[detect]\npackage="p"\n[argument]\nparameter="m"\n',
     "'argument.parameter' needs 'argument.hook'"),
])
def test_a_pack_missing_its_partner_key_is_refused_in_one_line(text, message):
    with pytest.raises(ProtocolError, match=message):
        parse_protocol(text, "bad.toml")


def test_a_bad_pack_on_the_command_line_is_one_line_and_status_2(tmp_path):
    pack = tmp_path / "bad.toml"
    pack.write_text('name="x"\nframework="f"\nsetter="forward"\nstate_attribute="s"\n[detect]\npackage="p"\n'
                    '[entry]\nkind="decorator"\n')
    run = subprocess.run([sys.executable, "-m", "tracer", "scan", str(tmp_path), "--rules", str(pack)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "entry.decorators" in run.stderr


_OUTER = ("        hidden_states = self.model(", "        spec_metadata.maybe_capture_hidden_states(-1, input_ids)\n"
          "        hidden_states = self.model(")


def test_a_capture_outside_the_decoder_loop_is_no_capture_of_the_layers(tmp_path):
    """A one-engine wrapper captures the final output (id -1) in its own forward: a hop of the
    chain, but it must not make a model whose layers never call the hook look fine."""
    files = [(p, t.replace(*_OUTER)) for p, t in argument_tree(layer_hook="never")]
    scan = _scan(tmp_path / "a", files)
    assert _model(scan)["verdict"] == "broken" and _model(scan)["findings"] == ["dead-write"]
    fine = _model(_scan(tmp_path / "b", [(p, t.replace(*_OUTER)) for p, t in argument_tree()]))
    outer = [h for h in fine["chain"] if "outside the decoder loop" in h["resolved_by"]]
    assert fine["verdict"] == "ok" and [(h["kind"], h["line"]) for h in outer] == [
        ("read", _line(files, UTILS, "maybe_capture_hidden_states(-1"))]


def test_an_entry_that_takes_the_metadata_and_hands_it_nowhere_is_a_dead_write_at_its_forward(tmp_path):
    files = [(p, t.replace("spec_metadata=spec_metadata)\n        return self.lm_head", ")\n        return self.lm_head")
              if p == UTILS else t.replace("input_ids=None, spec_metadata=None, **kwargs):", "input_ids=None):"))
             for p, t in argument_tree()]
    scan = _scan(tmp_path, files)
    assert _model(scan)["verdict"] == "broken"
    assert [(f["slug"], f["file"], f["line"]) for f in scan["findings"]] == [
        ("dead-write", UTILS, _line(files, UTILS, "def forward"))]
    assert "neither calls spec_metadata.maybe_capture_hidden_states() nor hands it" in scan["findings"][0]["message"]


def test_a_sub_module_that_would_take_it_is_a_broken_delegation_when_nothing_is_handed_on(tmp_path):
    files = [(p, t.replace("spec_metadata=spec_metadata)\n        return self.lm_head", ")\n        return self.lm_head"))
             for p, t in argument_tree()]
    scan = _scan(tmp_path, files)
    assert [(f["slug"], f["file"], f["line"]) for f in scan["findings"]] == [
        ("broken-delegation", UTILS, _line(files, UTILS, "hidden_states = self.model("))]


def test_explain_runs_the_metadata_default_and_compares_it_with_the_draft(tmp_path):
    """TensorRT-LLM takes the ids from the executor's setting, not the draft's config.json:
    with none set, __post_init__ decides. Explain runs it on the target's layer count."""
    root = _write(tmp_path / "tree", argument_tree())
    target, draft = tmp_path / "target", tmp_path / "draft"
    target.mkdir()
    draft.mkdir()
    (target / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 32}))

    def explain(ids: list[int]) -> dict:
        (draft / "config.json").write_text(json.dumps({"architectures": ["Eagle3LlamaForCausalLM"],
                                                       "eagle_aux_hidden_state_layer_ids": ids}))
        run = subprocess.run([sys.executable, "-m", "tracer", "explain", str(root), "--no-cache", "--format", "json",
                              "--target-config", str(target), "--draft-config", str(draft), "--entry", ENTRY],
                             capture_output=True, text=True)
        assert run.returncode in (0, 1), run.stderr
        return json.loads(run.stdout)

    eagle3 = dict(argument_tree())["tensorrt_llm/_torch/speculative/eagle3.py"].split("\n")
    line = next(i for i, row in enumerate(eagle3, 1) if "self.layers_to_capture = (1, self.num_layers" in row)
    other = explain([2, 16, 29])
    assert other["layers_to_capture"] == [1, 15, 28] and other["effective_layers"] == [1, 15, 28]
    assert other["ids_written_by"] == "Eagle3SpecMetadata.__post_init__"
    assert any(f"line {line}" in step for step in other["steps"])
    [found] = [f for f in other["findings"] if f["slug"] == "fallback-triggered"]
    assert found["file"] == "tensorrt_llm/_torch/speculative/eagle3.py" and found["line"] == line
    assert "eagle3_layers_to_capture = [2, 16, 29]" in found["hint"]
    same = explain([1, 15, 28])  # trained on the layers the default captures: nothing to say
    assert same["effective_layers"] == [1, 15, 28]
    assert not [f for f in same["findings"] if f["slug"] == "fallback-triggered"]
