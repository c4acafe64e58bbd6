"""Model families the harness can build: which SGLang class, which
transformers reference, how to make a tiny config (or shrink a real one),
and where the decoder layers live.

Sizes are tiny so a run takes seconds on a CPU; the layer count is the real
one (or ``--layers``) so that layer indices mean what they mean in
production. Nothing here imports torch at module import time.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class Family:
    key: str
    module: str  # sglang.srt.models.<module>
    entries: tuple  # SGLang entry classes of this family
    hf_config: str  # transformers config class
    hf_model: str | None  # transformers reference model; None: random weights
    layers_path: str  # attribute path from the entry object to the decoder layers
    mla: bool = False
    split_experts: bool = False  # transformers packs experts; SGLang loads them one by one
    wrapper: bool = False  # the entry delegates the setter to an inner language model
    hf_prefix: str = ""  # prefix that turns the reference's names into the entry's


FAMILIES: dict[str, Family] = {f.key: f for f in [
    Family("llama", "llama", ("LlamaForCausalLM",), "LlamaConfig", "LlamaForCausalLM",
           "model.layers"),
    Family("qwen2", "qwen2", ("Qwen2ForCausalLM",), "Qwen2Config", "Qwen2ForCausalLM",
           "model.layers"),
    Family("qwen3_moe", "qwen3_moe", ("Qwen3MoeForCausalLM",), "Qwen3MoeConfig",
           "Qwen3MoeForCausalLM", "model.layers", split_experts=True),
    Family("deepseek_v2", "deepseek_v2", ("DeepseekV2ForCausalLM",),
           "DeepseekV2Config", "DeepseekV2ForCausalLM", "model.layers", mla=True,
           split_experts=True),
    # same SGLang module; V3 routing (sigmoid scores, a correction bias) needs
    # transformers' V3 reference
    Family("deepseek_v3", "deepseek_v2", ("DeepseekV3ForCausalLM",),
           "DeepseekV3Config", "DeepseekV3ForCausalLM", "model.layers", mla=True,
           split_experts=True),
    # Llama-4 (text-only checkpoint): the wrapper's setter delegates to
    # language_model (Llama4ForCausalLM), which inherits LlamaForCausalLM's.
    Family("llama4", "mllama4", ("Llama4ForConditionalGeneration",), "Llama4Config",
           "Llama4ForCausalLM", "language_model.model.layers", wrapper=True,
           hf_prefix="language_model."),
]}


def family_for_entry(entry: str) -> Family:
    for family in FAMILIES.values():
        if entry in family.entries or entry == family.key:
            return family
    known = ", ".join(e for f in FAMILIES.values() for e in f.entries)
    raise KeyError(f"no runtime family for entry {entry!r}; known: {known}")


# -- configs -----------------------------------------------------------------

_TINY_TEXT = dict(vocab_size=128, hidden_size=64, intermediate_size=128,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False,
                  hidden_act="silu")

_TINY = {
    "llama": dict(_TINY_TEXT, attention_bias=False, mlp_bias=False),
    "qwen2": dict(_TINY_TEXT, use_sliding_window=False),
    "qwen3_moe": dict(_TINY_TEXT, moe_intermediate_size=32, num_experts=4,
                      num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                      mlp_only_layers=[], use_sliding_window=False),
    "deepseek_v2": dict(_TINY_TEXT, moe_intermediate_size=32, n_routed_experts=6,
                        num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                        kv_lora_rank=32, q_lora_rank=None, qk_nope_head_dim=16,
                        qk_rope_head_dim=8, v_head_dim=16, num_key_value_heads=4),
    "deepseek_v3": dict(_TINY_TEXT, moe_intermediate_size=32, n_routed_experts=6,
                        num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                        kv_lora_rank=32, q_lora_rank=48, qk_nope_head_dim=16,
                        qk_rope_head_dim=8, v_head_dim=16, num_key_value_heads=4,
                        n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5,
                        scoring_func="sigmoid", topk_method="noaux_tc"),
    "llama4": dict(_TINY_TEXT, intermediate_size=128, intermediate_size_mlp=128,
                   num_local_experts=2, num_experts_per_tok=1, interleave_moe_layer_step=1000,
                   use_qk_norm=False, attention_chunk_size=8192, no_rope_layer_interval=4,
                   attn_temperature_tuning=False, attention_bias=False),
}

# Fields real DeepSeek config.json files carry, SGLang reads, and
# transformers' DeepseekV2Config lacks (see the notes).
_DEEPSEEK_EXTRA = dict(moe_layer_freq=1, scoring_func="softmax", topk_method="greedy",
                       n_group=1, topk_group=1, norm_topk_prob=False,
                       routed_scaling_factor=1.0, n_shared_experts=1)

# Size keys a real config is shrunk along; everything else is kept. DeepSeek
# gets 6 routed experts: with a power of two, SGLang's CUDA top-k takes the
# sgl-kernel fused gate, with 6 its own torch implementation.
_SHRINK = dict(hidden_size=64, intermediate_size=128, intermediate_size_mlp=128,
               moe_intermediate_size=32, shared_expert_intermediate_size=32,
               num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
               num_experts=4, n_routed_experts=6, num_local_experts=2, num_experts_per_tok=2,
               kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
               n_shared_experts=1, n_group=1, topk_group=1, max_position_embeddings=256)
_DROP = ("quantization_config", "auto_map", "_name_or_path", "torch_dtype", "dtype",
         "num_nextn_predict_layers")


def load_json_config(path: str) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    return json.loads(p.read_text())


def shrink_config(raw: dict[str, Any], layers: int | None) -> dict[str, Any]:
    """Keep the architecture and the layer count of a real config, shrink
    every size to the tiny values."""
    cfg = copy.deepcopy(raw)
    for key in _DROP:
        cfg.pop(key, None)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    for key, value in _SHRINK.items():
        if key in text and text[key] is not None:
            text[key] = value if key != "num_experts_per_tok" else min(text[key], value)
    if text.get("q_lora_rank"):
        text["q_lora_rank"] = 48
    if isinstance(text.get("num_key_value_heads"), int) and "kv_lora_rank" in text:
        text["num_key_value_heads"] = text["num_attention_heads"]
    if layers is not None:
        text["num_hidden_layers"] = layers
        for key in ("first_k_dense_replace",):
            if key in text:
                text[key] = min(text[key], layers)
    # long-context rope variants: keep the type, neutral factor, tiny window
    for rope_key in ("rope_scaling", "rope_parameters"):
        rope = text.get(rope_key)
        if isinstance(rope, dict) and rope.get("factor"):
            rope["factor"] = 1.0
            if "original_max_position_embeddings" in rope:
                rope["original_max_position_embeddings"] = 256
    return cfg


def tiny_config(family: Family, layers: int) -> dict[str, Any]:
    cfg = dict(_TINY[family.key], num_hidden_layers=layers)
    if family.key == "deepseek_v3":
        cfg.pop("head_dim")  # transformers' V3 derives its rope size from head_dim
    if family.key == "llama4":
        return {"text_config": cfg, "vision_config": None}
    return cfg


def build_hf_config(family: Family, raw: dict[str, Any], device: str):
    """A transformers config object for the family from a plain dict."""
    import transformers

    raw = copy.deepcopy(raw)
    cls = getattr(transformers, family.hf_config)
    if family.mla:
        extra = {k: raw.get(k, v) for k, v in _DEEPSEEK_EXTRA.items()}
        rope = dict(raw.pop("rope_scaling", None) or raw.pop("rope_parameters", None) or {})
        # SGLang turns any non-default rope of an MLA model into deepseek_yarn
        # (in place, on the config); yarn with factor 1 is plain rope, so
        # transformers' reference computes the same thing.
        rope.update(rope_type="yarn", factor=1.0)
        rope.pop("type", None)
        rope.setdefault("original_max_position_embeddings", raw.get("max_position_embeddings", 256))
        rope.setdefault("rope_theta", raw.pop("rope_theta", 10000.0))
        cfg = cls(rope_scaling=rope,
                  **{k: v for k, v in raw.items() if k not in ("architectures", "model_type")})
        for key, value in extra.items():
            setattr(cfg, key, value)
    elif family.key == "llama4":
        text = raw.get("text_config", raw)
        cfg = cls(text_config={k: v for k, v in text.items() if k != "architectures"})
    else:
        cfg = cls(**{k: v for k, v in raw.items() if k not in ("architectures", "model_type")})
    cfg.architectures = [family.entries[0]] if not raw.get("architectures") else raw["architectures"]
    for each in {id(cfg): cfg, id(text_config(family, cfg)): text_config(family, cfg)}.values():
        each.torch_dtype = "float32"
        each.dtype = "float32"
        rope = getattr(each, "rope_parameters", None)
        if not hasattr(each, "rope_theta") and isinstance(rope, dict) and "rope_theta" in rope:
            # releases written for transformers 4 read config.rope_theta
            each.rope_theta = rope["rope_theta"]
    return cfg


def text_config(family: Family, cfg):
    return cfg.text_config if family.key == "llama4" else cfg


# -- draft configs -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DraftIds:
    requested: list | None  # what the draft config names, in any known form
    runner: list | None  # what the release's runner passes to the setter
    source: str  # where the ids were found


def read_draft_ids(path: str | None, ids: str | None = None) -> DraftIds:
    """The ids a draft config asks for, and the ids SGLang's runner passes.

    The runner (0.5.6 and 0.5.23) reads only
    ``eagle_config["eagle_aux_hidden_state_layer_ids"]`` and falls back to
    ``None`` (the model's default layers) on any error."""
    if ids is not None:
        parsed = None if ids.strip().lower() in ("", "none") else [int(x) for x in ids.split(",")]
        return DraftIds(parsed, parsed, "--ids")
    if path is None:
        return DraftIds(None, None, "no draft config")
    raw = load_json_config(path)
    eagle = raw.get("eagle_config")
    if isinstance(eagle, dict) and eagle.get("eagle_aux_hidden_state_layer_ids") is not None:
        found = list(eagle["eagle_aux_hidden_state_layer_ids"])
        return DraftIds(found, found, "eagle_config.eagle_aux_hidden_state_layer_ids")
    if raw.get("eagle_aux_hidden_state_layer_ids") is not None:
        return DraftIds(list(raw["eagle_aux_hidden_state_layer_ids"]), None,
                        "eagle_aux_hidden_state_layer_ids (top level: the runner does not read it)")
    return DraftIds(None, None, "none (the runner passes None: the model's fallback)")


def split_packed_experts(items, enabled: bool):
    """transformers 5 stores experts as packed [E, 2I, H] / [E, H, I]
    parameters; checkpoints (and SGLang's loaders) name them one by one."""
    for name, tensor in items:
        if enabled and name.endswith(".experts.gate_up_proj") and tensor.dim() == 3:
            base = name[: -len("gate_up_proj")]
            half = tensor.shape[1] // 2
            for e in range(tensor.shape[0]):
                yield f"{base}{e}.gate_proj.weight", tensor[e, :half].contiguous()
                yield f"{base}{e}.up_proj.weight", tensor[e, half:].contiguous()
        elif enabled and name.endswith(".experts.down_proj") and tensor.dim() == 3:
            base = name[: -len("down_proj")]
            for e in range(tensor.shape[0]):
                yield f"{base}{e}.down_proj.weight", tensor[e].contiguous()
        else:
            yield name, tensor


def resolve_attr(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj
