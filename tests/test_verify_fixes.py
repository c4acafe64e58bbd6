"""tracer verify: the build fixes (tracer/verify/build_fixes.py) and the
special-token shrink (derive.shrink_token_ids). Each rule is applied only to a
build that failed its way; these tests give each rule the failure it answers
and one it must leave alone. No SGLang needed; the MoE stand-in needs torch."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest

from tracer.verify import build_fixes, derive

HAVE_TORCH = importlib.util.find_spec("torch") is not None


class Cfg:
    """A stand-in for a transformers config (to_dict + model_type)."""

    model_type = "x"

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def to_dict(self):
        return dict(vars(self))


# -- special token ids ---------------------------------------------------------------


def test_special_token_ids_beyond_the_shrunk_vocabulary_move_inside_it():
    raw = {"vocab_size": 262144, "num_hidden_layers": 30, "hidden_size": 2048,
           "image_token_id": 258880, "eoi_token_id": 258882, "eos_token_id": [1, 258882],
           "boi_token_id": 255999, "bos_token_id": 2,
           "text_config": {"vocab_size": 262144, "hidden_size": 2048, "num_hidden_layers": 30,
                           "video_token_id": 258884, "pad_token_id": 0}}
    small, _ = derive.shrink_config(raw, 8)
    vocab = small["vocab_size"]
    ids = [small["image_token_id"], small["eoi_token_id"], small["boi_token_id"],
           small["text_config"]["video_token_id"]]
    assert all(derive._SPECIAL_ID_BASE <= i < vocab for i in ids)
    assert len(set(ids)) == 4  # distinct ids stay distinct
    assert small["eos_token_id"] == [1, small["eoi_token_id"]]  # the same id maps the same way
    assert small["bos_token_id"] == 2 and small["text_config"]["pad_token_id"] == 0  # inside: kept


def test_token_shrink_leaves_sizes_and_non_token_fields_alone():
    cfg = {"vocab_size": 256, "max_position_embeddings": 4096, "sliding_window": 1024,
           "image_token_id": 100}
    derive.shrink_token_ids(cfg, 256)
    assert cfg == {"vocab_size": 256, "max_position_embeddings": 4096, "sliding_window": 1024,
                   "image_token_id": 100}


# -- build fixes -------------------------------------------------------------------------


def test_layer_types_none_becomes_full_attention_only_after_that_failure():
    text = Cfg(num_hidden_layers=4, layer_types=None)
    top = Cfg(text_config=text, num_hidden_layers=4)
    note = build_fixes.fix_for(TypeError("'NoneType' object is not subscriptable"), top)
    assert text.layer_types == ["full_attention"] * 4 and "layer_types" in note
    # a different TypeError: nothing changes
    other = Cfg(num_hidden_layers=2, layer_types=None)
    assert build_fixes.fix_for(TypeError("unsupported operand type(s)"), other) is None
    assert other.layer_types is None
    # nothing left to fix: the build's error stands
    assert build_fixes.fix_for(TypeError("'NoneType' object is not iterable"), top) is None


def test_rope_keyed_by_layer_type_becomes_one_flat_rope():
    cfg = Cfg(rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})
    note = build_fixes.fix_for(TypeError("unhashable type: 'dict'"), cfg)
    assert cfg.rope_parameters == {"rope_type": "default", "rope_theta": 5e6} and cfg.rope_theta == 5e6
    assert "flat rope" in note
    flat = Cfg(rope_parameters={"rope_type": "default", "rope_theta": 1e4})
    assert build_fixes.fix_for(TypeError("unhashable type: 'dict'"), flat) is None


def test_refused_keyword_is_dropped_for_that_class_and_called_a_release_bug(monkeypatch):
    module = types.ModuleType("sglang.fake_models")

    class DecoderLayer:
        def __init__(self, config, layer_id=0):
            self.layer_id = layer_id

    module.DecoderLayer = DecoderLayer
    monkeypatch.setitem(sys.modules, "sglang.fake_models", module)
    with pytest.raises(TypeError) as err:
        DecoderLayer(None, layer_id=3, start_layer=0)
    note = build_fixes.fix_for(err.value, Cfg())
    assert note.startswith(build_fixes.RELEASE_BUG) and "start_layer" in note
    assert DecoderLayer(None, layer_id=3, start_layer=0).layer_id == 3
    assert note in build_fixes.PROCESS_PATCHES  # a later build in this process notes it too
    # the same failure again (the fix did not help): no second fix
    assert build_fixes.fix_unexpected_keyword(str(err.value)) is None
    # a class the release does not have: no fix
    assert build_fixes.fix_unexpected_keyword("Nowhere.__init__() got an unexpected keyword argument 'x'") is None


# -- bfloat16 retry ----------------------------------------------------------------------


def test_bf16_retry_only_when_every_path_fails_on_the_dtype_mismatch():
    mismatch = {"error": "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: float != "
                         "c10::BFloat16"}
    seen = []

    def run():
        seen.append(build_fixes.RUN_DTYPE[0])
        if build_fixes.RUN_DTYPE[0] == "float32":
            return {"paths": {"extend": mismatch, "decode": mismatch}}
        return {"paths": {"extend": {"captured": [0, 3, 5]}, "decode": {"captured": [0, 3, 5]}}, "notes": []}

    result = build_fixes.with_dtype_retry(run)
    assert seen == ["float32", "bfloat16"] and result["dtype"] == "bfloat16"
    assert any("bfloat16" in n for n in result["notes"]) and build_fixes.RUN_DTYPE[0] == "float32"
    # one path ran: no retry
    seen.clear()
    mixed = {"paths": {"extend": mismatch, "decode": {"captured": [1]}}}
    assert build_fixes.with_dtype_retry(lambda: seen.append(1) or mixed) is mixed and seen == [1]
    assert not build_fixes.pins_bf16({"paths": {"extend": {"error": "IndexError: out of range"}}})


# -- MoE with the router weight on the input ---------------------------------------------


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")
def test_moe_standin_weights_the_input_and_passes_other_layers_through(monkeypatch):
    import torch
    import torch.nn.functional as F

    dispatcher = types.ModuleType("sglang.srt.layers.moe.token_dispatcher")
    dispatcher.StandardCombineInput = lambda hidden_states: types.SimpleNamespace(hidden_states=hidden_states)
    monkeypatch.setitem(sys.modules, "sglang.srt.layers.moe.token_dispatcher", dispatcher)
    gen = torch.Generator().manual_seed(0)
    E, H, inter, T = 3, 8, 5, 4
    layer = types.SimpleNamespace(
        w13_weight=torch.randn(E, 2 * inter, H, generator=gen), w2_weight=torch.randn(E, H, inter, generator=gen),
        moe_runner_config=types.SimpleNamespace(apply_router_weight_on_input=True, activation="silu"))
    x = torch.randn(T, H, generator=gen)
    weights = torch.rand(T, 1, generator=gen)
    ids = torch.randint(0, E, (T, 1), generator=gen)
    out = types.SimpleNamespace(hidden_states=x, topk_output=(weights, ids, None))
    called = []
    forward = build_fixes.moe_native_weight_on_input(lambda layer, d: called.append(1))
    got = forward(layer, out).hidden_states
    want = torch.stack([
        F.linear(F.silu(F.linear(x[t] * weights[t, 0], layer.w13_weight[ids[t, 0], :inter]))
                 * F.linear(x[t] * weights[t, 0], layer.w13_weight[ids[t, 0], inter:]),
                 layer.w2_weight[ids[t, 0]]) for t in range(T)])
    assert torch.allclose(got, want, atol=1e-5) and not called
    layer.moe_runner_config.apply_router_weight_on_input = False
    forward(layer, out)
    assert called == [1]  # the release's own function for every other layer


# -- config fields under a checkpoint's name; sub-config defaults ------------------------


def test_a_suffixed_field_is_filled_from_the_field_the_config_has():
    cfg = Cfg(sliding_window=128, head_dim=None)
    assert build_fixes.alias_of(cfg, "sliding_window_size") == (128, "the defaults lack it; alias of sliding_window")
    assert build_fixes.alias_of(cfg, "head_dim_size") is None  # the shorter field is None: no value to copy
    assert build_fixes.alias_of(cfg, "vocab_size") is None


def test_sub_config_requiring_an_argument_takes_the_parents_value():
    class Vision:
        def __init__(self, swiglu_limit, depth=2):
            self.d = {"swiglu_limit": swiglu_limit, "depth": depth}

        def to_json_string(self, use_diff=False):
            import json

            return json.dumps(self.d)

    assert derive._sub_config_defaults(Vision, {"swiglu_limit": 7.0}) == {"swiglu_limit": 7.0, "depth": 2}
    assert derive._sub_config_defaults(Vision, {"other": 1}) is None  # not derivable: left None


# -- the DSA indexer stand-in ------------------------------------------------------------


def test_dsa_indexer_standin_returns_none_only_without_indexer_metadata(monkeypatch):
    backend = types.SimpleNamespace(metadata=None)
    backend.get_indexer_metadata = lambda layer_id, fb: backend.metadata
    context = types.ModuleType("sglang.srt.model_executor.forward_context")
    context.get_attn_backend = lambda: backend
    monkeypatch.setitem(sys.modules, "sglang.srt.model_executor.forward_context", context)
    indexer_mod = types.ModuleType(build_fixes.DSA_INDEXER)

    class Indexer:
        def forward_native(self, *args, **kwargs):
            raise NotImplementedError("Indexer has no native (pure-torch) path")

    indexer_mod.Indexer = Indexer
    notes: list[str] = []
    assert not build_fixes.install_dsa_indexer_standin(notes) and not notes  # not imported: untouched
    monkeypatch.setitem(sys.modules, build_fixes.DSA_INDEXER, indexer_mod)
    assert build_fixes.install_dsa_indexer_standin(notes) and "DSA" in notes[0]
    assert Indexer().forward_native("x", "q", "pos", "fb", 3) is None
    backend.metadata = object()
    with pytest.raises(NotImplementedError, match="tracer stand-in"):
        Indexer().forward_native("x", "q", "pos", "fb", 3)
    build_fixes.install_dsa_indexer_standin(notes)  # twice: wrapped once
    assert Indexer.forward_native._tracer_original.__name__ == "forward_native"
    assert not getattr(Indexer.forward_native._tracer_original, "_tracer_standin", False)


def test_linear_attention_index_lists_become_full_attention_and_say_so():
    raw = {"num_hidden_layers": 46, "hidden_size": 4096,
           "linear_attn_config": {"full_attn_layers": [3, 7, 11], "kda_layers": [0, 1, 2, 4, 5, 6],
                                  "num_heads": 64}}
    small, notes = derive.shrink_config(raw, 8)
    assert small["linear_attn_config"]["kda_layers"] == []
    assert small["linear_attn_config"]["full_attn_layers"] == list(range(8))
    assert any("ARCHITECTURE CHANGED" in n and "linear_attn_config" in n for n in notes)
    # without the hybrid switch nothing changes
    kept, _ = derive.shrink_config(raw, 8, attention_only=False)
    assert kept["linear_attn_config"]["kda_layers"] == [0, 1, 2, 4, 5, 6]


def test_rope_parameters_none_beside_a_theta_becomes_plain_rope():
    cfg = Cfg(rope_parameters=None, rope_theta=1e7, num_hidden_layers=4)
    note = build_fixes.fix_for(TypeError("argument of type 'NoneType' is not iterable"), cfg)
    assert cfg.rope_parameters == {"rope_type": "default", "rope_theta": 1e7} and "rope_theta only" in note
    no_theta = Cfg(rope_parameters=None, num_hidden_layers=4)
    assert build_fixes.fix_for(TypeError("argument of type 'NoneType' is not iterable"), no_theta) is None


def test_mla_sizes_left_none_by_the_class_defaults_get_the_harness_sizes():
    raw = {"num_hidden_layers": 4, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
           "kv_lora_rank": None, "qk_nope_head_dim": None, "qk_rope_head_dim": None, "v_head_dim": None}
    small, notes = derive.shrink_config(raw, 4)
    assert (small["kv_lora_rank"], small["qk_nope_head_dim"], small["qk_rope_head_dim"], small["v_head_dim"]) == (
        32, 16, 8, 16)
    assert any("MLA sizes" in n for n in notes)
    # a model that sets one of them (or has no MLA keys) is left as it is
    partial, _ = derive.shrink_config(dict(raw, kv_lora_rank=512), 4)
    assert partial["qk_nope_head_dim"] is None
    plain, _ = derive.shrink_config({"num_hidden_layers": 4, "hidden_size": 4096}, 4)
    assert "kv_lora_rank" not in plain


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")
def test_recorder_sees_the_stream_at_the_first_norm_of_a_norm_list():
    """A layer whose norms are a ModuleList (one per sub-block) and whose
    residual lives outside its arguments: the stream is what its first norm
    receives."""
    import torch

    from tracer.verify.harness import StreamRecorder, match_aux

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = torch.nn.ModuleList([torch.nn.LayerNorm(4), torch.nn.LayerNorm(4)])
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, positions, hidden_states, store):
            stream = hidden_states + store["residual"]  # the residual is kept outside the call
            store["residual"] = stream
            h = self.lin(self.input_layernorm[0](stream))
            return self.input_layernorm[1](h)

    torch.manual_seed(0)
    layers = torch.nn.ModuleList([Layer(), Layer(), Layer()])
    recorder = StreamRecorder(layers)
    store = {"residual": torch.zeros(2, 4)}
    hidden = torch.randn(2, 4)
    aux = []
    for i, layer in enumerate(layers):
        aux.append(hidden + store["residual"])  # what a snapshot of the stream before layer i holds
        hidden = layer(None, hidden, store)
    captured, _ = match_aux(aux[1:], recorder.take())
    assert captured == [0, 1]  # the stream before layer i = the output of layer i - 1
