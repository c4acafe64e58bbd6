"""What the harness does when a derived class fails to build, and torch-native
stand-ins for kernels the graph-safe MoE path refuses.

Each fix answers one way a tiny config derived from class defaults (or a
release's constructor) can fail where a real checkpoint would not; each is
applied only after the build failed that way, then the build is retried, and
each is noted in the row. None touches a setter, a capture loop or a decoder
layer's forward.

* ``layer_types`` None in a config (the class defaults leave it unset, a real
  config.json lists one type per layer) while the build dies on ``'NoneType'
  object is not iterable / subscriptable``: every layer a full-attention layer.
* a rope dict keyed by layer type (transformers 5's ``rope_parameters`` for
  sliding / full attention) where the release's model reads one flat rope
  (``unhashable type: 'dict'`` in its rope cache): the full-attention rope.
* a decoder-layer class that refuses a keyword its model loop passes
  (``__init__() got an unexpected keyword argument 'start_layer'``): that
  keyword is dropped for that class. **A release bug**: the server cannot build
  the class either; the row says so.

Nothing here imports torch or SGLang at module import time.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_NONE_ITER = re.compile(r"'NoneType' object is not (iterable|subscriptable)|argument of type 'NoneType' is not "
                        r"iterable")
_UNHASHABLE_DICT = "unhashable type: 'dict'"
_UNEXPECTED_KW = re.compile(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'")

RELEASE_BUG = "RELEASE BUG WORKED AROUND"
# fixes that outlive the build that needed them (a patched class): every later
# build in the process notes them too (a worker builds once per protocol)
PROCESS_PATCHES: list[str] = []


def _configs_in(cfg, seen=None):
    seen = seen if seen is not None else set()
    if id(cfg) in seen:
        return
    seen.add(id(cfg))
    yield cfg
    for value in list(vars(cfg).values()):
        if hasattr(value, "to_dict") and hasattr(value, "model_type"):
            yield from _configs_in(value, seen)


def fix_layer_types(hf_config) -> str | None:
    done = []
    for cfg in _configs_in(hf_config):
        n = getattr(cfg, "num_hidden_layers", None)
        if "layer_types" in vars(cfg) or hasattr(type(cfg), "layer_types") or hasattr(cfg, "layer_types"):
            if getattr(cfg, "layer_types", 0) is None and isinstance(n, int) and n > 0:
                cfg.layer_types = ["full_attention"] * n
                done.append(type(cfg).__name__)
    if not done:
        return None
    return (f"config {', '.join(done)}.layer_types = ['full_attention'] * num_hidden_layers (None in the class "
            "defaults; the build read it as a list)")


def fix_rope_none(hf_config) -> str | None:
    """``rope_parameters`` None beside a ``rope_theta``: a config class that
    names ``rope_theta`` / ``rope_scaling`` itself leaves transformers 5's
    ``rope_parameters`` None (``self.rope_scaling = None`` after
    ``super().__init__``), and a model that reads ``rope_parameters`` as a dict
    fails. Plain rope with that theta. The row notes it: a checkpoint config
    with ``rope_theta`` only fails the same way in the release as shipped."""
    done = []
    for cfg in _configs_in(hf_config):
        theta = vars(cfg).get("rope_theta")
        if "rope_parameters" in vars(cfg) and vars(cfg)["rope_parameters"] is None and isinstance(theta, (int, float)):
            cfg.rope_parameters = {"rope_type": "default", "rope_theta": theta}
            done.append(type(cfg).__name__)
    if not done:
        return None
    return (f"config {', '.join(done)}.rope_parameters = plain rope from rope_theta (None after loading: the "
            "config class sets rope_scaling = None after transformers 5's init; a checkpoint config with "
            "rope_theta only fails the same way in the release as shipped)")


def _nested_rope(rope) -> bool:
    return isinstance(rope, dict) and bool(rope) and all(isinstance(v, dict) for v in rope.values())


def fix_nested_rope(hf_config) -> str | None:
    done = []
    for cfg in _configs_in(hf_config):
        for key in ("rope_parameters", "rope_scaling"):
            rope = vars(cfg).get(key)
            if _nested_rope(rope):
                flat = dict(rope.get("full_attention") or next(iter(rope.values())))
                setattr(cfg, key, flat)
                if isinstance(flat.get("rope_theta"), (int, float)):
                    cfg.rope_theta = flat["rope_theta"]
                done.append(f"{type(cfg).__name__}.{key}")
    if not done:
        return None
    return (f"config {', '.join(done)}: the per-layer-type rope dict made one flat rope (the full-attention "
            "one; the model reads a flat rope, as a real checkpoint's config.json has it)")


def fix_unexpected_keyword(message: str) -> str | None:
    """Drop the refused keyword for the class named in the message (found
    among the loaded release modules)."""
    m = _UNEXPECTED_KW.search(message)
    if not m:
        return None
    cls_name, keyword = m.groups()
    owners = [mod for name, mod in list(sys.modules.items())
              if name.startswith("sglang.") and isinstance(getattr(mod, cls_name, None), type)]
    if not owners:
        return None
    cls = getattr(owners[0], cls_name)
    if getattr(cls, "_tracer_dropped", None) == keyword:
        return None
    original = cls.__init__

    def __init__(self, *args, **kwargs):
        kwargs.pop(keyword, None)
        original(self, *args, **kwargs)

    cls.__init__ = __init__
    cls._tracer_dropped = keyword
    note = (f"{RELEASE_BUG}: {cls.__module__}.{cls_name}.__init__ takes no `{keyword}`, which its model "
            f"loop passes (TypeError at build): the keyword is dropped for that class. The release cannot "
            f"build this class as shipped")
    PROCESS_PATCHES.append(note)
    return note


def fix_for(exc: BaseException, hf_config) -> str | None:
    """The fix for this build failure, applied (its note), or None."""
    text = str(exc)
    if isinstance(exc, TypeError):
        if _NONE_ITER.search(text):
            return fix_layer_types(hf_config) or fix_rope_none(hf_config)
        if _UNHASHABLE_DICT in text:
            return fix_nested_rope(hf_config)
        return fix_unexpected_keyword(text)
    return None


# -- torch-native MoE with the router weight applied on the input --------------------


def moe_native_weight_on_input(original):
    """``fused_moe_forward_native`` raises NotImplementedError when a layer
    applies the router weight on its input (Llama-4). The same sum, in torch:
    each token's input scaled by its top-k weight, the experts' outputs then
    summed unweighted (what the triton path does with
    ``apply_router_weight_on_input``). Other layers take the release's own
    function."""

    def forward(layer, dispatch_output):
        import torch
        import torch.nn.functional as F

        cfg = layer.moe_runner_config
        if not getattr(cfg, "apply_router_weight_on_input", False):
            return original(layer, dispatch_output)
        from sglang.srt.layers.moe.token_dispatcher import StandardCombineInput

        x = dispatch_output.hidden_states
        topk_weights, topk_ids, _ = dispatch_output.topk_output
        xw = x[:, None, :] * topk_weights.to(x.dtype)[:, :, None]  # t, a, i
        w13 = layer.w13_weight[topk_ids]
        w1, w3 = torch.chunk(w13, 2, dim=2)
        w2 = layer.w2_weight[topk_ids]
        x1 = torch.einsum("tai,taoi -> tao", xw, w1)
        if cfg.activation == "silu":
            x1 = F.silu(x1)
        elif cfg.activation == "gelu":
            x1 = F.gelu(x1)
        else:
            raise NotImplementedError(f"tracer stand-in: activation {cfg.activation!r} with the router "
                                      "weight on the input")
        x3 = torch.einsum("tai,taoi -> tao", xw, w3)
        out = torch.einsum("tao,taio -> tai", x1 * x3, w2).sum(dim=1)
        return StandardCombineInput(hidden_states=out)

    forward._tracer_standin = True
    return forward


def install_moe_standin(notes: list[str]) -> bool:
    """Wrap the release's graph-safe native MoE (looked up by the unquantized
    method's compile hook at call time); True when installed."""
    try:
        import sglang.srt.layers.moe.fused_moe_native as native
    except Exception:
        return False
    current: Any = getattr(native, "fused_moe_forward_native", None)
    if current is None:
        return False
    if not getattr(current, "_tracer_standin", False):
        native.fused_moe_forward_native = moe_native_weight_on_input(current)
    notes.append("fused_moe_forward_native: router weight on the input in torch (the release's native MoE "
                 "raises NotImplementedError there); other MoE layers unchanged")
    return True


# -- bfloat16 for a model whose own code pins it --------------------------------------

# the dtype derived builds run in: float32, unless with_dtype_retry switched it
RUN_DTYPE = ["float32"]
_BF16_MISMATCH = re.compile(r"expected (mat1 and mat2|m1 and m2|.*) to have the same dtype.*BFloat16")


def pins_bf16(result: dict) -> bool:
    """Every path that ran failed on a float32 / bfloat16 mismatch (the
    model's own code makes bf16 parameters or casts, e.g. a hyper-connection
    config with ``params_dtype=torch.bfloat16``)."""
    paths = [p for p in (result.get("paths") or {}).values() if isinstance(p, dict)]
    errors = [p.get("error", "") for p in paths]
    return bool(paths) and all(e and _BF16_MISMATCH.search(e) for e in errors)


def with_dtype_retry(run):
    """``run()`` in float32; when every path fails on a bf16 mismatch, once
    more in bfloat16 (the whole model, pools and prompt embedding: the aux
    tensors are still matched to the streams the layers receive, exactly)."""
    result = run()
    if RUN_DTYPE[0] != "float32" or not pins_bf16(result):
        return result
    first = next(p["error"] for p in result["paths"].values() if p.get("error"))
    RUN_DTYPE[0] = "bfloat16"
    try:
        again = run()
    finally:
        RUN_DTYPE[0] = "float32"
    again.setdefault("notes", [])
    again["notes"] = list(again.get("notes") or []) + [
        f"run in bfloat16: in float32 every path failed ({first[:160]}); the model's own code pins bf16"]
    again["dtype"] = "bfloat16"
    return again


# -- config fields a release reads under a checkpoint's name ------------------------------

# suffixes a release's model adds to a field the config class names without
# them (``sliding_window_size`` <- ``sliding_window``)
_ALIAS_SUFFIXES = ("_size",)


def alias_of(obj, attr: str):
    """(value, why) for a missing ``attr`` the config holds under a shorter
    name, else None."""
    for suffix in _ALIAS_SUFFIXES:
        base = attr[: -len(suffix)]
        if attr.endswith(suffix) and base and hasattr(obj, base) and getattr(obj, base) is not None:
            return getattr(obj, base), f"the defaults lack it; alias of {base}"
    return None


# -- the DSA indexer under a backend without indexer metadata -----------------------------

DSA_INDEXER = "sglang.srt.layers.attention.dsa.dsa_indexer"


def dsa_indexer_native(original):
    """The DSA indexer has no torch path (its ``forward_native`` raises). Its
    CUDA forward asks the attention backend for indexer metadata first and
    returns None (no top-k: dense attention over every cached token) when the
    backend has none, which the torch-native backend never has. This stand-in
    does exactly that and refuses loudly otherwise. With the harness's 7
    tokens and ``index_topk`` 64 the top-k would keep every token anyway."""

    def forward_native(self, x, q_lora, positions, forward_batch, layer_id, *args, **kwargs):
        from sglang.srt.model_executor.forward_context import get_attn_backend

        if get_attn_backend().get_indexer_metadata(layer_id, forward_batch) is None:
            return None
        raise NotImplementedError("tracer stand-in for the DSA indexer: the backend offers indexer "
                                  "metadata; no torch path for it")

    forward_native._tracer_standin = True
    forward_native._tracer_original = original
    return forward_native


def install_dsa_indexer_standin(notes: list[str]) -> bool:
    """When the entry's module tree imported the DSA indexer: its
    ``Indexer.forward_native`` becomes the stand-in above."""
    module = sys.modules.get(DSA_INDEXER)
    cls = getattr(module, "Indexer", None) if module is not None else None
    if cls is None:
        return False
    if not getattr(cls.forward_native, "_tracer_standin", False):
        cls.forward_native = dsa_indexer_native(cls.forward_native)
    notes.append("DSA Indexer.forward_native: returns None when the attention backend has no indexer "
                 "metadata (what its CUDA forward does; dense attention), loud otherwise")
    return True
