"""`graph --all` on real SGLang code (0.5.23 from PyPI, tests/releases.py): the edges the
issue names, read by hand in that release.

One graph per session, of a subset of the wheel (sglang/__init__.py, srt/models and
srt/model_executor, copied into a temporary folder): what these edges need, at a
fraction of the whole srt tree's cost (benchmarks/bench_graph.py measures that).
"""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from conftest import release_dir

from tracer.cli import main

pytestmark = pytest.mark.real

KIMI = "models.kimi_k25.KimiK25ForConditionalGeneration"
DEEPSEEK = "models.deepseek_v2.DeepseekV2ForCausalLM"
QWEN3_VL = "models.qwen3_vl.Qwen3VLForConditionalGeneration"
QWEN3_VL_MOE = "models.qwen3_vl_moe.Qwen3VLMoeForConditionalGeneration"
SETTER = "set_eagle3_layers_to_capture"


@pytest.fixture(scope="session")
def srt_json(tmp_path_factory):
    release = release_dir("0.5.23")
    root = tmp_path_factory.mktemp("srt-subset")
    srt = root / "sglang" / "srt"
    srt.mkdir(parents=True)
    shutil.copy(release / "sglang" / "__init__.py", srt.parent / "__init__.py")
    for part in ("models", "model_executor"):
        shutil.copytree(release / "sglang" / "srt" / part, srt / part,
                        ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    result = CliRunner().invoke(main, ["graph", str(srt), "--all", "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="session")
def srt_graph(srt_json):
    data = srt_json
    return {tuple(e) for e in data["edges"]}, data["edge_kinds"], set(data["nodes"])


def test_a_model_built_from_another_packages_registry_binds_to_no_model_of_the_tree(srt_json):
    # models/mindspore.py:33: MindSporeForCausalLM's self.model is a class that
    # import_model_classes("sgl_mindspore.models") picks at run time; its setter (mindspore.py:220)
    # calls self.model.set_eagle3_layers_to_capture: no model of this tree, and no runner's receiver
    ms = f"models.mindspore.MindSporeForCausalLM.{SETTER}"
    assert ms in srt_json["nodes"]
    assert not [v for u, v in srt_json["edges"] if u == ms]


def test_the_runners_calls_into_the_entry_classes_are_assumed_and_delegations_proven(srt_json):
    proof = srt_json["edge_provenance"]
    configure = "model_executor.model_runner_components.attention_backend_setup.configure_aux_hidden_state_capture"
    assert proof[f"{configure}->{KIMI}.{SETTER}"] == "entry-classes"
    assert proof[f"{KIMI}.{SETTER}->{DEEPSEEK}.{SETTER}"] == "values"
    assert srt_json["stats"]["edges_assumed_by_reason"]["entry-classes"] > 20


def test_kimi_wrapper_setter_reaches_the_inherited_deepseek_setter(srt_graph):
    edges, _, _ = srt_graph
    # KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture calls
    # self.language_model.set_eagle3_layers_to_capture(layer_ids) (kimi_k25.py:939); the
    # language model is a DeepseekV3ForCausalLM, which inherits DeepseekV2ForCausalLM's setter
    assert (f"{KIMI}.{SETTER}", f"{DEEPSEEK}.{SETTER}") in edges
    # and nothing else: the language model's class is known, no entry class is guessed for it
    assert {v for u, v in edges if u == f"{KIMI}.{SETTER}"} == {f"{DEEPSEEK}.{SETTER}"}


def test_qwen3_vl_moe_reaches_qwen2_moe_model_setter_through_the_class_parameter(srt_graph):
    edges, kinds, _ = srt_graph
    # Qwen3VLMoeForConditionalGeneration.__init__ passes language_model_cls=Qwen3MoeLLMModel to
    # Qwen3VLForConditionalGeneration.__init__ (qwen3_vl_moe.py:203-205), which builds
    # self.model = language_model_cls(...) (qwen3_vl.py:1357); the inherited setter
    # (qwen3_vl.py:1777) calls self.model.set_eagle3_layers_to_capture, and Qwen3MoeLLMModel
    # inherits it from Qwen2MoeModel (qwen2_moe.py:1153) through Qwen3MoeModel.
    assert (f"{QWEN3_VL_MOE}.__init__", f"{QWEN3_VL}.__init__") in edges
    assert kinds[f"{QWEN3_VL_MOE}.__init__->{QWEN3_VL}.__init__"] == "super"
    assert (f"{QWEN3_VL}.__init__", "models.qwen3_vl_moe.Qwen3MoeLLMModel.__init__") in edges
    assert (f"{QWEN3_VL}.{SETTER}", f"models.qwen2_moe.Qwen2MoeModel.{SETTER}") in edges
    # (Qwen3_5ForConditionalGeneration passes Qwen3_5ForCausalLM the same way: that edge is real)
    # entry classes nobody passes as language_model_cls are no targets: no guessing
    reached = {v for u, v in edges if u == f"{QWEN3_VL}.{SETTER}"}
    assert f"models.qwen3_5.Qwen3_5ForCausalLM.{SETTER}" in reached
    assert not reached & {f"models.qwen2.Qwen2ForCausalLM.{SETTER}", f"{DEEPSEEK}.{SETTER}",
                          f"models.llama.LlamaForCausalLM.{SETTER}"}


def test_runner_call_site_reaches_model_setters(srt_graph):
    edges, _, nodes = srt_graph
    configure = "model_executor.model_runner_components.attention_backend_setup.configure_aux_hidden_state_capture"
    assert configure in nodes
    assert ("model_executor.model_runner.ModelRunner.init_attention_backends", configure) in edges
    # configure_aux_hidden_state_capture(model=self.model, ...) calls model.set_eagle3_layers_to_capture
    # (attention_backend_setup.py:61); self.model comes from the model loader's registry lookup at
    # run time, so the receiver is taken to be one of the entry classes (EntryClass of each model module)
    reached = {v for u, v in edges if u == configure and v.endswith(f".{SETTER}")}
    assert {f"{KIMI}.{SETTER}", f"{DEEPSEEK}.{SETTER}", f"{QWEN3_VL}.{SETTER}"} <= reached
    assert f"models.qwen2_moe.Qwen2MoeModel.{SETTER}" not in reached  # an inner model, no entry class
    assert len(reached) > 20
