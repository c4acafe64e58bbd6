"""MiniMax: the class is imported per platform (tracer example). On CUDA, the
default, the chain works; the ROCm class has no setter, which is the ROCm build's
support matrix, not a break."""

from sglang.srt.utils import is_hip

if is_hip():
    from sglang.srt.models.minimax_rocm import MiniMaxForCausalLM
else:
    from sglang.srt.models.minimax_cuda import MiniMaxForCausalLM

EntryClass = MiniMaxForCausalLM
