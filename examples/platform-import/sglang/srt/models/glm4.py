"""GLM-4: the class is imported per platform (tracer example). The CUDA class
works; the ROCm class's delegation is broken, so the model is broken on ROCm."""

from sglang.srt.utils import is_hip

if is_hip():
    from sglang.srt.models.glm4_rocm import Glm4ForCausalLM
else:
    from sglang.srt.models.glm4_cuda import Glm4ForCausalLM

EntryClass = Glm4ForCausalLM
