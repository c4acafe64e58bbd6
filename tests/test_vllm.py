"""vLLM's EAGLE-3 protocol (rules/vllm-eagle3.toml) and the generic engine support it
needs: entry classes from a registry dict literal, factories that build a registry
class by architecture name, locals of the setter body, delegate methods, and
default-layer overrides the runner never calls.

The synthetic tree below (framework "toyfw") exercises those features without any
vLLM name; the `real` tests assert chains read by hand in vLLM 0.33.0 from PyPI.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import release_dir

from tracer.api import scan_to_json, scan_tree
from tracer.config.packs import load_protocols, parse_protocol
from tracer.index.registry import read_registry

VLLM_VERSION = "0.33.0"

# -- a small framework-shaped tree ----------------------------------------------------------

TOY_PACK = """
name = "toy-aux"
framework = "toyfw"
setter = "set_aux_layers"
state_attribute = "aux_layers"
ids_parameter = "layers"
delegate_methods = ["_set_aux_layers"]
[detect]
package = "toyfw"
markers = ["toyfw/models"]
[entry]
kind = "registry-dict"
registry_module = "toyfw.models.registry"
registry_variables = ["_TEXT", "_MM"]
registry_package = "toyfw.models"
modules = ["toyfw.models.*"]
registry_factories = ["build_registered"]
registry_factory_keyword = "architectures"
registry_factory_class_keywords = ["model_class"]
[defaults]
methods = ["default_aux_layers", "aux_layers_old_name"]
[runner]
modules = ["toyfw.worker.*"]
"""

TOY_FILES = {
    "toyfw/__init__.py": "",
    "toyfw/version.py": '__version__ = "1.2.3"\n',
    "toyfw/models/__init__.py": "",
    "toyfw/models/registry.py": """
        _TEXT = {
            "DenseForCausalLM": ("dense", "DenseForCausalLM"),
            "PlainForCausalLM": ("dense", "PlainForCausalLM"),
            "Broken": ("dense", f"Name{1}"),
        }
        _MM = {
            "VisionForConditionalGeneration": ("vision", "VisionForConditionalGeneration"),
            "ClassPassingWrapper": ("vision", "ClassPassingWrapper"),
            "ConfigChosenWrapper": ("vision", "ConfigChosenWrapper"),
        }
        _ALL = {**_TEXT, **_MM}
    """,
    "toyfw/models/interfaces.py": """
        class Mixin:
            aux_layers = ()

            def _set_aux_layers(self, layers):
                self.aux_layers = tuple(layers)

            def _maybe_add(self, out, idx, h):
                if idx in self.aux_layers:
                    out.append(h)


        class SupportsAux:
            def set_aux_layers(self, layers):
                parent_ref = self
                if hasattr(self, "get_language_model"):
                    parent_ref = self.get_language_model()
                elif hasattr(self, "language_model"):
                    parent_ref = self.language_model
                holder = getattr(parent_ref, "model", parent_ref)
                holder._set_aux_layers(layers)

            def default_aux_layers(self):
                return (2, 4, 6)
    """,
    "toyfw/models/utils.py": """
        def build_registered(config, architectures=None, model_class=None):
            return make(config)
    """,
    "toyfw/models/dense.py": """
        from toyfw.models.interfaces import Mixin, SupportsAux


        class DenseModel(Mixin):
            def __init__(self):
                self.layers = []

            def forward(self, h):
                out = []
                for idx, layer in enumerate(self.layers):
                    self._maybe_add(out, idx, h)
                return out


        class DenseForCausalLM(SupportsAux):
            def __init__(self):
                self.model = DenseModel()

            def aux_layers_old_name(self):  # the runner calls default_aux_layers
                return (1, 2, 3)


        class PlainModel:
            def __init__(self):
                self.layers = []


        class PlainForCausalLM:
            def __init__(self):
                self.model = PlainModel()
    """,
    "toyfw/models/vision.py": """
        from toyfw.models.dense import DenseForCausalLM, PlainForCausalLM
        from toyfw.models.interfaces import SupportsAux
        from toyfw.models.utils import build_registered


        class VisionForConditionalGeneration(SupportsAux):
            def __init__(self, config):
                self.language_model = build_registered(config, architectures=["DenseForCausalLM"])

            def get_language_model(self):
                return self.language_model


        class ClassPassingWrapper(SupportsAux):
            def __init__(self, config):
                self.language_model = build_registered(config, model_class=PlainForCausalLM)


        class ConfigChosenWrapper(SupportsAux):
            def __init__(self, config):
                self.language_model = build_registered(config)
    """,
    "toyfw/worker/__init__.py": "",
    "toyfw/worker/runner.py": """
        class Runner:
            def setup(self, ids):
                if not ids:
                    ids = self.model.default_aux_layers()
                self.model.set_aux_layers(ids)
    """,
}


@pytest.fixture()
def toy_tree(tmp_path):
    for rel, text in TOY_FILES.items():
        path = tmp_path / "toy" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path / "toy"


@pytest.fixture()
def toy_scan(toy_tree, tmp_path):
    pack = parse_protocol(TOY_PACK, "toy.toml")
    result = scan_tree(toy_tree, load_protocols() + [pack], cache_dir=tmp_path / "cache").result
    return result, {m.entry.rsplit(".", 1)[-1]: m for m in result.models}


def test_registry_dict_is_read_statically():
    text = textwrap.dedent(TOY_FILES["toyfw/models/registry.py"])
    entries = read_registry(text, ("_ALL",), "toyfw.models")
    assert [(e.architecture, e.module, e.class_name) for e in entries] == [
        ("DenseForCausalLM", "toyfw.models.dense", "DenseForCausalLM"),
        ("PlainForCausalLM", "toyfw.models.dense", "PlainForCausalLM"),
        ("VisionForConditionalGeneration", "toyfw.models.vision", "VisionForConditionalGeneration"),
        ("ClassPassingWrapper", "toyfw.models.vision", "ClassPassingWrapper"),
        ("ConfigChosenWrapper", "toyfw.models.vision", "ConfigChosenWrapper"),
    ]  # the f-string entry is not a literal: skipped, never guessed
    assert read_registry("x = (", ("_ALL",), "") == []


def test_framework_is_detected_from_the_tree(toy_scan):
    result, _ = toy_scan
    assert result.framework.name == "toyfw" and result.framework.version == "1.2.3"
    assert list(result.protocols) == ["toy-aux"]


def test_local_receivers_of_an_interface_setter(toy_scan):
    _, models = toy_scan
    dense = models["DenseForCausalLM"]
    assert dense.verdict == "ok"
    assert [h.kind for h in dense.chain] == ["setter", "delegate", "write", "read", "read"]
    assert dense.chain[1].qualname == "toyfw.models.interfaces.Mixin._set_aux_layers"
    assert dense.state_owner == "toyfw.models.dense.DenseModel"
    # the read is in a helper: the forward that runs comes first, at its call of the helper
    assert dense.chain[-2].qualname == "toyfw.models.dense.DenseModel.forward"
    assert "calls _maybe_add" in dense.chain[-2].resolved_by
    assert dense.chain[-1].qualname == "toyfw.models.interfaces.Mixin._maybe_add"


def test_registry_factory_types_the_language_model(toy_scan):
    _, models = toy_scan
    vision = models["VisionForConditionalGeneration"]
    assert vision.verdict == "ok"
    assert vision.state_owner == "toyfw.models.dense.DenseModel"
    assert "registry class of DenseForCausalLM" in vision.chain[1].resolved_by


def test_inner_model_without_the_delegate_method_is_broken(toy_scan):
    _, models = toy_scan
    wrapper = models["ClassPassingWrapper"]  # model_class=PlainForCausalLM, whose model has no Mixin
    assert wrapper.verdict == "broken"
    assert "PlainModel" in wrapper.reason and "_set_aux_layers" in wrapper.reason
    assert models["PlainForCausalLM"].verdict == "missing"


def test_language_model_chosen_at_run_time_is_unknown(toy_scan):
    _, models = toy_scan
    unknown = models["ConfigChosenWrapper"]
    assert unknown.verdict == "unknown"
    assert "without a literal architectures" in unknown.reason


def test_default_override_the_runner_never_calls(toy_scan):
    result, _ = toy_scan
    dead = [f for f in result.findings if f.slug == "dead-default"]
    assert len(dead) == 1
    assert dead[0].file == "toyfw/models/dense.py" and dead[0].line == 19
    assert dead[0].entries == ("toyfw.models.dense.DenseForCausalLM",)
    assert "default_aux_layers" in dead[0].message


# -- a real vLLM release ----------------------------------------------------------------------

def vllm_release_dir(version: str = VLLM_VERSION) -> Path:
    """Unpacked vLLM release (vllm/**/*.py), downloaded once into the test cache."""
    return release_dir(version, "vllm")


@pytest.fixture(scope="module")
def vllm_scan(release_cache):
    data = scan_to_json(str(vllm_release_dir()), cache_dir=str(release_cache))
    return data, {m["entry"].rsplit(".", 1)[-1]: m for m in data["models"]}


def _hops(model):
    return [(h["kind"], h["qualname"].replace("vllm.model_executor.models.", ""), h["line"]) for h in model["chain"]]


@pytest.mark.real
def test_vllm_pack_is_chosen_and_registry_read(vllm_scan):
    data, models = vllm_scan
    assert data["framework"] == {"name": "vllm", "version": VLLM_VERSION, "package_root": "vllm"}
    assert data["protocols"] == ["vllm-eagle3"]
    # _TEXT_GENERATION_MODELS + _MULTIMODAL_MODELS + the Transformers backend's generative
    # classes, one entry per class (several architectures map to one class, e.g.
    # Cohere2ForCausalLM -> CohereForCausalLM), plus the speculative registry's draft heads
    targets = [m for m in models.values() if not m["draft"]]
    assert 200 < len(targets) < 260
    assert {"LlamaForCausalLM", "Qwen2_5_VLForConditionalGeneration", "BloomForCausalLM"} <= set(models)


@pytest.mark.real
def test_vllm_model_using_the_interface_default(vllm_scan):
    # llama.py:464 LlamaForCausalLM(..., SupportsEagle3, ...) has no setter of its own:
    # interfaces.py:1728 SupportsEagle3.set_aux_hidden_state_layers takes self (no
    # get_language_model, no language_model), then getattr(self, "model") = LlamaModel
    # (_init_model returns LlamaModel), and calls holder._set_aux_hidden_state_layers
    # (1749) = EagleModelMixin (LlamaModel(nn.Module, EagleModelMixin), llama.py:347),
    # which writes self.aux_hidden_state_layers (1617); the decoder loop calls
    # _maybe_add_hidden_state, which reads it (1647). (_cache_aux_pp_layout reads it too,
    # from the setter, not from a forward: it is not a reader.)
    _, models = vllm_scan
    llama = models["LlamaForCausalLM"]
    assert llama["verdict"] == "ok", llama["reason"]
    assert _hops(llama) == [
        ("setter", "interfaces.SupportsEagle3.set_aux_hidden_state_layers", 1728),
        ("delegate", "interfaces.EagleModelMixin._set_aux_hidden_state_layers", 1616),
        ("write", "llama.LlamaModel.aux_hidden_state_layers", 1617),
        ("read", "llama.LlamaModel.forward", 429),  # its first call of the helper (llama.py:429, then 439)
        ("read", "interfaces.EagleModelMixin._maybe_add_hidden_state", 1647),
    ]
    assert llama["chain"][1]["call_line"] == 1749 and llama["chain"][1]["passes_ids"] is True
    assert llama["state_owner"] == "vllm.model_executor.models.llama.LlamaModel"


@pytest.mark.real
def test_vllm_model_implementing_the_setter_itself(vllm_scan):
    # deepseek_v2.py:1955 DeepseekV2ForCausalLM.set_aux_hidden_state_layers writes
    # self.model.aux_hidden_state_layers (model_cls = DeepseekV2Model, 1883/1914), read
    # in DeepseekV2Model.forward (1561: `if idx in self.aux_hidden_state_layers`).
    # DeepseekV3ForCausalLM inherits it. Its get_eagle3_aux_hidden_state_layers (1958)
    # is never called: the runner calls get_eagle3_default_aux_hidden_state_layers.
    data, models = vllm_scan
    v3 = models["DeepseekV3ForCausalLM"]
    assert v3["verdict"] == "ok", v3["reason"]
    assert _hops(v3) == [
        ("setter", "deepseek_v2.DeepseekV2ForCausalLM.set_aux_hidden_state_layers", 1955),
        ("write", "deepseek_v2.DeepseekV2Model.aux_hidden_state_layers", 1956),
        ("read", "deepseek_v2.DeepseekV2Model.forward", 1561),
    ]
    assert "dead-default" in v3["findings"]
    dead = {(f["file"], f["line"]) for f in data["findings"] if f["slug"] == "dead-default"}
    assert dead == {("vllm/model_executor/models/deepseek_v2.py", 1958), ("vllm/model_executor/models/kimi_k25.py", 473),
                    ("vllm/model_executor/models/pixtral.py", 511), ("vllm/model_executor/models/qwen3_5.py", 369)}


@pytest.mark.real
def test_vllm_multimodal_wrapper_delegating(vllm_scan):
    # qwen2_5_vl.py:1294 Qwen2_5_VLForConditionalGeneration inherits the interface's
    # setter; its language model is init_vllm_registered_model(architectures=
    # ["Qwen2ForCausalLM"]) (1444-1447), whose .model is Qwen2Model(nn.Module,
    # EagleModelMixin) (qwen2.py:324).
    _, models = vllm_scan
    vl = models["Qwen2_5_VLForConditionalGeneration"]
    assert vl["verdict"] == "ok", vl["reason"]
    assert vl["state_owner"] == "vllm.model_executor.models.qwen2.Qwen2Model"
    assert "registry class of Qwen2ForCausalLM" in vl["chain"][1]["resolved_by"]
    # kimi_k25.py:470 delegates explicitly: self.language_model.set_aux_hidden_state_layers
    # (471), language_model = init_vllm_registered_model(architectures=["DeepseekV2ForCausalLM"]).
    kimi = models["KimiK25ForConditionalGeneration"]
    assert kimi["verdict"] == "ok"
    assert _hops(kimi)[:3] == [
        ("setter", "kimi_k25.KimiK25ForConditionalGeneration.set_aux_hidden_state_layers", 470),
        ("delegate", "deepseek_v2.DeepseekV2ForCausalLM.set_aux_hidden_state_layers", 1955),
        ("write", "deepseek_v2.DeepseekV2Model.aux_hidden_state_layers", 1956),
    ]
    # mllama4.py:803 delegates to language_model = initialize_model(model_class=Llama4ForCausalLM)
    # (780-786), which inherits the interface's setter; Llama4Model(LlamaModel) holds the state.
    llama4 = models["Llama4ForConditionalGeneration"]
    assert llama4["verdict"] == "ok"
    assert llama4["state_owner"] == "vllm.model_executor.models.llama4.Llama4Model"


@pytest.mark.real
def test_vllm_models_without_the_interface_or_with_a_broken_holder(vllm_scan):
    data, models = vllm_scan
    # bloom.py:317 BloomForCausalLM(nn.Module, SupportsPP, SupportsQuant): no SupportsEagle3.
    assert models["BloomForCausalLM"]["verdict"] == "missing"
    # exaone4_5.py:326 subclasses Qwen2_5_VL (so it claims SupportsEagle3) but builds
    # Exaone4ForCausalLM (359), whose Exaone4Model(nn.Module) (exaone4.py:293) lacks
    # EagleModelMixin: the interface's `assert isinstance(holder, EagleModelMixin)` fails
    # (interfaces.py:1746), before the holder's missing _set_aux_hidden_state_layers is called.
    exaone = models["Exaone4_5_ForConditionalGeneration"]
    assert exaone["verdict"] == "broken"
    assert "Exaone4Model" in exaone["reason"] and "assert isinstance(holder, EagleModelMixin)" in exaone["reason"]
    assert [f["line"] for f in data["findings"] if f["slug"] == "broken-delegation"
            and "Exaone4_5" in str(f["entries"])] == [1746]
    # llava.py: the language model's class comes from config.text_config at run time.
    assert models["LlavaForConditionalGeneration"]["verdict"] == "unknown"


@pytest.mark.real
def test_vllm_runner_call_site(vllm_scan):
    data, _ = vllm_scan
    sites = {(s["file"], s["line"]): s for s in data["call_sites"]}
    # gpu_model_runner.py:5180-5188: config ids, else the model's default, then the setter.
    site = sites[("vllm/v1/worker/gpu_model_runner.py", 5188)]
    assert site["passes_ids"] is True
    assert site["caller"].endswith("GPUModelRunner._setup_eagle3_aux_hidden_state_outputs")
    # Runner V2 (gpu/model_runner.py:414, GPUModelRunner.load_model) calls the module-level
    # gpu/spec_decode/eagle/eagle3_utils.py:25 set_eagle3_aux_hidden_state_layers, whose line 40
    # calls eagle3_model.set_aux_hidden_state_layers(aux_layers).
    v2 = sites[("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", 40)]
    assert v2["caller"] == "vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils.set_eagle3_aux_hidden_state_layers"
    assert v2["passes_ids"] is True
    # Both run in Worker.load_model (gpu_worker.py:601 self.model_runner.load_model, the runner
    # _make_model_runner picks at 572-586), before Worker.compile_or_warm_up_model's
    # self.model_runner.capture_model() (gpu_worker.py:994): in order, not unknown.
    assert v2["before_graph_capture"] is True and site["before_graph_capture"] is True
    assert v2["order"] is not None and site["order"] is not None
    assert not [f for f in data["findings"] if f["slug"] == "call-order"]


@pytest.mark.real
def test_vllm_runner_takes_the_model_default_silently(vllm_scan):
    """gpu_model_runner.py:5180-5186 (runner V1): ids from the speculative config, else
    `aux_layers = self.model.get_eagle3_default_aux_hidden_state_layers()` with no log line
    (only the config branch logs). Runner V2 (eagle3_utils.py:35-39) logs both branches: quiet."""
    data, _ = vllm_scan
    runner = [(f["file"], f["line"]) for f in data["findings"] if f["slug"] == "silent-fallback" and f["entry"] is None]
    assert runner == [("vllm/v1/worker/gpu_model_runner.py", 5186)]
    found = next(f for f in data["findings"] if f["slug"] == "silent-fallback" and f["entry"] is None)
    assert "get_eagle3_default_aux_hidden_state_layers()" in found["message"]
    assert "`not aux_layers`" in found["message"] and "eagle_aux_hidden_state_layer_ids" in found["message"]


def test_cli_picks_the_pack_and_protocol_overrides(toy_tree, tmp_path):
    from click.testing import CliRunner

    from tracer.cli import main

    rules = tmp_path / "toy.toml"
    rules.write_text(TOY_PACK)
    runner = CliRunner()
    chosen = runner.invoke(main, ["scan", str(toy_tree), "--rules", str(rules), "--format", "json",
                                  "--cache-dir", str(tmp_path / "c")])
    assert chosen.exit_code == 1  # the broken wrapper is an error
    assert __import__("json").loads(chosen.output)["protocols"] == ["toy-aux"]
    # forcing a pack whose framework is not in the tree is a usage error
    forced = runner.invoke(main, ["scan", str(toy_tree), "--protocol", "sglang-eagle3", "--cache-dir", str(tmp_path / "c")])
    assert forced.exit_code == 2 and "no supported framework" in forced.output


def test_runner_passing_the_model_default_drops_the_ids(toy_tree, tmp_path):
    runner = toy_tree / "toyfw" / "worker" / "runner.py"
    runner.write_text(textwrap.dedent("""
        class Runner:
            def setup(self):
                self.model.set_aux_layers(self.model.default_aux_layers())
    """).lstrip())
    pack = parse_protocol(TOY_PACK, "toy.toml")
    result = scan_tree(toy_tree, [pack], cache_dir=tmp_path / "cache2").result
    dropped = [f for f in result.findings if f.slug == "ids-dropped"]
    assert [(f.file, f.line) for f in dropped] == [("toyfw/worker/runner.py", 3)]
    assert "default_aux_layers()" in dropped[0].message
    # the runner now calls default_aux_layers only inside the setter call: still "called"
    assert [f.slug for f in result.findings if f.slug == "dead-default"] == ["dead-default"]


@pytest.mark.real
def test_vllm_0_11_runner_always_uses_the_model_default(release_cache):
    # vLLM 0.11.0, v1/worker/gpu_model_runner.py:2645-2646:
    #   self.model.set_aux_hidden_state_layers(self.model.get_eagle3_aux_hidden_state_layers())
    # the draft config's layer ids are never read; models wrote self.model.aux_hidden_state_layers
    # themselves (llama.py:572-573, read in LlamaModel.forward at 403) and no multimodal
    # wrapper had the interface yet (qwen2_5_vl.py:967).
    data = scan_to_json(str(vllm_release_dir("0.11.0")), cache_dir=str(release_cache))
    models = {m["entry"].rsplit(".", 1)[-1]: m for m in data["models"]}
    assert _hops(models["LlamaForCausalLM"]) == [
        ("setter", "llama.LlamaForCausalLM.set_aux_hidden_state_layers", 572),
        ("write", "llama.LlamaModel.aux_hidden_state_layers", 573),
        ("read", "llama.LlamaModel.forward", 403),
    ]
    assert models["Qwen2_5_VLForConditionalGeneration"]["verdict"] == "missing"
    runner = [(f["slug"], f["file"], f["line"]) for f in data["findings"] if f["entry"] is None]
    assert runner == [("ids-dropped", "vllm/v1/worker/gpu_model_runner.py", 2645)]
    assert not [f for f in data["findings"] if f["slug"] == "dead-default"]  # that runner calls the override


@pytest.fixture(scope="module")
def vllm_context(release_cache):
    from tracer.api import scan_tree

    cache = release_cache
    return scan_tree(str(vllm_release_dir()), cache_dir=str(cache)), cache


@pytest.mark.real
@pytest.mark.parametrize("entry", ["LlamaForCausalLM", "MiniMaxM2ForCausalLM"])
def test_vllm_explain_runs_the_interface_setter_and_the_helper_capture(entry, tmp_path, vllm_context):
    """explain on vLLM 0.33.0 (issue #15): SupportsEagle3.set_aux_hidden_state_layers
    (interfaces.py:1728) asks hasattr(self, "get_language_model") and hasattr(self,
    "language_model") (both False for these classes: read from the MRO) and calls
    getattr(self, "model", self)._set_aux_hidden_state_layers(layers) (1749); the decoder
    loop captures through self._maybe_add_hidden_state(aux, idx + 1, ...) after each layer,
    a helper run in place. vLLM's ids name the hidden state entering layer i."""
    from tracer.effective.annotate import explain

    context, cache = vllm_context
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text(json.dumps(
        {"architectures": [entry], "num_hidden_layers": 8, "hidden_size": 64}))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps(
        {"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 64, "eagle_aux_hidden_state_layer_ids": [1, 3, 5]}))
    model, result = explain(context.result, list(context.protocols), tmp_path / "t", tmp_path / "d",
                            cache_dir=str(cache))
    assert model.entry.endswith(entry)
    assert result["layers_to_capture"] == [1, 3, 5], result["unknowns"]
    assert result["effective_layers"] == [0, 2, 4]
    assert result["findings"] == []
    steps = "\n".join(result["steps"])
    assert '`hasattr(self, "get_language_model")` is False' in steps
    assert "passes [1, 3, 5] to self.model._set_aux_hidden_state_layers (line 1749)" in steps
    assert result["graph_layers"] == [0, 2, 4] and not result["graph_layers_differ"]
