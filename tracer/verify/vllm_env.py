"""The process a vLLM worker of ``tracer verify`` runs in: vLLM's own model
code, imported from a release tree of ``.py`` files (no compiled extension),
with the smallest set of replacements that lets a model be built and run.

Every replacement stands in for a compiled kernel or an engine service, never
for the code under test (the model classes, their decoder loops,
``SupportsEagle3`` / ``EagleModelMixin`` and the setters are vLLM's,
unmodified):

* optional packages the import chain names but the forward never uses:
  import-only stubs that fail loudly when called (``stubs.py``);
* the model registry inspects classes in a subprocess: done in this process;
* attention: the backend selection returns vLLM's pure-torch
  ``FlexAttentionBackend`` (so ``Attention.__init__`` runs as written), and
  ``Attention.forward`` / ``MLAAttention.forward`` become a torch-native
  causal attention over a KV cache this module owns (slots = positions), so
  one prefill, decode steps and a CUDA-graph replay see earlier tokens;
* ``FusedMoE``: routing and experts in plain torch (the fused kernels and
  ``moe_align_block_size`` are compiled ops);
* every ``CustomOp`` takes its ``forward_native`` (``custom_ops=["none"]``,
  set in the config, vLLM's own switch).

Each replacement applied is listed in ``PATCHES`` and lands in the report.
"""

from __future__ import annotations

import os
import sys
from typing import Any

STUB_ROOTS = ["psutil", "zmq", "cbor2", "aiohttp", "openai_harmony", "pybase64", "cachetools", "uvloop",
              "prometheus_client", "xgrammar", "fastapi", "partial_json_parser", "llguidance", "einops",
              "msgspec", "blake3", "gguf", "compressed_tensors", "mistral_common", "diskcache", "depyf",
              "setproctitle", "starlette", "uvicorn", "anthropic", "ijson", "openai", "cloudpickle"]
# never stubbed: packages transformers or vLLM probe with find_spec (has_deep_gemm(), is_librosa_available()):
# a stub would make them look installed
# compiled extensions the CUDA platform module imports unconditionally ("trigger op
# registration"): an empty module stands in; any op of theirs is then missing from
# torch.ops, so a call fails loudly
HARD_EXTENSIONS = ["vllm._C_stable_libtorch", "vllm._C"]
# capability queries some releases ask the compiled extension at import time
# (0.11: w8a8_utils CUTLASS_FP8_SUPPORTED = cutlass_fp8_supported()): answered
# "not supported", so no cutlass path is taken
QUERY_OPS = ["cutlass_scaled_mm_supports_fp4", "cutlass_scaled_mm_supports_fp8",
             "cutlass_scaled_mm_supports_block_fp8", "cutlass_sparse_scaled_mm_supported",
             "cutlass_group_gemm_supported"]
# packages of the release that refuse to import without their compiled kernels
# (vllm_flash_attn raises ImportError when _vllm_fa2_C / _vllm_fa3_C are absent):
# an import-only stub module, loud when called
STUB_SUBPACKAGES = {"vllm.vllm_flash_attn": "vllm.vllm_flash_attn._vllm_fa2_C"}
# installed here at versions the release cannot import (openai's types move between versions)
FORCED_STUBS = ["openai"]
MAX_SLOTS = 64  # KV slots per attention layer (= positions)
PATCHES: list[str] = []


class _Ctx:
    positions = None  # the positions tensor of the forward being run
    kv: dict[int, Any] = {}


CTX = _Ctx()


def _note(text: str) -> None:
    if text not in PATCHES:
        PATCHES.append(text)


def prepare(release_root: str, device: str) -> None:
    """Put the release first on sys.path, install the stubs, patch the engine
    services; call before anything of the release is imported."""
    from . import stubs

    os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if release_root not in sys.path:
        sys.path.insert(0, release_root)
    stubs.install(STUB_ROOTS, force=FORCED_STUBS)
    _empty_extensions(release_root)
    import vllm.model_executor.models.registry as registry

    if hasattr(registry, "_run_in_subprocess"):
        registry._run_in_subprocess = lambda fn: fn()
        _note("model registry: inspect model classes in this process (registry._run_in_subprocess)")
    _patch_attention_selection()
    _patch_attention_forward()
    _patch_fused_moe()
    _loud_op_namespaces()


# imported before torch.ops lookups turn loud: their import-time
# `hasattr(torch.ops._C, op)` probes must see the truth (absent)
_PROBING_MODULES = ["vllm._custom_ops", "vllm.model_executor.layers.activation",
                    "vllm.model_executor.layers.layernorm", "vllm.model_executor.layers.linear",
                    "vllm.model_executor.layers.rotary_embedding", "vllm.model_executor.layers.quantization",
                    "vllm.model_executor.layers.vocab_parallel_embedding", "vllm.model_executor.models.utils",
                    "vllm.model_executor.layers.fused_moe"]


def _loud_op_namespaces() -> None:
    import importlib

    for name in _PROBING_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    import torch

    for namespace in OP_NAMESPACES:
        real = getattr(torch.ops, namespace)
        if not isinstance(real, _LoudNamespace):
            setattr(torch.ops, namespace, _LoudNamespace(namespace, real))
    _note("torch.ops." + ", torch.ops.".join(OP_NAMESPACES) + ": an op the absent extensions would register "
          "fails loudly when called (looking it up, as layer constructors do, is allowed); the capability "
          "queries " + ", ".join(QUERY_OPS) + " answer False")


def _empty_extensions(release_root: str) -> None:
    import importlib.util
    import types

    for name in HARD_EXTENSIONS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None and name not in sys.modules:
            module = types.ModuleType(name)
            module.__file__ = f"<absent compiled extension {name}>"
            sys.modules[name] = module
            _note(f"{name}: absent compiled extension, an empty module (its ops are not registered)")
    import torch

    for op in QUERY_OPS:  # asked at import time (0.11's w8a8_utils), before the namespaces turn loud
        if hasattr(torch.ops._C, op):
            continue
        try:
            lib = torch.library.Library("_C", "FRAGMENT")
            lib.define(f"{op}(int cuda_device_capability) -> bool")
            lib.impl(op, lambda cap: False, "CompositeExplicitAutograd")
            _KEEP.append(lib)
        except Exception:
            continue
    import glob

    from . import stubs

    for package, extension in STUB_SUBPACKAGES.items():
        # on disk, not find_spec (which would import the package being judged)
        present = bool(glob.glob(os.path.join(release_root, *extension.split(".")) + "*.so"))
        if not present and package not in sys.modules:
            stubs.install([], force=[package])
            _note(f"{package}: its compiled kernels are absent; an import-only stub (loud when called)")


_KEEP: list = []
# compiled ops with a plain-torch meaning that a path under test needs
NATIVE_OPS = {"weak_ref_tensor": (lambda tensor: tensor, "the tensor itself (a strong reference; vLLM's "
                                  "CUDAGraphWrapper keeps only weak ones, a memory matter, not a value one)")}
OP_NAMESPACES = ["_C", "_moe_C", "_C_cache_ops", "_C_custom_ar"]


class _LoudOp:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, name):  # op.default, op.overload ...
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        from .stubs import StubCalled

        raise StubCalled(f"compiled op torch.ops.{self._name} called (its extension is absent)")


class _LoudNamespace:
    def __init__(self, name: str, real):
        self._name, self._real = name, real

    def __getattr__(self, op):
        try:
            return getattr(self._real, op)
        except AttributeError:
            if op.startswith("__"):
                raise
            if op in QUERY_OPS:
                return lambda *args, **kwargs: False
            if op in NATIVE_OPS:
                _note(f"torch.ops.{self._name}.{op}: {NATIVE_OPS[op][1]}")
                return NATIVE_OPS[op][0]
            return _LoudOp(f"{self._name}.{op}")


def _patch_attention_selection() -> None:
    try:
        import vllm.v1.attention.selector as selector
    except ImportError:  # older releases
        import vllm.attention.selector as selector  # type: ignore[no-redef]
    flex = None
    for name in ("vllm.v1.attention.backends.flex_attention",):
        try:
            flex = __import__(name, fromlist=["FlexAttentionBackend"]).FlexAttentionBackend
        except Exception:
            continue
    mla = None
    for name, cls in (("vllm.v1.attention.backends.mla.triton_mla", "TritonMLABackend"),
                      ("vllm.v1.attention.backends.mla.common", "MLACommonBackend")):
        try:
            mla = getattr(__import__(name, fromlist=[cls]), cls)
            break
        except Exception:
            continue

    def pick(*args, **kwargs):
        cfg = kwargs.get("attn_selector_config")
        use_mla = bool(getattr(cfg, "use_mla", False) or kwargs.get("use_mla"))
        for a in args:
            use_mla = use_mla or bool(getattr(a, "use_mla", False))
        chosen = mla if use_mla and mla is not None else flex
        if chosen is None:
            raise RuntimeError("no pure-torch attention backend class importable in this release")
        return chosen

    if hasattr(selector, "_cached_get_attn_backend"):
        selector._cached_get_attn_backend = pick
    try:  # 0.33: MLA layers also pick a prefill backend (none takes float32 on CUDA)
        from vllm.v1.attention.backends.mla.prefill import cpu_sdpa
        from vllm.v1.attention.backends.mla.prefill import selector as prefill_selector

        prefill_cls = next(v for k, v in vars(cpu_sdpa).items() if k.endswith("Backend")
                           and isinstance(v, type) and v.__module__ == cpu_sdpa.__name__)
        prefill_selector._auto_select_mla_prefill_backend = lambda *a, **k: prefill_cls
        _note(f"MLA prefill backend selection: {prefill_cls.__name__} (pure torch) for construction only")
    except Exception:
        pass
    _note("attention backend selection: FlexAttentionBackend (MLA: TritonMLABackend) for construction only")


def _native_attention(self, query, key, value, output_shape=None, output_dtype=None, **_):
    """Causal attention in plain torch over this module's KV slots."""
    import torch

    pos = CTX.positions
    tokens = query.shape[0]
    heads, kv_heads = self.num_heads, self.num_kv_heads
    head = self.head_size
    head_v = getattr(self, "head_size_v", head)
    q = query.reshape(tokens, heads, head)
    owner = self
    target = getattr(self, "kv_sharing_target_layer_name", None)
    if target and key is None:
        owner = CTX.kv.get(("name", target), self)
    cache = CTX.kv.get(id(owner))
    if cache is None:
        cache = (torch.zeros(MAX_SLOTS, kv_heads, head, dtype=query.dtype, device=query.device),
                 torch.zeros(MAX_SLOTS, kv_heads, head_v, dtype=query.dtype, device=query.device))
        CTX.kv[id(owner)] = cache
        CTX.kv[("name", getattr(owner, "layer_name", ""))] = owner
    if key is not None and value is not None:
        cache[0].index_copy_(0, pos, key.reshape(tokens, kv_heads, head).to(cache[0].dtype))
        cache[1].index_copy_(0, pos, value.reshape(tokens, kv_heads, head_v).to(cache[1].dtype))
    k = cache[0].repeat_interleave(heads // kv_heads, dim=1)
    v = cache[1].repeat_interleave(heads // kv_heads, dim=1)
    slots = torch.arange(MAX_SLOTS, device=query.device)
    mask = slots[None, :] <= pos[:, None]
    window = getattr(self, "sliding_window", None)
    if isinstance(window, int) and window > 0:
        mask = mask & (slots[None, :] > pos[:, None] - window)
    scale = getattr(getattr(self, "impl", None), "scale", None) or head ** -0.5
    scores = torch.einsum("thd,shd->hts", q.float(), k.float()) * scale
    scores = scores.masked_fill(~mask[None], float("-inf"))
    out = torch.einsum("hts,shd->thd", scores.softmax(-1), v.float())
    out = out.reshape(tokens, heads * head_v).to(output_dtype or query.dtype)
    if output_shape is not None and tuple(output_shape) != tuple(out.shape):
        out = out.reshape(output_shape)
    return out


def _patch_attention_forward() -> None:
    done = []
    for modname, clsname in (("vllm.model_executor.layers.attention.attention", "Attention"),
                             ("vllm.attention.layer", "Attention")):
        try:
            cls = getattr(__import__(modname, fromlist=[clsname]), clsname)
        except Exception:
            continue
        cls.forward = _native_attention
        done.append(f"{modname}.{clsname}")
        break
    for modname, clsname in (("vllm.model_executor.layers.attention.mla_attention", "MLAAttention"),
                             ("vllm.attention.layer", "MLAAttention")):
        try:
            cls = getattr(__import__(modname, fromlist=[clsname]), clsname)
        except Exception:
            continue
        cls.forward = _native_mla
        done.append(f"{modname}.{clsname}")
        break
    _note("attention forward: torch-native causal attention over harness-owned KV slots (" + ", ".join(done) + ")")


def _native_mla(self, q, kv_c_normed, k_pe, output_shape=None, **_):
    """MLA without absorption: up-project the latent with kv_b_proj, then plain attention."""
    import torch

    pos = CTX.positions
    tokens = q.shape[0]
    heads = self.num_heads
    nope, rope, vdim = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
    q = q.reshape(tokens, heads, nope + rope)
    cache = CTX.kv.get(id(self))
    if cache is None:
        cache = (torch.zeros(MAX_SLOTS, kv_c_normed.shape[-1], dtype=q.dtype, device=q.device),
                 torch.zeros(MAX_SLOTS, rope, dtype=q.dtype, device=q.device))
        CTX.kv[id(self)] = cache
    cache[0].index_copy_(0, pos, kv_c_normed.reshape(tokens, -1).to(cache[0].dtype))
    cache[1].index_copy_(0, pos, k_pe.reshape(tokens, rope).to(cache[1].dtype))
    kv = self.kv_b_proj(cache[0])[0].reshape(MAX_SLOTS, heads, nope + vdim)
    k_nope, v = kv[..., :nope], kv[..., nope:]
    k = torch.cat([k_nope, cache[1][:, None, :].expand(MAX_SLOTS, heads, rope)], dim=-1)
    slots = torch.arange(MAX_SLOTS, device=q.device)
    mask = slots[None, :] <= pos[:, None]
    scale = getattr(self, "scale", None) or (nope + rope) ** -0.5
    scores = torch.einsum("thd,shd->hts", q.float(), k.float()) * scale
    scores = scores.masked_fill(~mask[None], float("-inf"))
    out = torch.einsum("hts,shd->thd", scores.softmax(-1), v.float()).reshape(tokens, heads * vdim)
    return out.to(q.dtype)


def _native_moe(self, hidden_states, router_logits, *args, **kwargs):
    """Top-k routing (softmax or sigmoid, renormalized when the layer says so)
    and the experts' gated MLP, from the layer's own w13 / w2 weights."""
    import torch
    import torch.nn.functional as F

    x = hidden_states
    shape = x.shape
    x = x.reshape(-1, shape[-1])
    logits = router_logits.reshape(x.shape[0], -1).float()
    scoring = str(getattr(self, "scoring_func", "softmax"))
    probs = logits.sigmoid() if scoring == "sigmoid" else logits.softmax(-1)
    top_k = int(getattr(self, "top_k", None) or getattr(self, "topk", 2) or 2)
    top_k = min(top_k, probs.shape[-1])
    weights, ids = probs.topk(top_k, dim=-1)
    if getattr(self, "renormalize", True):
        weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-20)
    w13, w2 = self.w13_weight, self.w2_weight
    out = torch.zeros(x.shape[0], w2.shape[1], dtype=torch.float32, device=x.device)
    for slot in range(top_k):
        e = ids[:, slot]
        gate_up = torch.einsum("th,tih->ti", x.float(), w13[e].float())
        gate, up = gate_up.chunk(2, dim=-1)
        act = F.silu(gate) * up if gate.shape[-1] == up.shape[-1] else F.silu(gate_up)
        out += weights[:, slot:slot + 1] * torch.einsum("ti,thi->th", act, w2[e].float())
    scale = getattr(self, "routed_scaling_factor", None)
    if isinstance(scale, (int, float)) and scale not in (0, 1):
        out = out * scale
    return out.to(hidden_states.dtype).reshape(*shape[:-1], w2.shape[1])


def _native_experts(x, w13, w2, topk_weights, topk_ids, on_input=False, activation="silu"):
    """sum_k w_k * down_e(act(gate_e x) * up_e x) for the chosen experts e (a
    non-gated layer, whose w13 holds no up half: down_e(act(w1_e x)))."""
    import torch
    import torch.nn.functional as F

    gated = w13.shape[1] == 2 * w2.shape[2]
    name = str(activation).lower()

    def act(v):
        if "relu2" in name or "relu_squared" in name:
            return F.relu(v).square()
        return F.gelu(v) if "gelu" in name else F.silu(v)

    out = torch.zeros(x.shape[0], w2.shape[1], dtype=torch.float32, device=x.device)
    for slot in range(topk_ids.shape[-1]):
        e = topk_ids[:, slot].long()
        w = topk_weights[:, slot:slot + 1].float()
        xin = x.float() * w if on_input else x.float()
        h = torch.einsum("th,tih->ti", xin, w13[e].float())
        if gated:
            gate, up = h.chunk(2, dim=-1)
            h = act(gate) * up
        else:
            h = act(h)
        y = torch.einsum("ti,thi->th", h, w2[e].float())
        out += y if on_input else w * y
    return out.to(x.dtype)


def _native_routing(self, hidden_states, router_logits, topk_indices_dtype=None, *, input_ids=None):
    import torch

    logits = router_logits.float()
    scoring = str(getattr(self, "scoring_func", "softmax") or "softmax")
    scores = logits.sigmoid() if "sigmoid" in scoring else logits.softmax(-1)
    choose = scores
    bias = getattr(self, "e_score_correction_bias", None)
    if isinstance(bias, torch.Tensor):
        choose = scores + bias.float()
    top_k = min(int(self.top_k), scores.shape[-1])
    ids = choose.topk(top_k, dim=-1).indices
    weights = scores.gather(-1, ids)
    if getattr(self, "renormalize", True):
        weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-20)
    return weights.float(), ids.to(topk_indices_dtype or torch.int32)


def _patch_fused_moe() -> None:
    """0.33's layout: a router object (BaseRouter._select_experts) and the
    unquantized method's kernel (an oracle picks a compiled or triton kernel)."""
    try:
        from vllm.model_executor.layers.fused_moe import unquantized_fused_moe_method as um
        from vllm.model_executor.layers.fused_moe.oracle import unquantized as oracle
        from vllm.model_executor.layers.fused_moe.router import base_router
    except Exception:
        _patch_fused_moe_old()
        return
    base_router.BaseRouter._select_experts = _native_routing
    method = um.UnquantizedFusedMoEMethod
    backend = oracle.UnquantizedMoeBackend.TRITON
    um.select_unquantized_moe_backend = lambda *a, **k: (backend, None)
    method.process_weights_after_loading = lambda self, layer: None

    def apply(self, layer, x, topk_weights, topk_ids, shared_experts=None, shared_experts_input=None, **_):
        return _native_experts(x, layer.w13_weight, layer.w2_weight, topk_weights, topk_ids,
                               bool(getattr(layer, "apply_router_weight_on_input", False)),
                               getattr(getattr(layer, "activation", None), "value", getattr(layer, "activation", "silu")))

    method.apply = apply
    method.forward_native = apply
    method.forward_cuda = apply
    try:
        method.is_monolithic = property(lambda self: False)
    except Exception:
        pass
    _note("fused MoE: routing (BaseRouter._select_experts) and the unquantized experts "
          "(UnquantizedFusedMoEMethod.apply) in plain torch; its kernel oracle and weight post-processing skipped")


def _patch_fused_moe_old() -> None:
    for modname in ("vllm.model_executor.layers.fused_moe.layer", "vllm.model_executor.layers.fused_moe"):
        try:
            cls = __import__(modname, fromlist=["FusedMoE"]).FusedMoE
        except Exception:
            continue
        original = cls.forward

        def forward(self, hidden_states, router_logits, *args, _orig=original, **kwargs):
            if hasattr(self, "w13_weight") and hasattr(self, "w2_weight"):
                return _native_moe(self, hidden_states, router_logits)
            return _orig(self, hidden_states, router_logits, *args, **kwargs)

        cls.forward = forward
        _note("FusedMoE.forward: top-k routing and expert MLPs in plain torch (fused kernels are compiled ops)")
        return
