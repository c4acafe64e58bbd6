"""Run SGLang's own model code and record which layers' residual streams the
EAGLE-3 aux hidden states really are.

One call of :func:`run_case` builds the entry class from a tiny config, loads
weights through the class's own ``load_weights`` (from a transformers
reference model with the same config where the family has one), calls the
setter the way the release's runner does, and runs:

* ``extend``: an eager prefill (EXTEND) of a short prompt;
* ``decode``: one eager DECODE step after that prefill;
* ``cuda_graph`` (CUDA only): the decode forward captured in a CUDA graph at
  the point of the runner's setter sequence where the release captures it,
  then replayed after the prefill.

A forward hook on ``layers[i].input_layernorm`` records the stream each layer
receives (the output of layer i-1; the embedding for i = 0). Every aux tensor
the top model hands to its logits processor is matched numerically to one of
those streams. Captured layers are reported in the draft-config convention:
the index of the layer whose output it is, -1 being the embedding.
"""

from __future__ import annotations

import copy
import inspect
import time
import traceback
from typing import Any

from . import stubs
from .adapters import Adapter
from .families import (
    Family,
    build_hf_config,
    resolve_attr,
    split_packed_experts,
    text_config,
)

PROMPT_LEN = 6
MAX_CONTEXT = 64
REQ = 1  # request slot 0 is the padding row CUDA-graph batches point at (0.5.23)
SPARE_LOC = 255  # KV slot the graph capture writes to before the real replay


def _kwargs_for(fn, **candidates):
    params = inspect.signature(fn).parameters
    return {k: v for k, v in candidates.items() if k in params}


class StreamRecorder:
    """Forward hooks on every decoder layer's input_layernorm."""

    def __init__(self, layers):
        import torch

        self.streams: dict[int, Any] = {}
        self.handles = []
        for index, layer in enumerate(layers):
            norm = getattr(layer, "input_layernorm", None)
            if norm is None:
                raise RuntimeError(f"layer {index} has no input_layernorm to hook")

            def hook(module, args, out, index=index):
                stream = args[0] if isinstance(out, torch.Tensor) else out[1]
                self.streams[index] = stream.detach().clone()

            self.handles.append(norm.register_forward_hook(hook))

    def take(self) -> dict[int, Any]:
        streams, self.streams = self.streams, {}
        return streams


def match_aux(aux: list[Any], streams: dict[int, Any], atol: float = 1e-5) -> list[int | None]:
    """For each aux tensor, the layer whose output it equals (-1: embedding);
    None when it equals no layer's incoming stream."""
    import torch

    captured = []
    for tensor in aux:
        hits = [i for i in sorted(streams)
                if streams[i].shape == tensor.shape and torch.allclose(tensor, streams[i], atol=atol,
                                                                         rtol=1e-4)]
        captured.append(hits[0] - 1 if hits else None)
    return captured


class Case:
    """A built model plus pools and backend, ready to run paths."""

    def __init__(self, adapter: Adapter, family: Family, raw_config: dict[str, Any], device: str):
        import torch

        self.adapter, self.family, self.device = adapter, family, device
        self.notes: list[str] = []
        torch.manual_seed(0)
        torch.set_default_dtype(torch.float32)
        self.hf_config = build_hf_config(family, raw_config, device)
        self.text = text_config(family, self.hf_config)
        self.reference_config = copy.deepcopy(self.text)
        self.layers_n = self.text.num_hidden_layers
        self.hidden = self.text.hidden_size
        adapter.init_dp_attention(self.text)  # 0.5.6: MoE and MLA layers read it
        if family.mla:
            adapter.deepseek_mla_under_torch_native()
        import importlib

        module = importlib.import_module(f"sglang.srt.models.{family.module}")
        self.entry_cls = getattr(module, family.entries[0])
        with torch.device(device):
            self.model = self.entry_cls(self.hf_config, quant_config=None).eval()
        adapter.after_build(self.model)
        self._load_weights()
        self.layers = resolve_attr(self.model, family.layers_path)
        self.recorder = StreamRecorder(self.layers)
        self._make_pools()

    # -- weights ------------------------------------------------------------
    def _load_weights(self) -> None:
        import torch
        import transformers

        self.reference = None
        if self.family.hf_model:
            try:
                cls = getattr(transformers, self.family.hf_model)
                # SGLang edits some config dicts in place (DeepSeek's rope): the
                # reference gets its own copy of the config
                ref = cls(copy.deepcopy(self.reference_config)).eval().to(self.device)
                items = split_packed_experts(ref.state_dict().items(), self.family.split_experts)
                prefix = self.family.hf_prefix
                self.model.load_weights([(prefix + k, v) for k, v in items])
                self.reference = ref
                return
            except Exception as exc:  # recorded, then random weights
                self.notes.append(f"reference weights not loadable ({type(exc).__name__}: {exc}); "
                                  "random weights, no per-layer reference check")
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                if param.dim() == 1 and "norm" in name:
                    param.copy_(1 + 0.1 * torch.randn_like(param))
                else:
                    param.copy_(0.05 * torch.randn_like(param))

    # -- pools --------------------------------------------------------------
    def _make_pools(self) -> None:
        import torch
        from sglang.srt.mem_cache import memory_pool as mp

        self.req_pool = mp.ReqToTokenPool(size=4, max_context_len=MAX_CONTEXT, device=self.device,
                                          enable_memory_saver=False)
        common = dict(size=SPARE_LOC + 1, page_size=1, dtype=torch.float32,
                      layer_num=self.layers_n, device=self.device, enable_memory_saver=False,
                      enable_alt_stream=False)
        if self.family.mla:
            common.update(kv_lora_rank=self.text.kv_lora_rank,
                          qk_rope_head_dim=self.text.qk_rope_head_dim)
            self.kv_pool = mp.MLATokenToKVPool(**_kwargs_for(mp.MLATokenToKVPool.__init__, **common))
        else:
            head_dim = getattr(self.text, "head_dim", None) or (
                self.hidden // self.text.num_attention_heads)
            common.update(head_num=self.text.num_key_value_heads, head_dim=head_dim)
            self.kv_pool = mp.MHATokenToKVPool(**_kwargs_for(mp.MHATokenToKVPool.__init__, **common))
        self.backend = self.adapter.attention_backend(self.req_pool, self.kv_pool,
                                                      graph_safe=self.device == "cuda")
        # the same prompt for every path
        gen = torch.Generator().manual_seed(1)
        self.prompt = torch.randint(0, self.text.vocab_size, (PROMPT_LEN + 1,), generator=gen)
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
            fields = dict(forward_mode=ForwardMode.EXTEND, batch_size=1, input_ids=ids,
                          req_pool_indices=torch.tensor([REQ], device=dev),
                          seq_lens=torch.tensor([S], device=dev), seq_lens_cpu=torch.tensor([S]),
                          out_cache_loc=torch.arange(1, S + 1, device=dev), seq_lens_sum=S,
                          positions=torch.arange(S, device=dev),
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
                              positions=torch.tensor([S], device=dev))
            fields = dict(forward_mode=ForwardMode.DECODE, batch_size=1,
                          req_pool_indices=torch.tensor([REQ], device=dev),
                          seq_lens_cpu=torch.tensor([S + 1]), seq_lens_sum=S + 1, **static)
        fields["capture_hidden_mode"] = CaptureHiddenMode.FULL
        fb = self.adapter.forward_batch(**fields)
        return fb

    def _forward(self, fb):
        import torch

        self.backend.init_forward_metadata(fb)
        with torch.no_grad(), self.adapter.attention_scope(self.backend, fb):
            return self.model(fb.input_ids, fb.positions, fb)

    def _aux_of(self, out) -> list[Any]:
        hidden = getattr(out, "hidden_states", None)
        if hidden is None:
            return []
        if isinstance(hidden, (list, tuple)):
            return list(hidden)
        if hidden.shape[-1] % self.hidden:
            return [hidden]
        return list(hidden.split(self.hidden, dim=-1))

    def _path_result(self, out, streams, extra=None) -> dict[str, Any]:
        aux = self._aux_of(out)
        captured = match_aux(aux, streams)
        result = {"aux_count": len(aux), "captured": captured}
        if self.reference is not None and extra is not None:
            result["max_diff_vs_transformers"] = extra
        return result

    def _reference_check(self, streams, upto: int) -> float | None:
        """Largest difference between SGLang's per-layer stream and
        transformers' hidden_states, for the last token row."""
        import torch

        if self.reference is None:
            return None
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
            worst = max(worst, float((stream[-1] - ref[i][0, -1]).abs().max()))
        return worst

    # -- paths ----------------------------------------------------------------
    def set_ids(self, ids) -> None:
        self.model.set_eagle3_layers_to_capture(ids)

    def layers_to_capture(self):
        inner = resolve_attr(self.model, self.family.layers_path.rsplit(".", 1)[0])
        value = getattr(inner, "layers_to_capture", None)
        flagged = [i for i, layer in enumerate(self.layers)
                   if getattr(layer, "_is_layer_to_capture", False)]
        return {"layers_to_capture": list(value) if value is not None else None,
                "flagged_layers": flagged or None}

    def run_extend(self) -> dict[str, Any]:
        self.recorder.take()
        out = self._forward(self._batch("extend"))
        streams = self.recorder.take()
        return self._path_result(out, streams, self._reference_check(streams, PROMPT_LEN))

    def run_decode(self) -> dict[str, Any]:
        self.recorder.take()
        out = self._forward(self._batch("decode"))
        streams = self.recorder.take()
        self.decode_streams = streams
        return self._path_result(out, streams, self._reference_check(streams, PROMPT_LEN + 1))

    def capture_graph(self) -> None:
        """Capture the decode forward into a CUDA graph on static buffers, the
        way a decode graph runner does at start-up (before any request)."""
        import torch

        dev = self.device
        self.static = dict(input_ids=torch.zeros(1, dtype=torch.long, device=dev),
                           seq_lens=torch.ones(1, dtype=torch.long, device=dev),
                           out_cache_loc=torch.tensor([SPARE_LOC], device=dev),
                           positions=torch.zeros(1, dtype=torch.long, device=dev))
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
        self.graph_streams = self.recorder.take()
        torch.cuda.synchronize()

    def run_graph_replay(self) -> dict[str, Any]:
        import torch

        S = PROMPT_LEN
        self.static["input_ids"].copy_(self.prompt[S:S + 1].to(self.device))
        self.static["seq_lens"].fill_(S + 1)
        self.static["out_cache_loc"].fill_(S + 1)
        self.static["positions"].fill_(S)
        self.graph.replay()
        torch.cuda.synchronize()
        result = self._path_result(self.graph_out, self.graph_streams,
                                   self._reference_check(self.graph_streams, S + 1))
        if getattr(self, "decode_streams", None):
            result["max_diff_vs_eager_decode"] = max(
                float((self.graph_streams[i] - self.decode_streams[i]).abs().max())
                for i in self.graph_streams)
        return result


def _guard(fn, *args):
    try:
        return fn(*args)
    except stubs.StubCalled as exc:
        return {"error": f"StubCalled: {exc}"}
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        where = next((f"{f.filename}:{f.lineno}" for f in reversed(tb) if "sglang" in f.filename), "")
        inner = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        return {"error": f"{type(exc).__name__}: {exc}"[:400], "at": where, "innermost": inner}


def run_case(adapter: Adapter, family: Family, raw_config: dict[str, Any], runner_ids,
             device: str, want_graph: bool) -> dict[str, Any]:
    """Build once, call setters in the runner's order, run every path."""
    started = time.time()
    result: dict[str, Any] = {"paths": {}, "setter_calls": []}
    case = _guard(Case, adapter, family, raw_config, device)
    if isinstance(case, dict):  # the model could not be built: say why
        result.update(case)
        return result
    result["num_hidden_layers"] = case.layers_n
    result["notes"] = case.notes
    graph = want_graph and device == "cuda"
    # The runner's setter calls, in its order, on every device: a release
    # whose graph runner calls the setter without ids does so at start-up
    # whether or not a graph is then captured here.
    for step in adapter.setter_order():
        call = step["call"]
        if call.startswith("capture"):
            if graph:
                outcome = _guard(case.capture_graph)
                state = outcome if isinstance(outcome, dict) else "captured"
            else:
                state = f"skipped (no CUDA graph on {device})" if device != "cuda" else "skipped"
        else:
            ids = None if "no ids" in call else runner_ids
            outcome = _guard(case.set_ids, ids)
            state = dict(case.layers_to_capture(), ids=ids)
            if isinstance(outcome, dict):
                state.update(outcome)
        result["setter_calls"].append(dict(step, result=state))
    result["paths"]["extend"] = _guard(case.run_extend)
    result["paths"]["decode"] = _guard(case.run_decode)
    if graph:
        captured = all(s["result"] == "captured" for s in result["setter_calls"]
                       if s["call"].startswith("capture"))
        result["paths"]["cuda_graph"] = (_guard(case.run_graph_replay) if captured else
                                         {"error": "graph capture failed (see setter_calls)"})
    result["seconds"] = round(time.time() - started, 2)
    return result
