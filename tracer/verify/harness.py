"""Run SGLang's own model code and record which layers' residual streams the
aux hidden states (EAGLE-3 or DFlash) really are.

A case is one entry class, built one of two ways:

* **derived** (:func:`build_derived`, any entry class): the config derived
  from the release (``derive.py``), the class built from it with random
  weights the way SGLang's dummy loader does (every parameter drawn, then the
  model's ``post_load_weights`` and every quant method's
  ``process_weights_after_loading``);
* **reference family** (:func:`build_family`, the hand-written families of
  ``families.py``): weights loaded through the class's own ``load_weights``
  from a transformers reference model with the same config, so every layer's
  stream can also be compared with transformers' ``hidden_states``.

Then the release runner's setter calls are made in its order and three paths
run:

* ``extend``: an eager prefill (EXTEND) of a short prompt;
* ``decode``: one eager DECODE step after that prefill;
* ``cuda_graph`` (CUDA only): the decode forward captured in a CUDA graph at
  the point of the runner's setter sequence where the release captures it,
  then replayed after the prefill.

Forward hooks record the stream each decoder layer receives (the output of
layer i-1; the embedding for i = 0) and the stream the final norm receives
(the output of the last layer). Every aux tensor the top model hands to its
logits processor is matched numerically to one of those streams. Captured
layers are reported in the draft-config convention: the index of the layer
whose output it is, -1 being the embedding.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import tempfile
import time
import traceback
from typing import Any

from . import build_fixes, derive, stubs
from .adapters import Adapter
from .families import (
    Family,
    build_hf_config,
    split_packed_experts,
    text_config,
)

PROMPT_LEN = 6
MAX_CONTEXT = 64
REQ = 1  # request slot 0 is the padding row CUDA-graph batches point at (0.5.23)
SPARE_LOC = 255  # KV slot the graph capture writes to before the real replay
PROMPT_VOCAB = 128  # prompt token ids stay below this (special ids live above)

SETTERS = {"sglang-eagle3": "set_eagle3_layers_to_capture",
           "sglang-dflash": "set_dflash_layers_to_capture"}

# Config fields real checkpoints carry, SGLang reads, and some config classes
# lack among their defaults: a missing one is filled with this value (each
# fill is listed in the row). General-purpose values, no model's own.
FILL_DEFAULTS = dict(
    first_k_dense_replace=1, moe_layer_freq=1, scoring_func="softmax", topk_method="greedy",
    n_group=1, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0, n_shared_experts=1,
    num_experts_per_tok=2, moe_intermediate_size=32, rope_theta=10000.0, attention_bias=False,
    mlp_bias=False, head_dim=16, rms_norm_eps=1e-6, hidden_act="silu", tie_word_embeddings=False,
    use_qk_norm=False, sliding_window=None, rope_scaling=None, layer_types=None, encoder_only=False,
    n_groups=1, layernorm_epsilon=1e-6,
    # with every layer made a full-attention layer (derive._all_attention)
    full_attention_interval=1,
)
_ALIAS_PREFIXES = ("vt_", "text_", "vision_", "mm_", "llm_", "model_", "swa_")


def _kwargs_for(fn, **candidates):
    params = inspect.signature(fn).parameters
    return {k: v for k, v in candidates.items() if k in params}


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text[:limit]


# -- streams -------------------------------------------------------------------


class _Restore:
    """Handle that removes an instance-level forward wrapper."""

    def __init__(self, module):
        self.module = module

    def remove(self):
        self.module.__dict__.pop("forward", None)


class StreamRecorder:
    """The stream every decoder layer receives, two ways, plus the stream
    after the last layer.

    * norm hook (when the layer has ``input_layernorm``): a fused add-norm
      returns ``(normed, x + residual)``, take the second; a plain norm
      returns a Tensor, take its input;
    * layer pre-hook: the layer's ``hidden_states`` argument, plus its
      ``residual`` argument when that is a tensor;
    * after the loop: what the final norm of the layer list's owner receives
      (``norm(x, residual)``: ``x + residual``), index ``len(layers)``.
    """

    def __init__(self, layers, final_norm=None):
        import torch

        self.sets: dict[str, dict[int, Any]] = {"norm": {}, "layer": {}, "unsummed": {}}
        self.handles = []
        self.n = len(layers)

        self.calls = 0  # decoder-layer calls this forward (loop models call a layer twice)

        def norm_hook(index):
            def hook(module, args, out):
                if index is None:
                    return
                if isinstance(out, torch.Tensor):
                    stream = args[0] if args and isinstance(args[0], torch.Tensor) else None
                elif isinstance(out, (tuple, list)) and len(out) > 1 and isinstance(out[1], torch.Tensor):
                    stream = out[1]
                else:
                    stream = None
                if stream is not None:
                    self.sets["norm"][index] = stream.detach().clone()
            return hook

        self._armed: dict[int, int | None] = {}
        self._current = 0

        def first_norm_hook(index):
            def hook(module, args, out):
                call = self._armed.get(index)
                if call is not None:
                    self._armed[index] = None
                    norm_hook(call)(module, args, out)
            return hook

        def arm(index):
            # stream indices count decoder-layer calls, so a layer run twice
            # (loop models) gets the index of its unrolled step
            self._armed[index] = self.calls
            self._current = self.calls
            self.calls += 1

        for index, layer in enumerate(layers):
            # the first norm the layer calls (input_layernorm, or e.g. the
            # attention_layernorm a layer-boundary stage applies)
            # (a list of norms, one per sub-block, counts with its members)
            norms = [sub for n, m in layer.named_children() if "norm" in type(m).__name__.lower()
                     or "norm" in n.lower() for sub in (m if isinstance(m, torch.nn.ModuleList) else [m])]
            for norm in norms:
                self.handles.append(norm.register_forward_hook(first_norm_hook(index)))
            self._wrap(layer, index, arm)
        if final_norm is not None:
            def final_hook(module, args, out):
                norm_hook(self.calls)(module, args, out)

            self.handles.append(final_norm.register_forward_hook(final_hook))

    def _wrap(self, layer, index, arm):
        """Instrument the layer's own ``forward`` (an instance attribute, so a
        loop calling ``layer.forward(...)`` directly, bypassing module hooks,
        is seen too); the layer's code is called unchanged."""
        import torch

        original = layer.forward
        try:
            sig = inspect.signature(original)
        except (TypeError, ValueError):
            sig = None
        recorder = self

        def forward(*args, **kwargs):
            arm(index)
            call = recorder._current
            bound = None
            if sig is not None:
                try:
                    bound = sig.bind_partial(*args, **kwargs).arguments
                except TypeError:
                    bound = None
            hs = res = None
            if bound is not None:
                hs = bound.get("hidden_states", bound.get("hidden_state", bound.get("x")))
                res = bound.get("residual")
            if hs is None:
                tensors = [a for a in args if isinstance(a, torch.Tensor) and a.dim() >= 2]
                hs = tensors[0] if tensors else None
            if isinstance(hs, torch.Tensor):
                stream = hs + res if isinstance(res, torch.Tensor) and res.shape == hs.shape else hs
                recorder.sets["layer"][call] = stream.detach().clone()
            out = original(*args, **kwargs)
            # a layer returning (hidden_states, residual) leaves the sum to the
            # next layer's fused add-norm: hidden_states alone is then only the
            # last sublayer's output, not the stream
            if (isinstance(out, (tuple, list)) and len(out) >= 2 and isinstance(out[0], torch.Tensor)
                    and isinstance(out[1], torch.Tensor) and out[0].shape == out[1].shape):
                recorder.sets["unsummed"][call + 1] = out[0].detach().clone()
            return out

        layer.forward = forward
        self.handles.append(_Restore(layer))

    def take(self) -> dict[str, dict[int, Any]]:
        sets = self.sets
        self.sets = {"norm": {}, "layer": {}, "unsummed": {}}
        self.calls = 0
        return sets


def match_aux(aux: list[Any], sets: dict[str, dict[int, Any]], atol: float = 1e-5):
    """For each aux tensor, the layer whose output it equals (-1: the
    embedding; ``len(layers) - 1``: the last layer, seen at the final norm);
    None when it equals no recorded stream. Returns (captured, details)."""

    captured, details = [], []
    for tensor in aux:
        best = None
        for kind in ("norm", "layer", "unsummed"):
            for i, stream in sets.get(kind, {}).items():
                if stream.shape != tensor.shape:
                    continue
                diff = float((tensor.float() - stream.float()).abs().max())
                scale = float(stream.float().abs().max()) or 1.0
                if diff <= atol + 1e-4 * scale and (best is None or diff < best[0]):
                    best = (diff, i, kind)
            if best is not None:
                break
        if best is None:
            captured.append(None)
            details.append(None)
        else:
            captured.append(best[1] - 1)
            details.append({"stream": best[2], "max_diff": best[0]})
    return captured, details


# -- building ------------------------------------------------------------------


class Built:
    """A built model and what the paths need to know about it."""

    def __init__(self, model, hf_config, text, layers_path: str, notes: list[str],
                 provenance: dict[str, Any], reference=None, mla: bool | None = None):
        self.model, self.hf_config, self.text = model, hf_config, text
        self.layers_path = layers_path
        self.layers = model.get_submodule(layers_path)
        self.notes = notes
        self.provenance = provenance
        self.reference = reference
        self.mla = mla


def _construct(adapter: Adapter, entry_cls, hf_config, device: str, notes: list[str]):
    """entry_cls(config, quant_config=None) under the release's build context;
    a config field the class reads but the config lacks is filled from
    FILL_DEFAULTS or a prefixed alias (``vt_hidden_size`` <- ``hidden_size``)
    and the build retried, each fill noted."""
    import torch

    filled = 0
    while True:
        try:
            with torch.device(device), adapter.build_context(entry_cls, hf_config):
                kwargs = _kwargs_for(entry_cls.__init__, quant_config=None, prefix="")
                params = inspect.signature(entry_cls.__init__).parameters
                if "config" in params and params["config"].kind is inspect.Parameter.KEYWORD_ONLY:
                    return entry_cls(config=hf_config, **kwargs)
                return entry_cls(hf_config, **kwargs)
        except TypeError as exc:
            fix = build_fixes.fix_for(exc, hf_config) if filled < 12 else None
            if fix is None:
                raise
            notes.append(fix)
            filled += 1
        except AttributeError as exc:
            fill = _fill_for(hf_config, str(exc))
            if fill is None or filled >= 12:
                raise
            obj, attr, value, why = fill
            setattr(obj, attr, value)
            notes.append(f"config {type(obj).__name__}.{attr} = {value!r} ({why})")
            filled += 1


def _configs_in(cfg, seen=None):
    seen = seen if seen is not None else set()
    if id(cfg) in seen:
        return
    seen.add(id(cfg))
    yield cfg
    for value in list(vars(cfg).values()):
        if hasattr(value, "to_dict") and hasattr(value, "model_type"):
            yield from _configs_in(value, seen)


def _fill_for(hf_config, message: str):
    import re

    m = re.search(r"'(\w+)' object has no attribute '(\w+)'", message)
    if not m:
        return None
    cls_name, attr = m.groups()
    targets = [c for c in _configs_in(hf_config) if type(c).__name__ == cls_name]
    if not targets:
        return None
    obj = targets[0]
    for prefix in _ALIAS_PREFIXES:
        if attr.startswith(prefix) and hasattr(obj, attr[len(prefix):]):
            return obj, attr, getattr(obj, attr[len(prefix):]), f"the defaults lack it; alias of {attr[len(prefix):]}"
    alias = build_fixes.alias_of(obj, attr)
    if alias is not None:
        return (obj, attr) + alias
    if attr == "text_hidden_size":
        return obj, attr, derive.text_config_of(hf_config).hidden_size, "the text model's hidden size"
    if attr == "is_moe_layer" and isinstance(getattr(obj, "num_hidden_layers", None), int):
        # per-layer MoE flags, from the config's own per-layer MLP types when it has them
        n = obj.num_hidden_layers
        types = getattr(obj, "mlp_layer_types", None)
        if isinstance(types, (list, tuple)) and len(types) == n:
            return obj, attr, [t in ("sparse", "moe") for t in types], "the defaults lack it; from mlp_layer_types"
        first = getattr(obj, "first_k_dense_replace", 0) or 0
        return obj, attr, [i >= first for i in range(n)], "the defaults lack it; MoE after first_k_dense_replace"
    if attr == "hybrid_layer_pattern" and isinstance(getattr(obj, "num_hidden_layers", None), int):
        # per-layer sliding-window flags (1 = sliding), from layer_types when present
        types = getattr(obj, "layer_types", None) or []
        n = obj.num_hidden_layers
        value = [1 if i < len(types) and types[i] == "sliding_attention" else 0 for i in range(n)]
        return obj, attr, value, "the defaults lack it; from layer_types"
    if attr in FILL_DEFAULTS:
        return obj, attr, FILL_DEFAULTS[attr], "the defaults lack it"
    return None


def randomize(model) -> None:
    """Every floating parameter drawn at random (norm weights around 1), so
    that consecutive layers' streams differ clearly."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not torch.is_floating_point(param) or param.numel() == 0:
                continue
            sample = torch.randn(param.shape, generator=gen, dtype=torch.float32)
            if param.dim() == 1 and "norm" in name.lower():
                sample = 1 + 0.1 * sample
            else:
                sample = 0.05 * sample
            param.data.copy_(sample.to(param.device, param.dtype))


def post_load(model, notes: list[str]) -> None:
    """What SGLang's dummy loader does after drawing weights: the model's
    post_load_weights, then every quant method's process_weights_after_loading."""
    fn = getattr(model, "post_load_weights", None)
    if callable(fn):
        try:
            fn()
        except Exception as exc:
            notes.append(f"post_load_weights failed: {type(exc).__name__}: {_short(exc, 160)}")
    for _, module in model.named_modules():
        method = getattr(module, "quant_method", None)
        if method is not None and hasattr(method, "process_weights_after_loading"):
            if hasattr(module, "is_weights_quantized") and module.is_weights_quantized():
                continue
            method.process_weights_after_loading(module)


def build_derived(adapter: Adapter, entry: str, layers: int | None, device: str,
                  target_raw: dict[str, Any] | None = None, partial: dict[str, Any] | None = None) -> Built:
    """``partial`` receives the config and notes as soon as they exist (so a
    build that fails still reports what it was built from)."""
    import torch

    partial = partial if partial is not None else {}

    torch.manual_seed(0)
    torch.set_default_dtype(getattr(torch, build_fixes.RUN_DTYPE[0]))
    root = adapter.release.root
    entry_cls = derive.import_entry(root, entry)
    arch = entry.rsplit(".", 1)[-1]
    notes: list[str] = []
    if target_raw is not None:
        tiny, shrink_notes = derive.shrink_config(target_raw, layers)
        notes.extend(dict.fromkeys(shrink_notes))
        tiny["architectures"] = [arch]
        tiny["torch_dtype"] = build_fixes.RUN_DTYPE[0]
        provenance = {"config_class": None, "found_by": "--target-config (a real config.json shrunk)",
                      "notes": []}
        try:
            cls, how = derive.config_class_for(entry_cls)
            provenance["config_class"] = f"{cls.__module__}.{cls.__name__}"
        except derive.DeriveError:
            pass
    else:
        tiny, provenance = derive.derived_raw_config(entry_cls, layers, arch)
        notes.extend(provenance.get("notes", []))
    adapter.adjust_config(tiny, notes)
    partial.update(config_json=tiny, notes=notes, provenance={k: v for k, v in provenance.items()
                                                              if k != "config_json"})
    folder = tempfile.mkdtemp(prefix="tracer-verify-config-")
    hf_config, how, _ = derive.load_through_release(tiny, provenance.get("config_class"), folder)
    provenance["loaded_by"] = how
    provenance["config_json"] = tiny
    text = derive.text_config_of(hf_config)
    hidden = getattr(text, "hidden_size", None)
    want = derive.text_part(tiny).get("hidden_size")
    if want is not None and hidden != want:
        raise derive.DeriveError(f"the release read the config back unshrunk (hidden_size {hidden}, "
                                 f"written {want}); not built")
    adapter.init_dp_attention(text)
    adapter.deepseek_mla_under_torch_native()
    adapter.before_build()
    model = _construct(adapter, entry_cls, hf_config, device, notes)
    notes.extend(n for n in build_fixes.PROCESS_PATCHES if n not in notes)
    model.eval()
    adapter.after_build(model)
    randomize(model)
    post_load(model, notes)
    n = int(getattr(text, "num_hidden_layers"))
    path, _ = derive.find_decoder_layers(model, n)
    return Built(model, hf_config, text, path, notes, provenance)


def build_family(adapter: Adapter, family: Family, raw_config: dict[str, Any], device: str) -> Built:
    """A hand-written family: transformers reference weights loaded through
    the class's own load_weights (falls back to random weights, noted)."""
    import importlib

    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_default_dtype(torch.float32)
    notes: list[str] = []
    hf_config = build_hf_config(family, raw_config, device)
    text = text_config(family, hf_config)
    reference_config = copy.deepcopy(text)
    adapter.init_dp_attention(text)  # 0.5.6: MoE and MLA layers read it
    if family.mla:
        adapter.deepseek_mla_under_torch_native()
    module = importlib.import_module(f"sglang.srt.models.{family.module}")
    entry_cls = getattr(module, family.entries[0])
    with torch.device(device):
        model = entry_cls(hf_config, quant_config=None).eval()
    adapter.after_build(model)
    reference = None
    if family.hf_model:
        try:
            cls = getattr(transformers, family.hf_model)
            # SGLang edits some config dicts in place (DeepSeek's rope): the
            # reference gets its own copy of the config
            ref = cls(copy.deepcopy(reference_config)).eval().to(device)
            items = split_packed_experts(ref.state_dict().items(), family.split_experts)
            model.load_weights([(family.hf_prefix + k, v) for k, v in items])
            reference = ref
        except Exception as exc:  # recorded, then random weights
            notes.append(f"reference weights not loadable ({type(exc).__name__}: {exc}); "
                         "random weights, no per-layer reference check")
    if reference is None:
        randomize(model)
        post_load(model, notes)
    provenance = {"config_class": f"transformers.{family.hf_config}", "found_by": f"family {family.key}",
                  "reference": family.hf_model}
    return Built(model, hf_config, text, family.layers_path, notes, provenance, reference=reference,
                 mla=family.mla)


# -- pools ------------------------------------------------------------------------


def _per_layer_buffers(pool, layout, device, dtype, size):
    """Replace a uniform MHA pool's buffers by one buffer a layer, shaped as
    that layer's attention needs (models whose layers differ in heads or head
    sizes). Every other method of the pool stays SGLang's."""
    import torch

    n = layout["layer_num"]
    k_buf, v_buf = [], []
    for lid in range(n):
        spec = layout["layers"].get(lid)
        if spec is None:
            k_buf.append(torch.zeros((size, 1, 1), dtype=dtype, device=device))
            v_buf.append(torch.zeros((size, 1, 1), dtype=dtype, device=device))
            continue
        k_buf.append(torch.zeros((size, spec["k_heads"], spec["k_dim"]), dtype=dtype, device=device))
        v_buf.append(torch.zeros((size, spec["v_heads"], spec["v_dim"]), dtype=dtype, device=device))
    pool.k_buffer, pool.v_buffer = k_buf, v_buf
    if hasattr(pool, "k_data_ptrs"):
        pool.k_data_ptrs = torch.tensor([b.data_ptr() for b in k_buf], dtype=torch.uint64, device=device)
        pool.v_data_ptrs = torch.tensor([b.data_ptr() for b in v_buf], dtype=torch.uint64, device=device)


class Case:
    """A built model plus pools and backend, ready to run paths."""

    def __init__(self, adapter: Adapter, built: Built, device: str):
        self.adapter, self.built, self.device = adapter, built, device
        self.model, self.text = built.model, built.text
        self.notes = built.notes
        self.reference = built.reference
        self.layers = built.layers
        self.layers_n = int(self.text.num_hidden_layers)
        self.hidden = int(self.text.hidden_size)
        owner = built.model.get_submodule(built.layers_path.rsplit(".", 1)[0]) if "." in built.layers_path \
            else built.model
        self.owner = owner
        final = None
        for name in ("norm", "final_layernorm", "ln_f", "norm_f", "final_norm"):
            cand = getattr(owner, name, None)
            if cand is not None and hasattr(cand, "register_forward_hook"):
                final = cand
                break
        self.recorder = StreamRecorder(self.layers, final)
        self.layout = derive.kv_layout(self.model, self.text)
        if built.mla is not None:
            self.layout["mla"] = built.mla
        self._make_pools()

    # -- pools --------------------------------------------------------------
    def _make_pools(self) -> None:
        import torch
        from sglang.srt.mem_cache import memory_pool as mp

        self.req_pool = mp.ReqToTokenPool(size=4, max_context_len=MAX_CONTEXT, device=self.device,
                                          enable_memory_saver=False)
        layout = self.layout
        layer_num = max(layout["layer_num"], self.layers_n)
        dtype = torch.get_default_dtype()
        common = dict(size=SPARE_LOC + 1, page_size=1, dtype=dtype,
                      layer_num=layer_num, device=self.device, enable_memory_saver=False,
                      enable_alt_stream=False)
        if layout["mla"]:
            common.update(kv_lora_rank=self.text.kv_lora_rank,
                          qk_rope_head_dim=self.text.qk_rope_head_dim)
            self.kv_pool = mp.MLATokenToKVPool(**_kwargs_for(mp.MLATokenToKVPool.__init__, **common))
            self.pool_kind = "MLATokenToKVPool"
        else:
            specs = list(layout["layers"].values())
            if specs:
                k_heads = max(s["k_heads"] for s in specs)
                k_dim = max(s["k_dim"] for s in specs)
                v_dim = max(s["v_dim"] for s in specs)
            else:
                k_heads = getattr(self.text, "num_key_value_heads", 2) or 2
                k_dim = v_dim = getattr(self.text, "head_dim", None) or self.hidden // self.text.num_attention_heads
            common.update(head_num=k_heads, head_dim=k_dim, v_head_dim=v_dim)
            self.kv_pool = mp.MHATokenToKVPool(**_kwargs_for(mp.MHATokenToKVPool.__init__, **common))
            self.pool_kind = "MHATokenToKVPool"
            if not layout["uniform"]:
                _per_layer_buffers(self.kv_pool, dict(layout, layer_num=layer_num), self.device,
                                   dtype, SPARE_LOC + 1)
                self.pool_kind = "MHATokenToKVPool, one buffer a layer"
                self.notes.append("KV pool: MHATokenToKVPool with one buffer a layer (the layers "
                                  "differ in heads or head sizes)")
        self.backend = self.adapter.attention_backend(self.req_pool, self.kv_pool,
                                                      graph_safe=self.device == "cuda")
        # the same prompt for every path
        gen = torch.Generator().manual_seed(1)
        vocab = min(int(getattr(self.text, "vocab_size", PROMPT_VOCAB)), PROMPT_VOCAB)
        self.prompt = torch.randint(0, vocab, (PROMPT_LEN + 1,), generator=gen)
        self.req_pool.req_to_token[REQ, :PROMPT_LEN + 1] = torch.arange(
            1, PROMPT_LEN + 2, dtype=torch.int32)

    # -- batches ------------------------------------------------------------
    def _batch(self, mode: str, static=None):
        import torch
        from sglang.srt.model_executor.forward_batch_info import (
            CaptureHiddenMode,
            ForwardMode,
        )

        dev = self.device
        S = PROMPT_LEN
        if mode == "extend":
            ids = self.prompt[:S].to(dev)
            positions = torch.arange(S, device=dev)
            fields = dict(forward_mode=ForwardMode.EXTEND, batch_size=1, input_ids=ids,
                          req_pool_indices=torch.tensor([REQ], device=dev),
                          seq_lens=torch.tensor([S], device=dev), seq_lens_cpu=torch.tensor([S]),
                          out_cache_loc=torch.arange(1, S + 1, device=dev), seq_lens_sum=S,
                          positions=positions,
                          mrope_positions=positions.unsqueeze(0).expand(3, -1).contiguous(),
                          extend_prefix_lens=torch.tensor([0], device=dev),
                          extend_prefix_lens_cpu=[0],
                          extend_seq_lens=torch.tensor([S], device=dev), extend_seq_lens_cpu=[S],
                          extend_num_tokens=S, extend_start_loc=torch.tensor([0], device=dev),
                          extend_logprob_start_lens_cpu=[S])
        else:
            if static is None:
                static = dict(input_ids=self.prompt[S:S + 1].to(dev),
                              seq_lens=torch.tensor([S + 1], device=dev),
                              out_cache_loc=torch.tensor([S + 1], device=dev),
                              positions=torch.tensor([S], device=dev),
                              mrope_positions=torch.full((3, 1), S, device=dev))
            fields = dict(forward_mode=ForwardMode.DECODE, batch_size=1,
                          req_pool_indices=torch.tensor([REQ], device=dev),
                          seq_lens_cpu=torch.tensor([S + 1]), seq_lens_sum=S + 1, **static)
        fields["capture_hidden_mode"] = CaptureHiddenMode.FULL
        return self.adapter.forward_batch(**fields)

    def _forward(self, fb):
        import torch

        self.backend.init_forward_metadata(fb)
        with torch.no_grad(), self.adapter.attention_scope(self.backend, fb), self._aux_tap():
            return self.model(fb.input_ids, fb.positions, fb)

    @contextlib.contextmanager
    def _aux_tap(self):
        """What the logits processor is handed as aux_hidden_states (used when
        the output carries no hidden_states, e.g. an embedding pooler)."""
        self._tapped = None
        handles = []
        try:
            from sglang.srt.layers.logits_processor import LogitsProcessor
        except ImportError:  # pragma: no cover
            LogitsProcessor = None
        if LogitsProcessor is not None:
            for module in self.model.modules():
                if isinstance(module, LogitsProcessor):
                    def tap(mod, args, kwargs):
                        aux = kwargs.get("aux_hidden_states")
                        if aux is None and len(args) > 4:
                            aux = args[4]
                        if aux is not None:
                            self._tapped = aux
                    handles.append(module.register_forward_pre_hook(tap, with_kwargs=True))
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    def _aux_of(self, out) -> list[Any]:
        import torch

        hidden = getattr(out, "hidden_states", None)
        source = "output"
        if hidden is None and isinstance(out, (tuple, list)) and len(out) == 2 and isinstance(out[1], (list, tuple)):
            hidden = out[1]
        if hidden is None:
            hidden, source = self._tapped, "logits-processor input"
        self.aux_source = source
        if hidden is None:
            return []
        if isinstance(hidden, (list, tuple)):
            return [h for h in hidden if isinstance(h, torch.Tensor)]
        if hidden.shape[-1] % self.hidden:
            return [hidden]
        return list(hidden.split(self.hidden, dim=-1))

    def _path_result(self, out, sets, extra=None) -> dict[str, Any]:
        aux = self._aux_of(out)
        captured, details = match_aux(aux, sets)
        result = {"aux_count": len(aux), "captured": captured}
        if getattr(self, "aux_source", "output") != "output":
            result["aux_source"] = self.aux_source
        kinds = {d["stream"] for d in details if d}
        if kinds and kinds != {"norm"}:
            result["matched_by"] = sorted(kinds)
        if "unsummed" in kinds:
            result["partial"] = [i for i, d in zip(captured, details) if d and d["stream"] == "unsummed"]
            result["stream"] = ("a layer's hidden_states output without the residual (the sum the "
                                "next layer's add-norm makes), not the residual stream")
        if self.reference is not None and extra is not None:
            result["max_diff_vs_transformers"] = extra
        return result

    def _reference_check(self, sets, upto: int) -> float | None:
        """Largest difference between SGLang's per-layer stream and
        transformers' hidden_states, for the last token row."""
        import torch

        if self.reference is None:
            return None
        streams = sets.get("norm") or sets.get("layer") or {}
        try:
            with torch.no_grad():
                ref = self.reference(input_ids=self.prompt[:upto][None].to(self.device),
                                     output_hidden_states=True).hidden_states
        except Exception as exc:  # the reference is a cross-check, not the subject
            note = f"transformers reference forward failed: {type(exc).__name__}: {exc}"[:300]
            if note not in self.notes:
                self.notes.append(note)
            return None
        worst = 0.0
        for i, stream in streams.items():
            if i < len(ref) - 1:
                worst = max(worst, float((stream[-1] - ref[i][0, -1]).abs().max()))
        return worst

    # -- setters --------------------------------------------------------------
    def set_ids(self, protocol: str, ids) -> None:
        getattr(self.model, SETTERS[protocol])(ids)

    def capture_state(self):
        value = None
        for module in (self.owner, *self.model.modules()):
            if hasattr(module, "layers_to_capture"):
                value = getattr(module, "layers_to_capture")
                break
        flagged = [i for i, layer in enumerate(self.layers)
                   if getattr(layer, "_is_layer_to_capture", False)]
        try:
            value = list(value) if value is not None else None
        except TypeError:
            value = repr(value)
        return {"layers_to_capture": value, "flagged_layers": flagged or None}

    # -- paths ----------------------------------------------------------------
    def run_extend(self) -> dict[str, Any]:
        self.recorder.take()
        out = self._forward(self._batch("extend"))
        sets = self.recorder.take()
        return self._path_result(out, sets, self._reference_check(sets, PROMPT_LEN))

    def run_decode(self) -> dict[str, Any]:
        self.recorder.take()
        out = self._forward(self._batch("decode"))
        sets = self.recorder.take()
        self.decode_sets = sets
        return self._path_result(out, sets, self._reference_check(sets, PROMPT_LEN + 1))

    def capture_graph(self) -> None:
        """Capture the decode forward into a CUDA graph on static buffers, the
        way a decode graph runner does at start-up (before any request)."""
        import torch

        dev = self.device
        self.static = dict(input_ids=torch.zeros(1, dtype=torch.long, device=dev),
                           seq_lens=torch.ones(1, dtype=torch.long, device=dev),
                           out_cache_loc=torch.tensor([SPARE_LOC], device=dev),
                           positions=torch.zeros(1, dtype=torch.long, device=dev),
                           mrope_positions=torch.zeros((3, 1), dtype=torch.long, device=dev))
        self.graph_fb = self._batch("decode", static=self.static)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up, as graph runners do
                self._forward(self.graph_fb)
        torch.cuda.current_stream().wait_stream(stream)
        self.recorder.take()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.graph_out = self._forward(self.graph_fb)
        # the hooks' clones were recorded into the graph: replays refresh them
        self.graph_sets = self.recorder.take()
        self.graph_tapped = self._tapped
        torch.cuda.synchronize()

    def run_graph_replay(self) -> dict[str, Any]:
        import torch

        S = PROMPT_LEN
        self.static["input_ids"].copy_(self.prompt[S:S + 1].to(self.device))
        self.static["seq_lens"].fill_(S + 1)
        self.static["out_cache_loc"].fill_(S + 1)
        self.static["positions"].fill_(S)
        self.static["mrope_positions"].fill_(S)
        self.graph.replay()
        torch.cuda.synchronize()
        self._tapped = self.graph_tapped
        result = self._path_result(self.graph_out, self.graph_sets,
                                   self._reference_check(self.graph_sets, S + 1))
        if getattr(self, "decode_sets", None):
            diffs = [float((self.graph_sets["layer"][i] - self.decode_sets["layer"][i]).abs().max())
                     for i in self.graph_sets["layer"] if i in self.decode_sets["layer"]]
            if diffs:
                result["max_diff_vs_eager_decode"] = max(diffs)
        return result


def _guard(fn, *args):
    try:
        return fn(*args)
    except stubs.StubCalled as exc:
        return {"error": f"StubCalled: {exc}"}
    except Exception as exc:
        return error_of(exc)


def error_of(exc: BaseException) -> dict[str, Any]:
    tb = traceback.extract_tb(exc.__traceback__)
    where = next((f"{f.filename}:{f.lineno}" for f in reversed(tb) if "sglang" in f.filename), "")
    if "/sglang/" in where:
        where = "sglang/" + where.split("/sglang/", 1)[1]
    inner = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    kind = "StubCalled" if isinstance(exc, stubs.StubCalled) else type(exc).__name__
    return {"error": f"{kind}: {_short(exc, 400)}", "at": where, "innermost": inner}


def run_built(adapter: Adapter, builder, protocol: str, runner_ids, device: str,
              want_graph: bool) -> dict[str, Any]:
    """Build (``builder()`` returns a Built), call the setters in the runner's
    order, run every path."""
    started = time.time()
    result: dict[str, Any] = {"paths": {}, "setter_calls": []}
    partial: dict[str, Any] = {}
    try:
        built = builder(partial)
        case = Case(adapter, built, device)
    except Exception as exc:  # the model could not be built: say why
        result.update(error_of(exc))
        result["stage"] = "build"
        if partial.get("config_json") is not None:
            result["config"] = {"raw": partial["config_json"]}
            result["notes"] = partial.get("notes", [])
            result["provenance"] = partial.get("provenance")
        return result
    result["num_hidden_layers"] = case.layers_n
    result["notes"] = case.notes
    result["layers_path"] = built.layers_path
    result["provenance"] = {k: v for k, v in built.provenance.items() if k != "config_json"}
    result["config"] = _config_summary(built)
    result["kv_pool"] = case.pool_kind
    graph = want_graph and device == "cuda"
    # The runner's setter calls, in its order, on every device: a release
    # whose graph runner calls the setter without ids does so at start-up
    # whether or not a graph is then captured here.
    for step in adapter.setter_order(protocol):
        call = step["call"]
        if call.startswith("capture"):
            if graph:
                outcome = _guard(case.capture_graph)
                state = outcome if isinstance(outcome, dict) else "captured"
            else:
                state = f"skipped (no CUDA graph on {device})" if device != "cuda" else "skipped"
        else:
            ids = None if "no ids" in call else runner_ids
            outcome = _guard(case.set_ids, protocol, ids)
            state = dict(case.capture_state(), ids=ids)
            if isinstance(outcome, dict):
                state.update(outcome)
        result["setter_calls"].append(dict(step, result=state))
    result["paths"]["extend"] = _guard(case.run_extend)
    result["paths"]["decode"] = _guard(case.run_decode)
    if graph:
        captured = all(s["result"] == "captured" for s in result["setter_calls"]
                       if s["call"].startswith("capture"))
        first = next((s["result"] for s in result["setter_calls"]
                      if s["call"].startswith("capture") and s["result"] != "captured"), None)
        result["paths"]["cuda_graph"] = (_guard(case.run_graph_replay) if captured else
                                         {"error": "graph capture failed: " + (first or {}).get("error", "?"),
                                          "at": (first or {}).get("at", "")})
    result["seconds"] = round(time.time() - started, 2)
    return result


def _config_summary(built: Built) -> dict[str, Any]:
    text = built.text
    keys = ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
            "head_dim", "vocab_size", "intermediate_size", "num_experts", "n_routed_experts",
            "num_local_experts", "kv_lora_rank", "layer_types")
    out = {k: getattr(text, k) for k in keys if getattr(text, k, None) is not None}
    out["config_class"] = type(built.hf_config).__name__
    if built.text is not built.hf_config:
        out["text_config_class"] = type(text).__name__
    raw = built.provenance.get("config_json")
    if raw is not None:
        out["raw"] = raw
    return out


def run_case(adapter: Adapter, family: Family, raw_config: dict[str, Any], runner_ids,
             device: str, want_graph: bool, protocol: str = "sglang-eagle3") -> dict[str, Any]:
    """A hand-written family (the transformers cross-check)."""
    return run_built(adapter, lambda partial: build_family(adapter, family, raw_config, device), protocol,
                     runner_ids, device, want_graph)


def run_derived(adapter: Adapter, entry: str, protocol: str, runner_ids, device: str, want_graph: bool,
                layers: int | None, target_raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """Any entry class, its family derived from the release (again in
    bfloat16 when its own code pins bf16 and float32 fails: build_fixes)."""
    return build_fixes.with_dtype_retry(lambda: run_built(
        adapter, lambda partial: build_derived(adapter, entry, layers, device, target_raw, partial),
        protocol, runner_ids, device, want_graph))
