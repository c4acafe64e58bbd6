"""Model registry (example, vLLM's shape): architecture -> (module, class)."""

_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "MixtralForCausalLM": ("mixtral", "MixtralForCausalLM"),
}

_MULTIMODAL_MODELS = {}

_SPECULATIVE_DECODING_MODELS = {}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_MULTIMODAL_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
}


class _ModelRegistry:
    def register_model(self, architecture, model_cls):
        """Plugins call this at start-up: the row replaces the built-in one."""


ModelRegistry = _ModelRegistry()
