"""LMDeploy: ids carried on the config object (builders write, an __init__ reads), entry
classes from MODULE_MAP.update({...}) calls, the CUDA-graph output copy as part of the chain.

The synthetic trees (tracer/checks/config_trees.py) cover each piece; the real release
(LMDeploy 0.18.0 from PyPI) is checked against what was read there line by line."""

from __future__ import annotations

import pytest
from conftest import release_dir

from tracer.api import scan_tree
from tracer.checks.config_trees import BAR_WRITE, NO_READ, PROTOCOL, config_tree
from tracer.config.packs import load_protocols
from tracer.index.registry import read_registry_updates


def _scan(tmp_path, files):
    for path, text in files:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for folder in ("lmdeploy/pytorch", "lmdeploy/pytorch/models", "lmdeploy/pytorch/configurations"):
        (tmp_path / folder / "__init__.py").touch()
    return scan_tree(tmp_path, load_protocols(), use_cache=False).result


def _models(result):
    return {m.entry.rsplit(".", 1)[-1]: m for m in result.models}


def test_registry_updates_with_dotted_strings():
    text = ("P = 'pkg.models'\nM = dict()\nM.update({'A': f'{P}.a.A', 'B': P + '.b.B'})\n"
            "M.update({'A': 'pkg.models.c.C'})\nM['D'] = 'pkg.d.D'\nOTHER.update({'E': 'x.E'})\n")
    entries, duplicates = read_registry_updates(text, ("M",))
    assert {(e.architecture, e.module, e.class_name) for e in entries} == {
        ("A", "pkg.models.c", "C"), ("B", "pkg.models.b", "B"), ("D", "pkg.d", "D")}
    assert [(d.architecture, d.first.class_name, d.last.class_name) for d in duplicates] == [("A", "A", "C")]


def test_the_pack_detects_lmdeploy_and_traces_config_chains(tmp_path):
    result = _scan(tmp_path, config_tree())
    assert result.framework.name == "lmdeploy" and result.protocols == (PROTOCOL,)
    models = _models(result)
    assert {n: m.verdict for n, m in models.items()} == {"FooForCausalLM": "ok", "BarForCausalLM": "ok"}
    foo = [(h.kind, h.qualname.rsplit(".", 2)[-2] + "." + h.qualname.rsplit(".", 1)[-1]) for h in
           models["FooForCausalLM"].chain]
    assert foo == [("setter", "FooModelConfigBuilder.build"), ("delegate", "FooForCausalLM.__init__"),
                   ("delegate", "FooModel.__init__"), ("write", "FooModel.aux_hidden_state_layers"),
                   ("read", "FooModel.forward"), ("read", "FooForCausalLM.get_outputs_cudagraph")]
    # Bar's builder is picked by model type; the pack says those checkpoints name DeepseekV3ForCausalLM
    assert "kimi_k2" in models["BarForCausalLM"].chain[0].resolved_by


def test_written_never_read_is_a_dead_write_at_the_builder(tmp_path):
    files = config_tree(bar_read="self.norm = nn.Identity()")
    builders = dict(files)["lmdeploy/pytorch/configurations/builder.py"].split("\n")
    line = next(i for i, text in enumerate(builders, 1) if BAR_WRITE in text)
    bar = _models(_scan(tmp_path, files))["BarForCausalLM"]
    assert bar.verdict == "broken"
    assert [(f.slug, f.file, f.line) for f in bar.findings] == [
        ("dead-write", "lmdeploy/pytorch/configurations/builder.py", line)]


def test_stored_from_something_else_is_ids_dropped(tmp_path):
    bar = _models(_scan(tmp_path, config_tree(bar_read=NO_READ)))["BarForCausalLM"]
    assert bar.verdict == "broken" and [f.slug for f in bar.findings] == ["ids-dropped"]


def test_an_output_copy_without_the_key_drops_the_states(tmp_path):
    foo = _models(_scan(tmp_path, config_tree(foo_copy="")))["FooForCausalLM"]
    assert foo.verdict == "broken"
    assert [(f.slug, f.file) for f in foo.findings] == [("aux-dropped", "lmdeploy/pytorch/models/utils.py")]


def test_no_builder_writes_the_ids_is_missing(tmp_path):
    models = _models(_scan(tmp_path, config_tree(bar_write="pass")))
    assert models["BarForCausalLM"].verdict == "missing"
    assert models["FooForCausalLM"].verdict == "ok"


# -- LMDeploy 0.18.0 from PyPI, read by hand ----------------------------------------------------------
#
# configurations/llama.py:28 writes hf_config.aux_hidden_state_layers = (2, n//2, n-3) for
# architectures[0] == 'LlamaForCausalLM'; models/llama.py:232 reads it in LlamaModel.__init__,
# :266 captures `hidden_states + residual` before layer idx runs, :355 LlamaForCausalLM's
# get_outputs_cudagraph copies aux_hidden_states.
# configurations/kimi_k2.py:82 writes it for model_type == 'kimi_k2' (also through
# KimiK25ModelConfigBuilder.build on the text config, kimi_k25.py:25); KimiK25ForConditionalGeneration
# builds KimiK2ForCausalLM(config.text_config) whose KimiK2Model.__init__ reads it
# (kimi_k2_language.py:785); its get_outputs_cudagraph (kimi_k25.py:316) delegates to the language
# model's (kimi_k2_language.py:1041), which copies the key.
# A standalone Kimi-K2 checkpoint (model_type kimi_k2, architectures ["DeepseekV3ForCausalLM"]) is
# built by MODULE_MAP's 'DeepseekV3ForCausalLM' -> deepseek_v2.DeepseekV2ForCausalLM, whose
# DeepseekV2Model never reads the attribute: the ids are written and nothing is captured.
LMDEPLOY = "0.18.0"


@pytest.fixture(scope="module")
def lmdeploy_scan():
    return scan_tree(release_dir(LMDEPLOY, "lmdeploy"), load_protocols(), use_cache=False).result


@pytest.mark.real
def test_lmdeploy_verdicts(lmdeploy_scan):
    result = lmdeploy_scan
    assert result.framework.name == "lmdeploy" and result.protocols == ("lmdeploy-eagle3",)
    models = {m.entry: m for m in result.models}
    not_missing = {e: m.verdict for e, m in models.items() if m.verdict != "missing"}
    assert not_missing == {
        "lmdeploy.pytorch.models.llama.LlamaForCausalLM": "ok",
        "lmdeploy.pytorch.models.kimi_k25.KimiK25ForConditionalGeneration": "ok",
        "lmdeploy.pytorch.models.deepseek_v2.DeepseekV2ForCausalLM": "broken",
    }
    assert len(models) >= 55  # every MODULE_MAP class; the others get no ids from any builder

    def places(entry):
        return [(h.kind, h.file.rsplit("/", 1)[-1], h.line) for h in models[entry].chain]

    assert places("lmdeploy.pytorch.models.llama.LlamaForCausalLM") == [
        ("setter", "llama.py", 28), ("delegate", "llama.py", 304), ("delegate", "llama.py", 216),
        ("write", "llama.py", 232), ("read", "llama.py", 266), ("read", "llama.py", 355)]
    kimi25 = places("lmdeploy.pytorch.models.kimi_k25.KimiK25ForConditionalGeneration")
    assert kimi25[0] == ("setter", "kimi_k2.py", 82)
    assert ("write", "kimi_k2_language.py", 785) in kimi25 and ("read", "kimi_k2_language.py", 827) in kimi25
    assert kimi25[-1] == ("read", "kimi_k25.py", 316)

    deepseek = models["lmdeploy.pytorch.models.deepseek_v2.DeepseekV2ForCausalLM"]
    assert [(f.slug, f.file, f.line) for f in deepseek.findings] == [
        ("dead-write", "lmdeploy/pytorch/configurations/kimi_k2.py", 82)]
    assert "kimi_k2" in deepseek.findings[0].message


def test_explain_says_where_config_ids_come_from_instead_of_guessing(tmp_path):
    import json
    import re
    import subprocess
    import sys

    root = tmp_path / "tree"
    root.mkdir()
    _scan(root, config_tree())
    for name, data in (("target", {"architectures": ["FooForCausalLM"], "num_hidden_layers": 12, "hidden_size": 8}),
                       ("draft", {"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 8,
                                  "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 5, 9]}})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-m", "tracer", "explain", str(root), "--target-config",
                          str(tmp_path / "target"), "--draft-config", str(tmp_path / "draft")],
                         capture_output=True, text=True, timeout=120)
    # issue #19: the builder runs on the target config (12 layers: (2, 6, 9)), the decoder's
    # __init__ stores it, and the loop captures the input of those layers; the draft's
    # [1, 5, 9] is never read, and it names other layers (the outputs of 0, 4, 8)
    assert "written by FooModelConfigBuilder.build" in out.stdout, out.stdout + out.stderr
    assert "layers_to_capture = [2, 6, 9]" in out.stdout
    assert "Eager path captures the outputs of: layer 1, layer 5, layer 8" in out.stdout
    assert re.search(r"fallback-triggered \[warning\] [\w-]+: FooModelConfigBuilder\.build writes "
                     r"aux_hidden_state_layers = \[2, 6, 9\]", out.stdout), out.stdout
    assert "count-mismatch" not in out.stdout
