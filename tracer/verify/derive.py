"""Families derived from the release, not hand-written.

Matching an aux hidden state to a layer needs only the stream each decoder
layer receives, so any entry class can be run from a tiny config with random
weights. Everything here is read off the release (and the transformers it runs
with), never from a per-model table:

* the entry class: ``sglang.srt.models.<module>.<Class>``, the module found by
  a text search of the release's model folder (or given by the static scan);
* its config class: the annotation of ``config`` in the entry's ``__init__``,
  else the architecture's ``model_type`` in transformers' auto mappings, else
  a config class of the release registry (``sglang/srt/configs``) of the same
  name, else the same questions for the entry's base classes;
* a tiny config: that class's defaults, shrunk in sizes only (hidden sizes,
  heads, experts, vocabulary, vision towers), the decoder layer count set,
  per-layer lists resized cyclically; then written as ``config.json`` and read
  back through the release's own ``ModelConfig`` (so every normalisation the
  server applies is applied);
* the decoder layers: the ``nn.ModuleList`` of the text model (the list the
  forward loops over: as long as the layer count, its elements decoder
  layers);
* the KV pool: from the model's own ``RadixAttention`` modules (heads and head
  sizes per layer).

Nothing here imports torch or SGLang at module import time.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

# -- entry classes -------------------------------------------------------------


class DeriveError(RuntimeError):
    """A class that cannot be built; the message is the one-line reason."""


def find_entry_module(release_root: str, entry: str) -> str:
    """``sglang.srt.models.<module>`` defining class ``entry`` (a text search,
    no import); ``entry`` may already be a dotted qualname."""
    if "." in entry:
        return entry.rsplit(".", 1)[0]
    models = Path(release_root) / "sglang" / "srt" / "models"
    pattern = re.compile(rf"^class {re.escape(entry)}\b", re.MULTILINE)
    hits = []
    for path in sorted(models.rglob("*.py")):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if pattern.search(text):
            rel = path.relative_to(Path(release_root)).with_suffix("")
            hits.append(".".join(rel.parts))
    if not hits:
        raise DeriveError(f"class {entry} not found under {models}")
    # the module that also registers it as an entry class, else the first
    for mod in hits:
        text = (Path(release_root) / (mod.replace(".", "/") + ".py")).read_text(errors="replace")
        if re.search(rf"EntryClass\s*=.*\b{re.escape(entry)}\b", text, re.DOTALL):
            return mod
    return hits[0]


def import_entry(release_root: str, entry: str):
    module_name = find_entry_module(release_root, entry)
    name = entry.rsplit(".", 1)[-1]
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise DeriveError(f"import of {module_name} failed: {type(exc).__name__}: {_short(exc)}") from exc
    cls = getattr(module, name, None)
    if cls is None:
        raise DeriveError(f"{module_name} has no {name}")
    return cls


def _short(exc: BaseException, limit: int = 240) -> str:
    text = " ".join(str(exc).split())
    return text[:limit] + ("..." if len(text) > limit else "")


# -- config classes ------------------------------------------------------------

_ARCH_SUFFIXES = ("ForConditionalGeneration", "ForCausalLM", "ForCausalLMMTP", "ForCausalLMNextN",
                  "Model", "LMHeadModel")


def _is_config_class(obj) -> bool:
    try:
        from transformers import PretrainedConfig
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, type) and issubclass(obj, PretrainedConfig) and obj is not PretrainedConfig


def _annotation_class(cls):
    """The class named by the annotation of ``config`` in ``cls.__init__``
    (own ``__init__`` only); None when absent or generic."""
    init = cls.__dict__.get("__init__")
    if init is None:
        return None, None
    try:
        params = list(inspect.signature(init).parameters.values())
    except (TypeError, ValueError):
        return None, None
    param = next((p for p in params[1:] if p.name == "config"), params[1] if len(params) > 1 else None)
    if param is None or param.annotation is inspect.Parameter.empty:
        return None, None
    ann = param.annotation
    if isinstance(ann, str):
        name = ann.split("[")[0].split(".")[-1].strip("'\" ")
        if name in ("PretrainedConfig", "PreTrainedConfig", "Optional", "Any"):
            return None, name
        module = sys.modules.get(cls.__module__)
        found = getattr(module, name, None) if module else None
        if found is None:
            found = _config_by_name(name)
        return (found if _is_config_class(found) else None), name
    if _is_config_class(ann):
        return ann, ann.__name__
    return None, getattr(ann, "__name__", str(ann))


def _config_by_name(name: str):
    for modname in ("sglang.srt.configs", "vllm.transformers_utils.configs", "transformers"):
        try:
            module = importlib.import_module(modname)
        except Exception:
            continue
        found = getattr(module, name, None)
        if _is_config_class(found):
            return found
    return None


_ARCH_TO_MODEL_TYPE: dict[str, list[str]] | None = None


def _arch_model_types(arch: str) -> list[str]:
    """model_types whose transformers auto mappings name ``arch``."""
    global _ARCH_TO_MODEL_TYPE
    if _ARCH_TO_MODEL_TYPE is None:
        _ARCH_TO_MODEL_TYPE = {}
        try:
            from transformers.models.auto import modeling_auto
        except ImportError:  # pragma: no cover
            return []
        for key in dir(modeling_auto):
            if not key.endswith("_MAPPING_NAMES"):
                continue
            mapping = getattr(modeling_auto, key)
            if not isinstance(mapping, dict):
                continue
            for model_type, names in mapping.items():
                for name in names if isinstance(names, (list, tuple)) else [names]:
                    types = _ARCH_TO_MODEL_TYPE.setdefault(name, [])
                    if model_type not in types:
                        types.append(model_type)
    return _ARCH_TO_MODEL_TYPE.get(arch, [])


def _config_for_model_type(model_type: str):
    try:
        from transformers import AutoConfig

        return type(AutoConfig.for_model(model_type))
    except Exception:
        pass
    registry = _release_registry()
    return registry.get(model_type)


def _release_registry() -> dict:
    if "vllm" in sys.modules and "sglang" not in sys.modules:
        try:  # vLLM: model_type -> config class (a lazy dict of class names)
            from vllm.transformers_utils import config as vconfig

            out = {}
            for key in list(getattr(vconfig, "_CONFIG_REGISTRY", {})):
                try:
                    value = vconfig._CONFIG_REGISTRY[key]
                except Exception:
                    continue
                if isinstance(value, str):
                    value = getattr(importlib.import_module("vllm.transformers_utils.configs"), value, None)
                if _is_config_class(value):
                    out[key] = value
            return out
        except Exception:
            return {}
    try:
        from sglang.srt.utils.hf_transformers import common

        return dict(common._CONFIG_REGISTRY)
    except Exception:
        try:  # older releases
            from sglang.srt.utils import hf_transformers_utils as old

            return dict(getattr(old, "_CONFIG_REGISTRY", {}))
        except Exception:
            return {}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _arch_stem(arch: str) -> str:
    for suffix in sorted(_ARCH_SUFFIXES, key=len, reverse=True):
        if arch.endswith(suffix) and len(arch) > len(suffix):
            return arch[: -len(suffix)]
    return arch


def _registry_by_name(arch: str):
    stem = _norm(_arch_stem(arch))
    if not stem:
        return None
    candidates = {}
    for cls in _release_registry().values():
        candidates[_norm(cls.__name__.removesuffix("Config"))] = cls
    for configs in ("sglang.srt.configs", "vllm.transformers_utils.configs"):
        if configs.split(".")[0] in sys.modules:
            try:
                importlib.import_module(configs)  # imports its config modules
            except Exception:
                pass
    for modname, module in list(sys.modules.items()):
        if not modname.startswith(("sglang.srt.configs", "vllm.transformers_utils.configs")) or module is None:
            continue
        for name, obj in list(vars(module).items()):
            if _is_config_class(obj) and obj.__module__ == modname:
                candidates.setdefault(_norm(name.removesuffix("Config")), obj)
    found = candidates.get(stem)
    if found is not None:
        return found
    # a config class whose name extends the architecture's stem (MiMoV2 ->
    # MiMoV2FlashConfig), when exactly one does
    try:
        import transformers

        for name in dir(transformers):
            if name.endswith("Config") and not name.startswith("TF"):
                candidates.setdefault(_norm(name.removesuffix("Config")), name)
    except Exception:
        pass
    multimodal = any(w in arch for w in ("ConditionalGeneration", "VL", "Omni"))
    skip = ("vision", "audio", "text", "encoder") + (() if multimodal else ("vl", "mm", "omni"))
    longer = sorted(k for k in candidates if k.startswith(stem) and len(stem) >= 4
                    and not any(w in k[len(stem):] for w in skip))
    if len(longer) == 1:
        found = candidates[longer[0]]
        return getattr(transformers, found) if isinstance(found, str) else found
    return None


def _top_level_hidden(config_cls) -> bool:
    try:
        return "hidden_size" in json.loads(config_cls().to_json_string(use_diff=False))
    except Exception:
        return False


def _has_sizes(config_cls) -> bool:
    """Do the class's defaults describe a model (a hidden size somewhere)?
    A bare ``class XConfig(PretrainedConfig): model_type = ...`` does not."""
    try:
        raw = json.loads(config_cls().to_json_string(use_diff=False))
    except Exception:
        return True  # let default_config_dict report why it cannot be built
    if "hidden_size" in raw or "d_model" in raw:
        return True
    subs = getattr(config_cls, "sub_configs", None) or {}
    return any(_looks_like_config(v) for v in raw.values()) or bool(subs)


def config_class_for(entry_cls) -> tuple[Any, str]:
    """(config class, how it was found). Raises DeriveError when none is."""
    found, how = _config_class_for(entry_cls)
    if _has_sizes(found):
        return found, how
    model_type = getattr(found, "model_type", None)
    other = _config_for_model_type(model_type) if model_type else None
    if other is not None and other is not found and _has_sizes(other):
        return other, f"{how}; its defaults name no sizes, so AutoConfig's class for {model_type!r}"
    return found, how


def _config_class_for(entry_cls) -> tuple[Any, str]:
    tried = []
    package = entry_cls.__module__.split(".")[0] + "."
    chain = [c for c in entry_cls.__mro__ if c.__module__.startswith(package)]
    for depth, cls in enumerate(chain):
        where = "" if depth == 0 else f" (base class {cls.__name__})"
        found, name = _annotation_class(cls)
        if found is not None:
            return found, f"annotation `config: {found.__name__}` of {cls.__name__}.__init__{where}"
        if name:
            tried.append(f"annotation {name}")
        typed = [(mt, _config_for_model_type(mt)) for mt in _arch_model_types(cls.__name__)]
        typed = [(mt, c) for mt, c in typed if c is not None]
        if cls.__name__.endswith("ForCausalLM"):
            # a text-only entry: the text config of the model types it maps to
            typed.sort(key=lambda t: not _top_level_hidden(t[1]))
        if typed:
            model_type, found = typed[0]
            return found, f"transformers maps {cls.__name__} to model_type {model_type!r}{where}"
        found = _registry_by_name(cls.__name__)
        if found is not None:
            return found, f"release config class {found.__name__} named like {cls.__name__}{where}"
        tried.append(cls.__name__)
    raise DeriveError("config class not found (tried " + ", ".join(tried[:6]) + ")")


# -- tiny configs ----------------------------------------------------------------

# Sizes of the text model. Heads x head_dim = hidden; MLA ranks as in the
# hand-written DeepSeek family. Six routed experts: with a power of two,
# SGLang's CUDA top-k takes the sgl-kernel fused gate, with 6 its own torch code.
TEXT_SIZES = dict(
    hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
    shared_expert_intermediate_size=32, intermediate_size_mlp=128, ffn_hidden_size=128,
    num_attention_heads=4, head_dim=16, vocab_size=256, max_position_embeddings=512,
    num_experts=6, n_routed_experts=6, num_local_experts=6, moe_num_experts=6,
    kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
    n_group=1, topk_group=1, num_expert_group=1, global_head_dim=16, swa_head_dim=16,
    linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
    linear_num_value_heads=4, mamba_head_dim=16, mamba_num_heads=4, ssm_state_size=16,
    hidden_size_per_layer_input=16, vocab_size_per_layer_input=256,
    expert_intermediate_size=32, moe_shared_expert_intermediate_size=32,
    swa_num_attention_heads=4, index_head_dim=32, index_n_heads=2, index_topk=64,
    attention_head_dim=16, kv_channels=16,
)
# at most this many (kept when smaller)
TEXT_AT_MOST = dict(num_experts_per_tok=2, n_shared_experts=1, num_shared_experts=1,
                    moe_topk=2, num_key_value_heads=2, swa_num_key_value_heads=2,
                    n_groups=1, num_kv_shared_layers=0)
VISION_SIZES = dict(hidden_size=32, intermediate_size=64, embed_dim=32, num_heads=2,
                    num_attention_heads=2, num_key_value_heads=2, head_dim=16, depth=1,
                    num_hidden_layers=1, num_layers=1, out_hidden_size=64, projection_dim=64,
                    text_hidden_size=64, vocab_size=256, output_dim=64, d_model=32,
                    encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=64,
                    mm_hidden_size=32, merger_intermediate_size=64, hidden_act=None)
_VISION_KEYS = ("vision", "visual", "audio", "image", "projector", "vit", "encoder", "speech",
                "perceiver", "resampler", "mm_")
_TEXT_KEYS = ("text_config", "language_config", "llm_config", "text", "language", "llm",
              "thinker_config")
_LAYER_COUNT_KEYS = ("num_hidden_layers",)
_PER_LAYER_LISTS = ("layer_types", "layers_block_type", "block_types", "attn_type_list",
                    "sliding_window_layers", "moe_layers_enum")
_LAYER_INDEX_LISTS = ("mlp_only_layers", "full_attn_idxs", "no_rope_layers_idx",
                      "swa_layers", "deepstack_visual_indexes", "fullatt_block_indexes")
_DROP = ("quantization_config", "auto_map", "_name_or_path", "torch_dtype", "dtype",
         "num_nextn_predict_layers", "transformers_version", "_attn_implementation_autoset",
         "compression_config")


def _is_vision_key(key: str) -> bool:
    k = key.lower()
    return any(part in k for part in _VISION_KEYS) and not any(k == t for t in _TEXT_KEYS)


def _looks_like_config(value) -> bool:
    return isinstance(value, dict) and any(
        k in value for k in ("hidden_size", "model_type", "num_hidden_layers", "depth", "embed_dim"))


# Layer kinds that need a state pool the harness does not build (linear
# attention, mamba, short convolutions), and what each becomes with
# ``attention_only``: full attention, so the decoder loop and its capture run
# unchanged while the layer kind differs.
_LINEAR_KINDS = {"linear_attention": "full_attention", "linear": "full_attention", "mamba": "attention",
                 "conv": "full_attention", "gdn": "full_attention", "lightning": "full_attention",
                 "lightning_attention": "full_attention"}


def _all_attention(cfg: dict[str, Any], notes: list[str]) -> None:
    changed = []
    for key in ("layer_types", "layers_block_type", "block_types", "attn_type_list"):
        val = cfg.get(key)
        if isinstance(val, list) and any(isinstance(v, str) and v in _LINEAR_KINDS for v in val):
            cfg[key] = [_LINEAR_KINDS.get(v, v) if isinstance(v, str) else v for v in val]
            changed.append(key)
    if isinstance(cfg.get("full_attention_interval"), int) and cfg["full_attention_interval"] != 1:
        cfg["full_attention_interval"] = 1
        changed.append("full_attention_interval=1")
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "M" in pattern:
        cfg["hybrid_override_pattern"] = pattern.replace("M", "*")
        changed.append("hybrid_override_pattern M->*")
    if changed:
        notes.append("ARCHITECTURE CHANGED: every linear-attention / mamba / conv layer made a full-attention "
                     "layer (" + ", ".join(changed) + "): the harness builds no state pool for those kinds; "
                     "layer count and decoder loop unchanged")


# per-layer index lists of linear-attention layers inside a sub-dict (e.g. a
# linear_attn_config's kda_layers), and the full-attention list beside them
_MLA_SIZES = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_LINEAR_INDEX_LISTS = ("kda_layers", "linear_attn_layers", "linear_layers", "mamba_layers")
_FULL_INDEX_LISTS = ("full_attn_layers", "full_attention_layers")


def _linear_layer_lists_to_attention(cfg: dict[str, Any], n: int, notes: list[str]) -> None:
    for key, sub in cfg.items():
        if not isinstance(sub, dict) or not any(isinstance(sub.get(k), list) for k in _LINEAR_INDEX_LISTS):
            continue
        for k in _LINEAR_INDEX_LISTS:
            if isinstance(sub.get(k), list):
                sub[k] = []
        for k in _FULL_INDEX_LISTS:
            if isinstance(sub.get(k), list):
                sub[k] = list(range(n))
        notes.append(f"ARCHITECTURE CHANGED: {key}'s linear-attention layer lists emptied, every layer a "
                     "full-attention layer (no state pool for linear attention here; layer count and decoder "
                     "loop unchanged)")


def shrink_text(cfg: dict[str, Any], layers: int | None, notes: list[str], attention_only: bool = True) -> None:
    head_dim = TEXT_SIZES["head_dim"]
    for key, value in TEXT_SIZES.items():
        if key in cfg and isinstance(cfg[key], int) and not isinstance(cfg[key], bool):
            cfg[key] = value
    if any(cfg.get(k) for k in ("num_experts_per_tok", "moe_intermediate_size", "n_routed_experts",
                                "num_experts", "num_local_experts")):
        # MoE sizes a config class leaves None by default (real checkpoints set them)
        for key in ("n_routed_experts", "num_experts", "moe_intermediate_size", "n_group", "topk_group",
                    "num_expert_group"):
            if key in cfg and cfg[key] is None:
                cfg[key] = TEXT_SIZES[key]
    for key, value in TEXT_AT_MOST.items():
        if key in cfg and isinstance(cfg[key], int) and not isinstance(cfg[key], bool):
            cfg[key] = min(cfg[key], value) if cfg[key] > 0 or "head" not in key else value
    if cfg.get("num_experts_per_tok", 0) is None and any(cfg.get(k) for k in ("n_routed_experts", "num_experts")):
        cfg["num_experts_per_tok"] = TEXT_AT_MOST["num_experts_per_tok"]
    if all(k in cfg and cfg[k] is None for k in _MLA_SIZES):
        # MLA sizes a config class leaves None by default (real checkpoints set them)
        cfg.update({k: TEXT_SIZES[k] for k in _MLA_SIZES})
        notes.append("MLA sizes (" + ", ".join(_MLA_SIZES) + ") None in the class defaults: the harness's sizes")
    if cfg.get("q_lora_rank"):
        cfg["q_lora_rank"] = 48
    if "kv_lora_rank" in cfg and isinstance(cfg.get("num_key_value_heads"), int):
        cfg["num_key_value_heads"] = cfg.get("num_attention_heads", 4)  # MLA: one latent per head
    if "kv_lora_rank" in cfg and "head_dim" in cfg and cfg.get("qk_rope_head_dim"):
        # transformers' DeepSeek configs derive their rope size from head_dim
        cfg["head_dim"] = cfg["qk_rope_head_dim"]
    if cfg.get("topk_group") and cfg.get("n_group"):
        cfg["topk_group"] = min(cfg["topk_group"], cfg["n_group"])
    old_layers = cfg.get("num_hidden_layers")
    if layers is not None:
        cfg["num_hidden_layers"] = layers
    n = cfg.get("num_hidden_layers")
    if isinstance(n, int) and isinstance(old_layers, int) and old_layers > 1 and old_layers != n:
        # every per-layer list (one entry a layer), resized cyclically so the
        # pattern (sliding / full, dense / MoE, ...) is kept
        for key, val in list(cfg.items()):
            if isinstance(val, list) and len(val) == old_layers and key not in _LAYER_INDEX_LISTS:
                new = [val[i % len(val)] for i in range(n)]
                if "heads" in key:
                    cap = TEXT_AT_MOST["num_key_value_heads"] if "key_value" in key else TEXT_SIZES["num_attention_heads"]
                    new = [min(v, cap) if isinstance(v, int) else v for v in new]
                cfg[key] = new
            elif isinstance(val, str) and len(val) == old_layers and key.endswith("pattern"):
                cfg[key] = "".join(val[i % len(val)] for i in range(n))
            elif isinstance(val, dict) and val and all(str(k).lstrip("-").isdigit() for k in val):
                # per-layer overrides keyed by layer index
                cfg[key] = {k: v for k, v in val.items() if int(k) < n}
    if isinstance(n, int):
        for key, val in list(cfg.items()):
            if isinstance(val, dict) and val and all(str(k).lstrip("-").isdigit() for k in val):
                kept = {}
                for k, v in val.items():
                    if int(k) >= n:
                        continue
                    if isinstance(v, dict):
                        v = {ik: (TEXT_SIZES[ik] if ik in TEXT_SIZES and isinstance(iv, int) else iv)
                             for ik, iv in v.items()}
                        # an override equal to the global value overrides nothing
                        v = {ik: iv for ik, iv in v.items() if cfg.get(ik) != iv}
                        if not v:
                            continue
                    kept[k] = v
                cfg[key] = kept
    if isinstance(n, int):
        for key in ("first_k_dense_replace", "first_k_dense", "num_dense_layers"):
            if isinstance(cfg.get(key), int):
                cfg[key] = min(cfg[key], max(n - 1, 0))
        for key in _PER_LAYER_LISTS:
            val = cfg.get(key)
            if isinstance(val, list) and val and len(val) != n:
                cfg[key] = [val[i % len(val)] for i in range(n)]
        for key in _LAYER_INDEX_LISTS:
            val = cfg.get(key)
            if isinstance(val, list) and key not in ("deepstack_visual_indexes", "fullatt_block_indexes"):
                cfg[key] = [i for i in val if isinstance(i, int) and i < n]
        pattern = cfg.get("hybrid_override_pattern")
        if isinstance(pattern, str) and pattern and len(pattern) != n:
            cfg["hybrid_override_pattern"] = "".join(pattern[i % len(pattern)] for i in range(n))
        for key in ("moe_layer_freq", "decoder_sparse_step"):
            val = cfg.get(key)
            if isinstance(val, list) and val and len(val) != n:
                cfg[key] = [val[i % len(val)] for i in range(n)]
    if "rope_parameters" in cfg and not cfg["rope_parameters"] and "hidden_size" in cfg:
        # a class whose defaults leave the rope unset (a real config.json sets it)
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": cfg.get("rope_theta", 10000.0)}
        notes.append("rope_parameters empty in the class defaults: plain rope")
    if attention_only:
        _all_attention(cfg, notes)
        if isinstance(n, int):
            _linear_layer_lists_to_attention(cfg, n, notes)
    for rope_key in ("rope_scaling", "rope_parameters"):
        rope = cfg.get(rope_key)
        if not isinstance(rope, dict):
            continue
        subs = [rope] if not all(isinstance(v, dict) for v in rope.values()) or not rope else list(rope.values())
        for sub in subs:
            if sub.get("factor"):
                sub["factor"] = 1.0
            if "original_max_position_embeddings" in sub:
                sub["original_max_position_embeddings"] = 256
            section = sub.get("mrope_section")
            if isinstance(section, list) and section:
                rotary = int(head_dim * float(sub.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)) or 1.0))
                sub["mrope_section"] = _rescale(section, rotary // 2)
    for key in list(cfg):
        if key in _DROP:
            cfg.pop(key)


def _rescale(section: list[int], total: int) -> list[int]:
    raw = [max(1, round(s * total / sum(section))) for s in section]
    raw[0] += total - sum(raw)
    return raw


def shrink_vision(cfg: dict[str, Any]) -> None:
    for key, value in VISION_SIZES.items():
        if value is None:
            continue
        if key in cfg and isinstance(cfg[key], int) and not isinstance(cfg[key], bool):
            cfg[key] = value
    for key in ("deepstack_visual_indexes", "fullatt_block_indexes"):
        if isinstance(cfg.get(key), list):
            cfg[key] = [0] if cfg[key] else []
    if isinstance(cfg.get("depths"), list):
        cfg["depths"] = [1 for _ in cfg["depths"]]
    for key in list(cfg):
        if key in _DROP:
            cfg.pop(key)


def shrink_config(raw: dict[str, Any], layers: int | None,
                  attention_only: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Keep the architecture (types, patterns, flags), shrink every size;
    set the decoder layer count when ``layers`` is given. With
    ``attention_only``, hybrid models' linear-attention / mamba layers become
    attention layers (noted)."""
    cfg = copy.deepcopy(raw)
    notes: list[str] = []

    def walk(node: dict[str, Any], vision: bool) -> None:
        if vision:
            shrink_vision(node)
        else:
            shrink_text(node, layers, notes, attention_only)
        for key, value in list(node.items()):
            if _looks_like_config(value):
                walk(value, vision or _is_vision_key(key))

    walk(cfg, False)
    shrink_token_ids(cfg, TEXT_SIZES["vocab_size"])
    text = text_part(cfg)
    if text is not cfg and "hidden_size" in cfg and layers is not None:
        cfg["num_hidden_layers"] = text.get("num_hidden_layers", layers)
    return cfg, notes


_TOKEN_ID_KEY = re.compile(r"(^|_)(token_id|token_index|token_ids)$|^(bo|eo)[a-z]_token")
# special ids land here (the prompt draws its ids below, harness.PROMPT_VOCAB = 128)
_SPECIAL_ID_BASE = 192


def shrink_token_ids(cfg: dict[str, Any], vocab: int) -> None:
    """Special token ids (``image_token_id``, ``eoi_token_id`` ...) beyond the
    shrunk vocabulary, anywhere in the tree, moved inside it: each distinct id
    gets its own slot from ``_SPECIAL_ID_BASE`` up, in order of value (a model
    that indexes its logits or embedding with one must not read out of
    bounds). Ids already inside the vocabulary are kept."""
    found: list[int] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, (dict, list)) and not _TOKEN_ID_KEY.search(str(key)):
                    collect(value)
                elif _TOKEN_ID_KEY.search(str(key)):
                    for v in (value if isinstance(value, list) else [value]):
                        if isinstance(v, int) and not isinstance(v, bool) and v >= vocab:
                            found.append(v)
        elif isinstance(node, list):
            for item in node:
                collect(item)

    collect(cfg)
    slots = {v: min(_SPECIAL_ID_BASE + i, vocab - 1) for i, v in enumerate(sorted(set(found)))}

    def apply(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if _TOKEN_ID_KEY.search(str(key)):
                    if isinstance(value, list):
                        node[key] = [slots.get(v, v) if isinstance(v, int) else v for v in value]
                    elif isinstance(value, int) and not isinstance(value, bool):
                        node[key] = slots.get(value, value)
                elif isinstance(value, (dict, list)):
                    apply(value)
        elif isinstance(node, list):
            for item in node:
                apply(item)

    apply(cfg)


def text_part(cfg: dict[str, Any]) -> dict[str, Any]:
    for key in _TEXT_KEYS:
        if _looks_like_config(cfg.get(key)):
            return text_part(cfg[key])
    return cfg


def default_config_dict(config_cls) -> dict[str, Any]:
    """The config class's defaults as a plain dict (nested configs as dicts;
    a sub-config left None by default gets its own class's defaults)."""
    try:
        instance = config_cls()
    except Exception as exc:
        raise DeriveError(f"{config_cls.__name__}() with defaults failed: {type(exc).__name__}: "
                          f"{_short(exc)}") from exc
    raw = json.loads(instance.to_json_string(use_diff=False))
    for key, sub_cls in (getattr(config_cls, "sub_configs", None) or {}).items():
        if raw.get(key) is None and isinstance(sub_cls, type):
            sub = _sub_config_defaults(sub_cls, raw)
            if sub is not None:
                raw[key] = sub
    return raw


_MISSING_ARGS = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)")


def _sub_config_defaults(sub_cls, parent: dict[str, Any]) -> dict[str, Any] | None:
    """A sub-config's defaults; an argument it requires (no default) is taken
    from the parent's field of the same name when the parent has one."""
    kwargs: dict[str, Any] = {}
    for _ in range(2):
        try:
            return json.loads(sub_cls(**kwargs).to_json_string(use_diff=False))
        except TypeError as exc:
            m = _MISSING_ARGS.search(str(exc))
            names = re.findall(r"'(\w+)'", m.group(1)) if m else []
            if not names or any(n not in parent for n in names):
                return None
            kwargs.update({n: parent[n] for n in names})
        except Exception:
            return None
    return None


def derived_raw_config(entry_cls, layers: int | None, arch: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tiny config dict for ``arch``, provenance)."""
    config_cls, how = config_class_for(entry_cls)
    raw = default_config_dict(config_cls)
    tiny, notes = shrink_config(raw, layers)
    notes = list(dict.fromkeys(notes))
    tiny["architectures"] = [arch]
    tiny.setdefault("model_type", getattr(config_cls, "model_type", None))
    tiny["torch_dtype"] = run_dtype()
    return tiny, {"config_class": f"{config_cls.__module__}.{config_cls.__name__}", "found_by": how,
                  "notes": notes}


def run_dtype() -> str:
    from .build_fixes import RUN_DTYPE

    return RUN_DTYPE[0]


def load_through_release(tiny: dict[str, Any], config_cls_name: str | None, folder: str):
    """The hf_config the server would hand the model class: the tiny config
    written as config.json and read back by the release's ModelConfig (its
    get_config: registry classes, text-config flattening, rope normalisation).
    Returns (hf_config, how)."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(tiny, indent=1, default=str))
    errors = []
    try:
        from sglang.srt.configs.model_config import ModelConfig

        kwargs = {}
        if "trust_remote_code" in inspect.signature(ModelConfig.__init__).parameters:
            kwargs["trust_remote_code"] = False
        mc = ModelConfig(str(path), dtype=run_dtype(), **kwargs)
        return mc.hf_config, "ModelConfig(config.json)", mc
    except Exception as exc:
        errors.append(f"ModelConfig: {type(exc).__name__}: {_short(exc, 160)}")
    try:
        from sglang.srt.utils.hf_transformers_utils import get_config

        return get_config(str(path), trust_remote_code=False), "get_config(config.json)", None
    except Exception as exc:
        errors.append(f"get_config: {type(exc).__name__}: {_short(exc, 160)}")
    if config_cls_name:
        module, _, name = config_cls_name.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
            return cls.from_dict(dict(tiny)), f"{name}.from_dict (" + "; ".join(errors) + ")", None
        except Exception as exc:
            errors.append(f"{name}.from_dict: {type(exc).__name__}: {_short(exc, 160)}")
    raise DeriveError("config not loadable: " + "; ".join(errors))


def text_config_of(hf_config):
    """The config the decoder stack reads (SGLang's get_hf_text_config when
    the release has it)."""
    try:
        from sglang.srt.configs.model_config import get_hf_text_config

        text = get_hf_text_config(hf_config)
        if text is not None:
            return text
    except Exception:
        pass
    for key in ("text_config", "language_config", "llm_config"):
        sub = getattr(hf_config, key, None)
        if sub is not None and hasattr(sub, "num_hidden_layers"):
            return sub
    return hf_config


# -- the built model -----------------------------------------------------------------


def find_decoder_layers(model, num_layers: int):
    """(dotted path, ModuleList): the decoder layer list of the text model.

    Candidates are every ``nn.ModuleList`` of the module tree; the one with
    ``num_layers`` elements, held by a module that also holds
    ``layers_to_capture`` (the state the setter writes), wins; then one named
    ``layers``; then the longest list of *Layer/*Block modules."""
    import torch.nn as nn

    candidates = []
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) > 0:
            parent_name = name.rsplit(".", 1)[0] if "." in name else ""
            parent = model.get_submodule(parent_name) if parent_name else model
            kinds = {type(m).__name__ for m in module}
            layerish = any(re.search(r"(Layer|Block|Decoder)", k) for k in kinds)
            in_vision = any(part in name.lower() for part in ("vision", "visual", "audio", "vit", "encoder."))
            score = (
                len(module) == num_layers,
                not in_vision,
                hasattr(parent, "layers_to_capture"),
                name.endswith("layers"),
                layerish,
                len(module),
            )
            candidates.append((score, name, module))
    if not candidates:
        raise DeriveError("no nn.ModuleList in the model")
    candidates.sort(key=lambda c: c[0], reverse=True)
    score, name, module = candidates[0]
    if not score[0]:
        raise DeriveError(f"no decoder-layer list of {num_layers} modules (longest: {name}, {len(module)})")
    return name, module


def attention_modules(model):
    """Every RadixAttention of the model: (module path, module)."""
    try:
        from sglang.srt.layers.radix_attention import RadixAttention
    except ImportError:  # pragma: no cover
        return []
    return [(n, m) for n, m in model.named_modules() if isinstance(m, RadixAttention)]


def kv_layout(model, text_cfg) -> dict[str, Any]:
    """What the KV pool must hold, read from the model's attention modules."""
    attn = attention_modules(model)
    per_layer = {}
    for name, m in attn:
        lid = int(getattr(m, "layer_id", 0))
        per_layer.setdefault(lid, dict(k_heads=int(m.tp_k_head_num), v_heads=int(m.tp_v_head_num),
                                       k_dim=int(m.qk_head_dim), v_dim=int(m.v_head_dim), name=name))
    mla = bool(getattr(text_cfg, "kv_lora_rank", None)) and any(
        "mla" in type(m).__name__.lower() or "MLA" in type(model.get_submodule(n.rsplit(".", 1)[0])).__name__
        or getattr(m, "v_head_dim", 0) == getattr(text_cfg, "kv_lora_rank", -1)
        for n, m in attn)
    shapes = {(v["k_heads"], v["v_heads"], v["k_dim"], v["v_dim"]) for v in per_layer.values()}
    return {"layers": per_layer, "mla": mla, "uniform": len(shapes) <= 1,
            "layer_num": (max(per_layer) + 1) if per_layer else 0}
