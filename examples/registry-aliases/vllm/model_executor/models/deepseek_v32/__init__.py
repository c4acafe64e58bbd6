"""DeepSeek-V3.2 (example): the registered name is an alias, bound per platform."""

from vllm.platforms import current_platform

if current_platform.is_rocm():
    from vllm.model_executor.models.llama import LlamaForCausalLM as GlmMoeDsaForCausalLM

    from .rocm.model import DeepseekV32ForCausalLM
else:
    from .nvidia.model import DeepseekV32ForCausalLM
    from .nvidia.model import DeepseekV32ForCausalLM as GlmMoeDsaForCausalLM

__all__ = ["DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"]
