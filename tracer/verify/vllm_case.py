"""One vLLM entry class in one process: ``python -m tracer.verify.vllm_case``.

The class is built from a tiny config derived from the release (``derive.py``:
the class defaults of the config class transformers or vLLM map the
architecture to, sizes shrunk), written as ``config.json`` and read back
through vLLM's own ``ModelConfig``; built by ``initialize_model`` under the
release's ``VllmConfig`` (eager, ``custom_ops=["none"]``), with random weights
and ``process_weights_after_loading`` as vLLM's dummy loader does. Then, as
``GPUModelRunner.load_model`` does, the ids the runner passes (the draft's
``eagle_aux_hidden_state_layer_ids``, else the model's
``get_eagle3_default_aux_hidden_state_layers()``) go to
``model.set_aux_hidden_state_layers``, and three paths run:

* ``extend``: an eager prefill of a 6-token prompt;
* ``decode``: one eager decode step after it;
* ``cuda_graph`` (CUDA): that decode step captured after the setter call (the
  runner captures in ``capture_model``, after ``load_model``) and replayed;
  through vLLM's own ``CUDAGraphWrapper`` (FULL mode) when it works here,
  else ``torch.cuda.graph``; the record says which.

Each aux tensor is matched to the stream a decoder-layer call receives
(``harness.StreamRecorder``); runtime ids are in vLLM's convention: id i is the
input of layer i (0 the embedding, L the stream after the last layer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from typing import Any

from . import vllm_env

PROMPT = [11, 27, 35, 48, 52, 61]
DECODE_TOKEN = 73


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text[:limit]


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if "/vllm/" in frame.filename:
            return f"{frame.filename.split('/vllm/', 1)[1]}:{frame.lineno}"
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def error_of(exc: BaseException) -> dict[str, Any]:
    return {"error": _short(exc), "at": "vllm/" + _where(exc) if _where(exc) and "/" in _where(exc) else _where(exc)}


def derive_config(entry_cls, arch: str, layers: int) -> tuple[dict[str, Any], dict[str, Any]]:
    from . import derive

    tiny, provenance = derive.derived_raw_config(entry_cls, layers, arch)
    text = derive.text_part(tiny)
    text.setdefault("max_position_embeddings", 512)
    for key, value in (("rope_theta", 10000.0), ("rms_norm_eps", 1e-6), ("tie_word_embeddings", False)):
        text.setdefault(key, value)
    return tiny, provenance


class Case:
    def __init__(self, release_root: str, entry: str, layers: int, device: str, port: int):
        self.root, self.entry, self.layers, self.device, self.port = release_root, entry, layers, device, port
        self.notes: list[str] = []
        self.config: dict[str, Any] = {}
        self.fixed_raw: dict[str, Any] | None = None

    def build(self):
        import importlib

        import torch

        from . import derive

        torch.manual_seed(0)
        torch.set_default_dtype(torch.float32)
        module, _, name = self.entry.rpartition(".")
        entry_cls = getattr(importlib.import_module(module), name)
        if self.fixed_raw is not None:  # a retry with filled fields
            tiny, provenance = self.fixed_raw, {k: v for k, v in self.config.items() if k != "raw"}
        else:
            tiny, provenance = derive_config(entry_cls, name, self.layers)
        self.config = {"raw": tiny, **{k: v for k, v in provenance.items() if k != "notes"}}
        self.notes.extend(provenance.get("notes", []))
        folder = tempfile.mkdtemp(prefix="tracer-verify-vllm-")
        with open(os.path.join(folder, "config.json"), "w") as fh:
            json.dump(tiny, fh, indent=1, default=str)
        from vllm.config import (
            CompilationConfig,
            DeviceConfig,
            LoadConfig,
            ModelConfig,
            VllmConfig,
            set_current_vllm_config,
        )

        mc = ModelConfig(model=folder, tokenizer=folder, skip_tokenizer_init=True, dtype="float32",
                         enforce_eager=True, max_model_len=vllm_env.MAX_SLOTS, trust_remote_code=False)
        self.vllm_config = VllmConfig(model_config=mc, device_config=DeviceConfig(device=self.device),
                                      compilation_config=CompilationConfig(mode=0, custom_ops=["none"]),
                                      load_config=LoadConfig(load_format="dummy"))
        text = mc.hf_text_config
        self.config["loaded_by"] = f"vllm ModelConfig(config.json): {type(mc.hf_config).__name__}"
        want = derive.text_part(tiny).get("hidden_size")
        if want is not None and getattr(text, "hidden_size", want) != want:
            raise derive.DeriveError(f"the release read the config back unshrunk (hidden_size "
                                     f"{getattr(text, 'hidden_size', None)}, written {want})")
        self.num_layers = int(getattr(text, "num_hidden_layers"))
        self.hidden = int(text.hidden_size)
        self._ctx = set_current_vllm_config(self.vllm_config)
        self._ctx.__enter__()
        self._init_distributed()
        from vllm.model_executor.model_loader.utils import initialize_model

        with torch.device(self.device):
            model = initialize_model(vllm_config=self.vllm_config, model_class=entry_cls)
        model.eval()
        self._dummy_weights(model, mc)
        self.model = model
        self.layers_path, self.decoder_layers = derive.find_decoder_layers(model, self.num_layers)
        owner_path = self.layers_path.rsplit(".", 1)[0] if "." in self.layers_path else ""
        owner = model.get_submodule(owner_path) if owner_path else model
        self.final_norm = getattr(owner, "norm", None) or getattr(owner, "final_layernorm", None)
        return model

    def _init_distributed(self) -> None:
        from vllm.distributed import parallel_state as ps

        if ps.model_parallel_is_initialized():
            return
        ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                        distributed_init_method=f"tcp://127.0.0.1:{self.port}")
        ps.initialize_model_parallel(1, 1)

    def _dummy_weights(self, model, mc) -> None:
        import torch

        from .harness import randomize

        randomize(model)  # seeded normal draws (norm weights around 1): layers' streams differ clearly
        try:
            from vllm.model_executor.model_loader.utils import process_weights_after_loading

            process_weights_after_loading(model, mc, torch.device(self.device))
        except Exception as exc:
            self.notes.append(f"process_weights_after_loading failed: {_short(exc, 160)}")

    # -- the runner's setter call ------------------------------------------------

    def set_ids(self, ids) -> dict[str, Any]:
        from vllm.model_executor.models.interfaces import supports_eagle3

        out: dict[str, Any] = {"supports_eagle3": bool(supports_eagle3(self.model))}
        try:
            layers = tuple(ids) if ids else tuple(self.model.get_eagle3_default_aux_hidden_state_layers())
        except Exception as exc:
            out.update(call="get_eagle3_default_aux_hidden_state_layers()", result=error_of(exc))
            return out
        out["passed"] = list(layers)
        out["call"] = f"set_aux_hidden_state_layers({tuple(layers)})"
        try:
            self.model.set_aux_hidden_state_layers(layers)
            out["result"] = "ok"
        except Exception as exc:
            out["result"] = error_of(exc)
        return out

    # -- forwards ------------------------------------------------------------------

    def _forward(self, input_ids, positions):
        from vllm.forward_context import set_forward_context

        vllm_env.CTX.positions = positions
        with set_forward_context(None, self.vllm_config):
            return self.model(input_ids=input_ids, positions=positions)

    @staticmethod
    def aux_of(out) -> list[Any]:
        import torch

        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (list, tuple)):
            return list(out[1])
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], torch.Tensor) and out[1].dim() == 2:
            return [out[1]]
        return []

    def _recorded(self, input_ids, positions):
        from .harness import StreamRecorder

        rec = StreamRecorder(self.decoder_layers, self.final_norm)
        try:
            out = self._forward(input_ids, positions)
        finally:
            for handle in rec.handles:
                handle.remove()
        return out, rec.take()

    def _result(self, aux, sets) -> dict[str, Any]:
        from .harness import match_aux

        captured, details = match_aux(aux, sets)
        ids = [None if c is None else c + 1 for c in captured]  # output of layer i-1 = input of layer i
        partial = [ids[i] for i, d in enumerate(details) if d and d.get("stream") == "unsummed"]
        result: dict[str, Any] = {"captured": ids, "aux_count": len(aux), "matched_by": details}
        if partial:
            result["partial"] = partial
        return result

    def run_extend(self) -> dict[str, Any]:
        import torch

        ids = torch.tensor(PROMPT, device=self.device)
        pos = torch.arange(len(PROMPT), device=self.device)
        with torch.no_grad():
            out, sets = self._recorded(ids, pos)
        return self._result(self.aux_of(out), sets)

    def run_decode(self) -> dict[str, Any]:
        import torch

        ids = torch.tensor([DECODE_TOKEN], device=self.device)
        pos = torch.tensor([len(PROMPT)], device=self.device)
        with torch.no_grad():
            out, sets = self._recorded(ids, pos)
        self._decode_sets = sets
        self._decode_aux = [a.detach().clone() for a in self.aux_of(out)]
        return self._result(self._decode_aux, sets)

    def run_graph(self) -> dict[str, Any]:
        """Capture the decode step (static buffers, as the runner's), replay it
        at the decode position, match its aux tensors to the eager decode's
        streams (same inputs, same KV slots)."""
        import torch

        static_ids = torch.tensor([DECODE_TOKEN], device=self.device)
        static_pos = torch.tensor([len(PROMPT)], device=self.device)
        how, out = None, None
        with torch.no_grad():
            for _ in range(2):  # warm-up, as the runner's dummy runs
                self._forward(static_ids, static_pos)
            torch.cuda.synchronize()
            try:
                out, how = self._graph_vllm(static_ids, static_pos)
            except Exception as exc:
                self.notes.append(f"vLLM CUDAGraphWrapper capture failed ({_short(exc, 200)}); "
                                  "torch.cuda.graph used")
                out, how = self._graph_torch(static_ids, static_pos)
            torch.cuda.synchronize()
        aux = [a.detach().clone() for a in self.aux_of(out)]
        result = self._result(aux, self._decode_sets)
        result["capture"] = how
        if self._decode_aux and len(self._decode_aux) == len(aux):
            result["max_diff_vs_eager_decode"] = max(
                float((a.float() - b.float()).abs().max()) for a, b in zip(aux, self._decode_aux))
        return result

    def _graph_torch(self, ids, pos):
        import torch

        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            with torch.cuda.graph(graph, stream=stream):
                out = self._forward(ids, pos)
        torch.cuda.current_stream().wait_stream(stream)
        self._graph = graph
        graph.replay()
        return out, "torch.cuda.graph (capture, then replay)"

    def _graph_vllm(self, ids, pos):
        from vllm.compilation.cuda_graph import CUDAGraphWrapper
        from vllm.config import CUDAGraphMode
        from vllm.forward_context import BatchDescriptor, set_forward_context

        wrapper = CUDAGraphWrapper(self.model, self.vllm_config, runtime_mode=CUDAGraphMode.FULL)
        desc = BatchDescriptor(num_tokens=1)
        vllm_env.CTX.positions = pos
        import torch

        outs = []
        side = torch.cuda.Stream()  # the runner captures inside graph_capture(), on a side stream
        for step in range(2):  # the first call captures, the second replays
            stream = side if step == 0 else torch.cuda.current_stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream), set_forward_context(
                    None, self.vllm_config, cudagraph_runtime_mode=CUDAGraphMode.FULL, batch_descriptor=desc):
                outs.append(wrapper(input_ids=ids, positions=pos))
            torch.cuda.current_stream().wait_stream(stream)
            torch.cuda.synchronize()
        if not wrapper.concrete_cudagraph_entries or all(
                e.cudagraph is None for e in wrapper.concrete_cudagraph_entries.values()):
            raise RuntimeError("CUDAGraphWrapper captured no graph")
        return outs[1], "vllm.compilation.cuda_graph.CUDAGraphWrapper (CUDAGraphMode.FULL: capture, then replay)"


# Fields real checkpoints carry, the class reads, and its config class's defaults
# lack: filled (and listed in the row) when the build names one as missing.
FILLS: dict[str, Any] = {"n_layer": "num_hidden_layers", "use_mup": False, "score_func": "sigmoid",
                         "rotary_dim": 16, "max_window_layers": "num_hidden_layers",
                         "hybrid_layer_pattern": "zeros", "route_scale": 1.0, "n_group": 1, "topk_group": 1}


def _fill(case: Case, exc: BaseException) -> bool:
    import re

    from . import derive

    match = re.search(r"object has no attribute '(\w+)'", str(exc))
    if not (isinstance(exc, AttributeError) and match and match.group(1) in FILLS and case.config.get("raw")):
        return False
    key = match.group(1)
    text = derive.text_part(case.config["raw"])
    if key in text:
        return False
    value = FILLS[key]
    layers = int(text.get("num_hidden_layers") or case.layers)
    text[key] = layers if value == "num_hidden_layers" else [0] * layers if value == "zeros" else value
    case.notes.append(f"config field {key} filled with {text[key]!r} (the class reads it, the defaults lack it)")
    case.fixed_raw = case.config["raw"]
    return True


def run_one(root: str, entry: str, layers: int, device: str, ids, graph: bool, port: int) -> dict[str, Any]:
    case = Case(root, entry, layers, device, port)
    record: dict[str, Any] = {"notes": case.notes}
    for attempt in range(5):
        try:
            case.build()
            break
        except Exception as exc:
            if attempt < 4 and _fill(case, exc):
                continue
            record.update(error_of(exc), stage="build", config=case.config or None)
            record["trace"] = traceback.format_exc()[-2500:]
            return record
    record.update(config=case.config, layers_path=case.layers_path, num_hidden_layers=case.num_layers)
    record["setter_calls"] = [case.set_ids(ids)]
    paths: dict[str, Any] = {}
    runs = [("extend", case.run_extend), ("decode", case.run_decode)]
    if graph:
        runs.append(("cuda_graph", case.run_graph))
    for name, fn in runs:
        try:
            paths[name] = fn()
        except Exception as exc:
            paths[name] = error_of(exc)
            paths[name]["trace"] = traceback.format_exc()[-1500:]
            if name == "decode":
                break
    record["paths"] = paths
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracer.verify.vllm_case")
    parser.add_argument("--framework", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--entry", required=True, help="dotted qualname")
    parser.add_argument("--protocol", action="append", required=True, help="vllm-eagle3=IDS ('none': no ids)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--graph", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    started = time.time()
    vllm_env.prepare(args.framework, args.device)
    from . import stubs

    port = 20000 + os.getpid() % 20000
    with open(args.out, "a") as out:
        for spec in args.protocol:
            protocol, _, text = spec.partition("=")
            ids = None if text.strip().lower() in ("", "none") else [int(x) for x in text.split(",")]
            record = run_one(args.framework, args.entry, args.layers, args.device, ids, args.graph, port)
            record.update(entry=args.entry, protocol=protocol, runner_ids=ids, pid=os.getpid())
            if args.device == "cuda":
                import torch

                record["device_name"] = torch.cuda.get_device_name(0)
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()
            break  # one build per process (vLLM keeps process-wide config and parallel state)
        import vllm

        out.write(json.dumps({"done": True, "stubs": stubs.installed(), "patches": vllm_env.PATCHES,
                              "stub_names_read": stubs.report(), "seconds": round(time.time() - started, 2),
                              "framework": {"root": args.framework, "version": vllm.__version__,
                                            "layout": "vllm"}}, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
