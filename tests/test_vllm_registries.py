"""vLLM's other registries (issue #15): the Transformers modeling backend's classes are
traced as targets, the speculative registry's classes are draft heads, and a forward that
returns early through another path before its capturing loop gets a warning.

The toy tree exercises the pack keys without any vLLM name; the `real` tests assert what
was read by hand in vLLM 0.33.0 from PyPI (tests/releases.py downloads it)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import release_dir

from tracer.api import scan_to_json, scan_tree
from tracer.config.packs import ProtocolError, load_protocols, parse_protocol

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
registry_variables = ["_TEXT"]
draft_registry_variables = ["_SPEC"]
exclude_patterns = ["*EmbeddingModel"]
registry_package = "toyfw.models"
modules = ["toyfw.models.*"]
"""

TOY_FILES = {
    "toyfw/__init__.py": "",
    "toyfw/version.py": '__version__ = "1.0.0"\n',
    "toyfw/models/__init__.py": "",
    "toyfw/models/registry.py": """
        _TEXT = {
            "DenseForCausalLM": ("dense", "DenseForCausalLM"),
            "DenseEmbed": ("dense", "DenseEmbeddingModel"),
        }
        _SPEC = {
            "FancyDraft": ("head", "FancyHead"),
            "DenseAsDraft": ("dense", "DenseForCausalLM"),
        }
    """,
    "toyfw/models/interfaces.py": """
        class Mixin:
            aux_layers = ()

            def _set_aux_layers(self, layers):
                self.aux_layers = tuple(layers)


        class SupportsAux:
            def set_aux_layers(self, layers):
                holder = getattr(self, "model", self)
                holder._set_aux_layers(layers)
    """,
    "toyfw/models/dense.py": """
        from toyfw.models.interfaces import Mixin, SupportsAux


        class DenseModel(Mixin):
            def __init__(self):
                self.layers = []

            def forward(self, h):
                out = []
                for idx, layer in enumerate(self.layers):
                    if idx in self.aux_layers:
                        out.append(h)
                    h = layer(h)
                return h, out


        class DenseForCausalLM(SupportsAux):
            def __init__(self):
                self.model = DenseModel()


        class DenseEmbeddingModel(SupportsAux):
            def __init__(self):
                self.model = DenseModel()
    """,
    "toyfw/models/head.py": """
        from toyfw.models.interfaces import SupportsAux


        class HeadModel:
            def __init__(self):
                self.layers = []


        class FancyHead(SupportsAux):
            def __init__(self):
                self.model = HeadModel()
    """,
}


@pytest.fixture()
def toy_scan(tmp_path):
    for rel, text in TOY_FILES.items():
        path = tmp_path / "toy" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    pack = parse_protocol(TOY_PACK, "toy.toml")
    result = scan_tree(tmp_path / "toy", load_protocols() + [pack], cache_dir=tmp_path / "cache").result
    return {m.entry.rsplit(".", 1)[-1]: m for m in result.models}


def test_draft_registry_classes_are_draft_heads_whatever_their_names(toy_scan):
    head = toy_scan["FancyHead"]
    # FancyHead's holder (HeadModel) has no _set_aux_layers: its chain alone is broken,
    # but a draft head is not judged and its finding is informational
    assert (head.draft, head.verdict, head.chain_verdict) == (True, "draft", "broken")
    assert [(f.slug, f.severity) for f in head.findings] == [("broken-delegation", "info")]
    assert "draft head" in head.findings[0].message


def test_a_target_table_row_wins_over_the_draft_table(toy_scan):
    dense = toy_scan["DenseForCausalLM"]
    assert (dense.draft, dense.verdict) == (False, "ok"), dense.reason


def test_excluded_classes_are_no_entry_classes(toy_scan):
    assert "DenseEmbeddingModel" not in toy_scan
    assert sorted(toy_scan) == ["DenseForCausalLM", "FancyHead"]


def test_the_new_pack_keys_are_typed():
    broken = TOY_PACK.replace('exclude_patterns = ["*EmbeddingModel"]', 'exclude_patterns = "*EmbeddingModel"')
    with pytest.raises(ProtocolError, match="'entry.exclude_patterns' must be a list of strings"):
        parse_protocol(broken, "toy.toml")


# -- vLLM 0.33.0 -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vllm_models(release_cache):
    data = scan_to_json(str(release_dir("0.33.0", "vllm")), cache_dir=str(release_cache))
    return data, {m["entry"].replace("vllm.model_executor.models.", ""): m for m in data["models"]}


def _hops(model):
    return [(h["kind"], h["qualname"].replace("vllm.model_executor.models.", ""), h["line"]) for h in model["chain"]]


@pytest.mark.real
def test_transformers_backend_classes_are_traced_to_the_hooks_outside_the_tree(vllm_models):
    """transformers/base.py:845 Base.set_aux_hidden_state_layers loops over the ids, writes
    self.model._can_record_outputs[f"aux_hidden_state_{layer}"] = OutputRecorder(...) (861;
    self.model is AutoModel.from_config(...), a transformers model: 853 is the first write
    on it) and self._output_aux_hidden_states_kwargs[f"output_{layer_key}"] = True (862),
    which Base.forward passes to self.model(...) (811). The capture is transformers'
    output-recording hook: outside the tree, so the verdict is unknown, naming that hop."""
    _, models = vllm_models
    causal = models["transformers.TransformersForCausalLM"]
    assert causal["verdict"] == "unknown"
    assert "AutoModel.from_config" in causal["reason"] and "outside the scanned tree" in causal["reason"]
    assert _hops(causal) == [
        ("setter", "transformers.base.Base.set_aux_hidden_state_layers", 845),
        ("unresolved", "self.model._can_record_outputs", 853),
        ("write", "transformers.TransformersForCausalLM._output_aux_hidden_states_kwargs", 862),
        ("read", "transformers.base.Base.forward", 811),
    ]
    multimodal = models["transformers.TransformersMultiModalForCausalLM"]
    assert multimodal["verdict"] == "unknown"
    assert ("read", "transformers.multimodal.MultiModalMixin.forward", 971) in _hops(multimodal)
    assert models["transformers.TransformersMoEForCausalLM"]["verdict"] == "unknown"
    # the backend's pooling classes are never EAGLE-3 targets (exclude_patterns)
    assert not [k for k in models if k.startswith("transformers.") and ("Embedding" in k or "Classification" in k)]
    # its MTP heads are draft heads (draft_patterns "*ForMTP")
    assert models["transformers.TransformersForMTP"]["draft"] is True
    assert models["transformers.TransformersForMTP"]["verdict"] == "draft"


@pytest.mark.real
def test_speculative_registry_classes_are_draft_heads(vllm_models):
    data, models = vllm_models
    expected = {  # class -> (verdict, chain verdict) of _SPECULATIVE_DECODING_MODELS rows
        "llama_eagle3.Eagle3LlamaForCausalLM": ("missing", None),
        "deepseek_mtp.DeepSeekMTP": ("missing", None),
        "qwen3_dflash.DFlashQwen3ForCausalLM": ("draft", "broken"),
        "qwen3_dspark.Qwen3DSparkForCausalLM": ("draft", "broken"),
        "vllm.models.deepseek_v4.DSparkDeepseekV4ForCausalLM": ("missing", None),
    }
    for name, (verdict, chain_verdict) in expected.items():
        model = models[name]
        assert model["draft"] is True, name
        assert (model["verdict"], model.get("chain_verdict")) == (verdict, chain_verdict), name
    drafts = {m["entry"] for m in data["models"] if m["draft"]}
    assert len(drafts) >= 55
    # a draft head's findings never raise the exit status
    only_drafts = [f for f in data["findings"] if f["entries"] and set(f["entries"]) <= drafts]
    assert only_drafts and {f["severity"] for f in only_drafts} == {"info"}
    # a class registered as a target and as a draft stays a target
    assert models["llama.LlamaForCausalLM"]["draft"] is False


@pytest.mark.real
def test_gemma4_fast_prefill_branch_skips_the_capture(vllm_models):
    """gemma4.py:1323 `if self.fast_prefill_enabled:` (cache_config.kv_sharing_fast_prefill)
    returns self.fast_prefill_forward(...) (1324), which runs the layers through the self-
    and cross-decoder, before the loop that captures through self._maybe_add_hidden_state
    (1357, 1376): the chain stays ok, the branch is a warning."""
    data, models = vllm_models
    found = [f for f in data["findings"] if f["slug"] == "capture-skipped-on-branch"]
    assert [(f["file"], f["line"], f["severity"]) for f in found] == [
        ("vllm/model_executor/models/gemma4.py", 1323, "warning")]
    finding = found[0]
    assert "`self.fast_prefill_enabled`" in finding["message"] and "(line 1324)" in finding["message"]
    assert "self.fast_prefill_forward(" in finding["message"]
    assert {e.rsplit(".", 1)[-1] for e in finding["entries"]} >= {"Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"}
    assert "vllm.model_executor.models.interfaces.EagleModelMixin._maybe_add_hidden_state" in finding["chain"]
    assert models["gemma4.Gemma4ForCausalLM"]["verdict"] == "ok"
