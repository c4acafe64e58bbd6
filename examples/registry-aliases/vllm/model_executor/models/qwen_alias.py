"""An alias module (example): the registered class is another module's, renamed on import."""

from vllm.model_executor.models.qwen_impl import QwenImplForCausalLM as QwenAliasForCausalLM

__all__ = ["QwenAliasForCausalLM"]
