"""Model registry (example, vLLM 0.33.0's shape): architecture -> (module, class)."""

_TEXT_GENERATION_MODELS = {
    "GemmaForCausalLM": ("gemma", "GemmaForCausalLM"),
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
}

_MULTIMODAL_MODELS = {}

_SPECULATIVE_DECODING_MODELS = {
    # draft heads: the runner never calls the setter on a draft worker
    "FancyDraftModel": ("fancy_draft", "FancyDraftForCausalLM"),
    # a target registered here too stays a target
    "LlamaForCausalLMEagle3": ("llama", "LlamaForCausalLM"),
}

_TRANSFORMERS_SUPPORTED_MODELS = {
    "OlmoForCausalLM": ("transformers", "TransformersForCausalLM"),
}

_TRANSFORMERS_BACKEND_MODELS = {
    "TransformersForCausalLM": ("transformers", "TransformersForCausalLM"),
    # pooling models are never EAGLE-3 targets (exclude_patterns)
    "TransformersEmbeddingModel": ("transformers", "TransformersEmbeddingModel"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_MULTIMODAL_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
    **_TRANSFORMERS_SUPPORTED_MODELS,
    **_TRANSFORMERS_BACKEND_MODELS,
}
