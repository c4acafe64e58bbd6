"""Per-release plumbing: everything the harness does around SGLang's model
code that changed between releases.

Two layouts are known:

* ``runtime-context`` (0.5.23 style): configuration is published through
  ``sglang.srt.runtime_context``; the attention backend and pools are found
  through ``forward_context(ForwardContext(attn_backend=...))``.
* ``batch-fields`` (0.5.6 style): configuration is a module global
  (``set_global_server_args_for_scheduler``); the backend and pools are
  fields of ``ForwardBatch``.

The layout is detected from the files of the release, never from its
version string alone, so a release between the two picks whichever plumbing
it really has. The model classes, their setters, loaders and capture loops
are never patched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

from . import build_fixes, stubs


class FrameworkNotFound(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Release:
    root: str  # the folder that holds the ``sglang`` package
    version: str
    layout: str  # "runtime-context" | "batch-fields"

    @property
    def srt(self) -> Path:
        return Path(self.root) / "sglang" / "srt"


def _read_version(pkg: Path) -> str:
    for name in ("_version.py", "version.py"):
        path = pkg / name
        if path.is_file():
            match = re.search(r"""^(?:__version__|version)\s*(?::\s*str\s*)?=\s*"""
                              r"""(?:__version__\s*=\s*|version\s*=\s*)*['"]([^'"]+)['"]""",
                              path.read_text(), re.MULTILINE)
            if match:
                return match.group(1)
    for meta in Path(pkg.parent).glob("sglang-*.dist-info/METADATA"):
        match = re.search(r"^Version: (\S+)", meta.read_text(), re.MULTILINE)
        if match:
            return match.group(1)
    return "unknown"


def locate(framework: str | None) -> Release:
    """Find the SGLang tree to run, without importing it."""
    if framework:
        path = Path(framework).resolve()
        if (path / "sglang" / "__init__.py").is_file():
            root = path
        elif (path / "__init__.py").is_file() and path.name == "sglang":
            root = path.parent
        elif (path / "python" / "sglang" / "__init__.py").is_file():  # a source checkout
            root = path / "python"
        else:
            raise FrameworkNotFound(f"no sglang package under {framework}")
    else:
        import importlib.util

        spec = importlib.util.find_spec("sglang")
        if spec is None or not spec.origin:
            raise FrameworkNotFound("sglang is not importable; pass --framework RELEASE_FOLDER")
        root = Path(spec.origin).parent.parent
    pkg = root / "sglang"
    srt = pkg / "srt"
    if (srt / "runtime_context.py").is_file() and (srt / "model_executor" / "forward_context.py").is_file():
        layout = "runtime-context"
    else:
        layout = "batch-fields"
    return Release(root=str(root), version=_read_version(pkg), layout=layout)


def _graph_safe_decode(base):
    """A subclass of SGLang's TorchNativeAttnBackend whose per-sequence decode
    loop reads a fixed number of KV slots under a length mask instead of
    slicing by a tensor length (a host sync, which CUDA-graph capture
    forbids). Cache writes, pools and every other method stay SGLang's."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    class GraphSafeTorchNativeAttnBackend(base):
        max_kv_len = 64

        def _run_sdpa_forward_decode(self, query, output, k_cache, v_cache, req_to_token,
                                     req_pool_indices, seq_lens, *rest, scaling=None,
                                     enable_gqa=False, causal=False, **kwargs):
            query = query.movedim(0, query.dim() - 2)  # [heads, tokens, dim]
            length = self.max_kv_len
            slots = torch.arange(length, device=query.device)
            for seq in range(seq_lens.shape[0]):
                tokens = req_to_token[req_pool_indices[seq:seq + 1], :length][0]
                key = k_cache[tokens].movedim(0, query.dim() - 2)
                value = v_cache[tokens].movedim(0, query.dim() - 2)
                mask = (slots < seq_lens[seq:seq + 1]).view(1, 1, length)
                q = query[:, seq:seq + 1, :]
                if not (q.dtype == key.dtype == value.dtype):
                    key, value = key.to(q.dtype), value.to(q.dtype)
                out = scaled_dot_product_attention(
                    q.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0), attn_mask=mask,
                    enable_gqa=enable_gqa, scale=scaling)
                output[seq:seq + 1] = out.squeeze(0).movedim(query.dim() - 2, 0)
            return output

    return GraphSafeTorchNativeAttnBackend


DROPPED_KWARGS: set = set()


def _extra_kwargs_dropped(base):
    """SGLang's TorchNativeAttnBackend with forward_extend / forward_decode
    accepting keyword arguments other backends take (GPT-OSS's attention
    ``sinks``, ...) and dropping them: the attention math then omits that term,
    which changes the numbers, never which layer's stream is captured. Each
    dropped name is recorded (and listed in the report's patches)."""
    import inspect

    known = {name for fn in (base.forward_extend, base.forward_decode)
             for name in inspect.signature(fn).parameters}

    class TorchNativeAttnBackendDroppingExtras(base):
        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            DROPPED_KWARGS.update(k for k in kwargs if k not in known)
            kwargs = {k: v for k, v in kwargs.items() if k in known}
            return super().forward_extend(q, k, v, layer, forward_batch, save_kv_cache, **kwargs)

        def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            DROPPED_KWARGS.update(k for k in kwargs if k not in known)
            kwargs = {k: v for k, v in kwargs.items() if k in known}
            return super().forward_decode(q, k, v, layer, forward_batch, save_kv_cache, **kwargs)

    return TorchNativeAttnBackendDroppingExtras


class Adapter:
    """What differs between releases. One instance per process: SGLang keeps
    process-wide singletons, so the environment is set up once."""

    layout = ""

    def __init__(self, release: Release, device: str):
        self.release = release
        self.device = device
        self.patches: list[str] = []
        self._mla_registered = False
        self.stubbed: list[str] = []

    # -- environment -----------------------------------------------------
    def stub_roots(self) -> list[str]:
        roots = list(stubs.DEFAULT_ROOTS)
        if self.device == "cuda":
            roots += stubs.CUDA_ROOTS
        return roots

    def prepare_process(self) -> None:
        # DeepSeek's MoE top-k is torch.compile'd; Dynamo's guards trip over
        # the triton stand-in now and then, so everything runs eager
        os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 2000))
        if self.device == "cpu":
            os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
        if self.release.root not in sys.path:
            sys.path.insert(0, self.release.root)
        self.stubbed = stubs.install(self.stub_roots())
        self._note(f"env TORCHDYNAMO_DISABLE={os.environ['TORCHDYNAMO_DISABLE']} (compiled "
                   "functions run eager)")

    def init_distributed(self) -> None:
        raise NotImplementedError

    # -- batches and backends -------------------------------------------
    def forward_batch(self, **fields):
        from sglang.srt.model_executor.forward_batch_info import ForwardBatch

        names = {f.name for f in dataclasses.fields(ForwardBatch)}
        return ForwardBatch(**{k: v for k, v in fields.items() if k in names})

    def attention_backend(self, req_pool, kv_pool, graph_safe: bool = False):
        from sglang.srt.layers.attention.torch_native_backend import (
            TorchNativeAttnBackend,
        )

        cls = _extra_kwargs_dropped(TorchNativeAttnBackend)
        if graph_safe:
            cls = _graph_safe_decode(cls)
        backend = cls(SimpleNamespace(device=self.device, req_to_token_pool=req_pool,
                                      token_to_kv_pool=kv_pool))
        # 0.5.6's backend keeps no pools (the batch carries them); keep them
        # here for attention_scope
        backend.req_to_token_pool = req_pool
        backend.token_to_kv_pool = kv_pool
        # the name a runner stamps on its backend; DeepSeek dispatches on it
        backend.prefill_attention_backend_str = "torch_native"
        backend.decode_attention_backend_str = "torch_native"
        return backend

    @contextlib.contextmanager
    def attention_scope(self, backend, forward_batch):
        """Make ``backend`` the one the model's attention layers find."""
        raise NotImplementedError
        yield

    # -- model-specific plumbing ----------------------------------------
    def deepseek_mla_under_torch_native(self) -> None:
        raise NotImplementedError

    def init_dp_attention(self, hf_config) -> None:
        pass

    def before_build(self) -> None:
        """Torch-native stand-ins for kernels the entry's modules refuse
        (build_fixes), installed once the entry is imported; each noted."""
        if self.layout != "runtime-context":
            return
        standin: list[str] = []
        if self.device == "cuda":
            build_fixes.install_moe_standin(standin)
        build_fixes.install_dsa_indexer_standin(standin)
        for note in standin:
            self._note(note)

    def after_build(self, model) -> None:
        """Adjust op dispatch on a built model (never its capture code).

        On CUDA, switch every fused op to its compile-safe forward with the
        release's own switch, the one SGLang applies before capturing CUDA
        graphs under torch.compile (``enter_torch_compile(num_tokens=1)``):
        native ops instead of sgl-kernel, and for MoE the graph-safe
        ``fused_moe_forward_native`` instead of a path that reads expert
        counts on the host."""
        if self.device != "cuda":
            return
        base = self._fused_op_base()
        switched = 0
        for module in model.modules():
            # a MoE layer's quant method is an op too, but not a child module
            for op in (module, getattr(module, "quant_method", None)):
                if isinstance(op, base):
                    op.enter_torch_compile(num_tokens=1)
                    switched += 1
                    compile_forward = getattr(op, "_forward_method", None)
                    native = getattr(op, "forward_native", None)
                    if compile_forward is not None and compile_forward != native:
                        # a forced backend (SGLANG_FORCE_FUSED_OP_BACKEND=torch)
                        # wins over the switch: make the op's "torch" path the
                        # compile-safe one (MoE: fused_moe_forward_native)
                        op.forward_native = compile_forward
        self._note(f"{base.__module__}.{base.__name__}.enter_torch_compile(num_tokens=1) on every op "
                   "(CUDA: SGLang's own compile-safe dispatch)")

    def _fused_op_base(self):
        raise NotImplementedError

    def setter_order(self, protocol: str = "sglang-eagle3") -> list[dict[str, object]]:
        """The setter calls around CUDA-graph capture, in the runner's order,
        each with the release line that makes it."""
        raise NotImplementedError

    def build_context(self, entry_cls, hf_config):
        """What the release's loader wraps a model's construction in."""
        return contextlib.nullcontext()

    def adjust_config(self, tiny: dict, notes: list) -> None:
        """Device- and release-specific config changes (each noted)."""
        from .derive import text_part

        text = text_part(tiny)
        rope_now = text.get("rope_scaling") or text.get("rope_parameters") or {}
        plain = not isinstance(rope_now, dict) or not rope_now.get("factor")
        # SGLang's CPU rope factory takes only deepseek_yarn for MLA models, and
        # 0.5.6's MLA rope reads rope_scaling["factor"]: both get yarn with
        # factor 1, which is plain rope (the same numbers)
        if text.get("kv_lora_rank") and (self.device == "cpu" or (self.layout == "batch-fields" and plain)):
            # SGLang's CPU rope factory takes only deepseek_yarn for MLA models;
            # yarn with factor 1 is plain rope (the same numbers)
            for key in ("rope_scaling", "rope_parameters"):
                rope = text.get(key)
                if isinstance(rope, dict) or key == "rope_scaling":
                    rope = dict(rope or {})
                    theta = rope.get("rope_theta", text.get("rope_theta", 10000.0))
                    rope.update(rope_type="yarn", factor=1.0, rope_theta=theta,
                                original_max_position_embeddings=rope.get(
                                    "original_max_position_embeddings", 256))
                    rope.pop("type", None)
                    text[key] = rope
            notes.append("MLA rope as yarn with factor 1 (= plain rope): SGLang's CPU rope factory takes "
                         "only deepseek_yarn, 0.5.6's MLA rope reads rope_scaling['factor']")

    def _note(self, patch: str) -> None:
        if patch not in self.patches:
            self.patches.append(patch)

    def _find_line(self, rel: str, pattern: str) -> str:
        path = self.release.srt / rel
        try:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(pattern, line):
                    return f"sglang/srt/{rel}:{number}"
        except OSError:
            pass
        return f"sglang/srt/{rel}:?"


class RuntimeContextAdapter(Adapter):
    layout = "runtime-context"

    def prepare_process(self) -> None:
        # every fused op (RMSNorm, SiluAndMul, rope, top-k) on forward_native
        os.environ.setdefault("SGLANG_FORCE_FUSED_OP_BACKEND", "torch")
        # the DSA indexer's torch paged-MQA-logits path instead of DeepGEMM (the
        # release's own switch; its model hook sets it where DeepGEMM lacks the kernel)
        os.environ.setdefault("SGLANG_FP8_PAGED_MQA_LOGITS_TORCH", "1")
        super().prepare_process()
        self._note("env SGLANG_FP8_PAGED_MQA_LOGITS_TORCH=1 (the DSA indexer's torch path, no DeepGEMM)")
        self._note("env SGLANG_FORCE_FUSED_OP_BACKEND="
                   f"{os.environ['SGLANG_FORCE_FUSED_OP_BACKEND']} (fused ops run forward_native)")
        if self.device == "cpu":
            # Without this a rope module on a platform that is neither CUDA
            # nor the sgl-kernel CPU engine imports vllm's CUDA rope kernel,
            # which only forward_cuda would call.
            import sglang.srt.layers.rotary_embedding.base as rope_base

            rope_base._is_cpu = True
            self.patches.append("sglang.srt.layers.rotary_embedding.base._is_cpu = True (CPU only)")

    def init_distributed(self) -> None:
        import torch.distributed as dist
        from sglang.srt import runtime_context
        from sglang.srt.distributed import parallel_state
        from sglang.srt.server_args import ServerArgs

        if not dist.is_initialized():
            parallel_state.init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                                        backend="gloo")
        runtime_context.reset_context()
        runtime_context.publish(
            ServerArgs(model_path="dummy", tp_size=1, ep_size=1, pp_size=1, device=self.device),
            role="test", ranks=runtime_context.SpawnRanks(world_rank=0))
        runtime_context.get_parallel().override_permanently(world_group=parallel_state._WORLD)
        graph = runtime_context.get_exec().graph
        if self.device == "cuda" and getattr(graph, "cuda_graph_config", 0) is None:
            # a real runner resolves this from the model; a dummy model path
            # leaves it None, and CUDA-only code (qk-norm) reads it
            from sglang.srt.model_executor.cuda_graph_config import (
                default_cuda_graph_config,
            )

            try:
                runtime_context.get_context().override(
                    "tracer-verify", cuda_graph_config=default_cuda_graph_config())
                self._note("exec.graph.cuda_graph_config = default_cuda_graph_config() (None "
                           "with a dummy model path; read by CUDA qk-norm)")
            except Exception as exc:
                self._note(f"could not set exec.graph.cuda_graph_config: {exc}")
        if not parallel_state.model_parallel_is_initialized():
            parallel_state.initialize_model_parallel(backend="gloo")

    def _fused_op_base(self):
        try:
            from sglang.kernels.fused_op import BaseFusedOp
        except ImportError:  # between the two layouts
            from sglang.srt.custom_op import CustomOp as BaseFusedOp
        return BaseFusedOp

    @contextlib.contextmanager
    def attention_scope(self, backend, forward_batch):
        import inspect

        from sglang.srt.model_executor.forward_context import (
            ForwardContext,
            forward_context,
        )

        if "forward_batch" in inspect.signature(forward_context).parameters:
            scope = forward_context(ForwardContext(attn_backend=backend), forward_batch=forward_batch)
        else:  # 0.5.21: forward_context(ctx) only
            scope = forward_context(ForwardContext(attn_backend=backend))
        with scope:
            yield

    def deepseek_mla_under_torch_native(self) -> None:
        if self._mla_registered:
            return
        self._mla_registered = True
        from sglang.srt.models.deepseek_common import (
            attention_backend_handler as handler,
        )

        handler.AttentionBackendRegistry.register(
            "torch_native", lambda attn, fb, *a: handler.AttnForwardMethod.MLA)
        self.patches.append("AttentionBackendRegistry.register('torch_native' -> MLA) (DeepSeek: "
                            "no torch_native handler; the triton fallback picks MHA prefill)")

    def setter_order(self, protocol: str = "sglang-eagle3"):
        setter = "set_dflash_layers_to_capture" if protocol == "sglang-dflash" else "set_eagle3_layers_to_capture"
        return [
            {"call": f"{setter}(draft ids)",
             "at": self._find_line("model_executor/model_runner_components/attention_backend_setup.py",
                                   rf"model\.{setter}\(")},
            {"call": "capture decode CUDA graph",
             "at": self._find_line("model_executor/model_runner.py", r"def init_cuda_graphs")},
        ]

    def build_context(self, entry_cls, hf_config):
        """0.5.23's _initialize_model builds under
        get_model().override(shared_experts=resolve_shared_experts_config(...))."""
        try:
            from sglang.srt.layers.moe.utils import resolve_shared_experts_config
            from sglang.srt.runtime_context import get_model

            shared = resolve_shared_experts_config(entry_cls, hf_config, None)
            return get_model().override(shared_experts=shared)
        except Exception:
            return contextlib.nullcontext()


class BatchFieldsAdapter(Adapter):
    layout = "batch-fields"

    def stub_roots(self):
        return super().stub_roots() + stubs.OLD_RELEASE_ROOTS

    def prepare_process(self) -> None:
        super().prepare_process()
        if self.device == "cuda" and "sgl_kernel" in self.stubbed:
            self._skip_fakes_of_missing_ops()
        if "vllm" in self.stubbed:
            # On a CPU without AMX, layers/activation.py and layers/layernorm.py
            # end with ``from vllm... import SiluAndMul, RMSNorm, ...``,
            # replacing SGLang's own classes; hand SGLang's classes back.
            stubs.hand_back("vllm.model_executor.layers.activation", "sglang.srt.layers.activation")
            stubs.hand_back("vllm.model_executor.layers.layernorm", "sglang.srt.layers.layernorm")
            self.patches.append("vllm stub hands back SGLang's own SiluAndMul/GeluAndMul/RMSNorm/"
                                "GemmaRMSNorm (their non-AMX fallback import)")

    def _skip_fakes_of_missing_ops(self) -> None:
        """0.5.6 registers torch.compile fakes for sgl_kernel ops at import
        (CUDA only); with sgl_kernel stubbed the ops do not exist. Skip those
        registrations: fakes serve torch.compile tracing, which is off."""
        import torch

        original = torch.library.register_fake

        def register_fake(op, *args, **kwargs):
            if isinstance(op, str) and op.startswith("sgl_kernel::"):
                namespace, name = op.split("::", 1)
                if not hasattr(getattr(torch.ops, namespace), name):
                    return lambda fn: fn
            return original(op, *args, **kwargs)

        torch.library.register_fake = register_fake
        self._note("torch.library.register_fake('sgl_kernel::*') skipped for ops the stubbed "
                   "sgl_kernel lacks (CUDA; fakes serve torch.compile only)")

    def init_distributed(self) -> None:
        import torch.distributed as dist
        from sglang.srt.distributed import parallel_state
        from sglang.srt.server_args import (
            ServerArgs,
            set_global_server_args_for_scheduler,
        )

        self.server_args = ServerArgs(model_path="dummy", device=self.device)
        set_global_server_args_for_scheduler(self.server_args)
        if not dist.is_initialized():
            parallel_state.init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                                        backend="gloo")
        if not parallel_state.model_parallel_is_initialized():
            parallel_state.initialize_model_parallel(backend="gloo")

    def init_dp_attention(self, hf_config) -> None:
        import torch
        from sglang.srt.layers.dp_attention import initialize_dp_attention

        if getattr(self, "_dp_attention_ready", False):
            return
        self._dp_attention_ready = True
        initialize_dp_attention(self.server_args, SimpleNamespace(
            hidden_size=hf_config.hidden_size, dtype=torch.float32))

    def _fused_op_base(self):
        from sglang.srt.custom_op import CustomOp

        return CustomOp

    @contextlib.contextmanager
    def attention_scope(self, backend, forward_batch):
        forward_batch.attn_backend = backend
        forward_batch.token_to_kv_pool = backend.token_to_kv_pool
        forward_batch.req_to_token_pool = backend.req_to_token_pool
        yield

    def deepseek_mla_under_torch_native(self) -> None:
        if self._mla_registered:
            return
        self._mla_registered = True
        from sglang.srt.models import deepseek_v2

        deepseek_v2.AttentionBackendRegistry.register(
            "torch_native", lambda attn, fb, *a: deepseek_v2.AttnForwardMethod.MLA)
        for field in ("attention_backend", "prefill_attention_backend", "decode_attention_backend"):
            setattr(self.server_args, field, "torch_native")  # the name DeepSeek dispatches on
        self.patches.append("AttentionBackendRegistry.register('torch_native' -> MLA) (DeepSeek)")

    def setter_order(self, protocol: str = "sglang-eagle3"):
        if protocol != "sglang-eagle3":
            return []  # this layout's runner knows EAGLE-3 only
        return [
            {"call": "set_eagle3_layers_to_capture()  (no ids: fallback)",
             "at": self._find_line("model_executor/cuda_graph_runner.py",
                                   r"set_eagle3_layers_to_capture\(\)")},
            {"call": "capture decode CUDA graph",
             "at": self._find_line("model_executor/cuda_graph_runner.py", r"self\.capture\(\)")},
            {"call": "set_eagle3_layers_to_capture(draft ids)",
             "at": self._find_line("model_executor/model_runner.py",
                                   r"set_eagle3_layers_to_capture\(eagle_aux")},
        ]


def adapter_for(release: Release, device: str) -> Adapter:
    cls = RuntimeContextAdapter if release.layout == "runtime-context" else BatchFieldsAdapter
    return cls(release, device)
