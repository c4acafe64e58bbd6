"""Model registry (example, vLLM's shape): architecture -> (module, class).

Each row below names a class that its module binds another way than `class X:` (issue 26):
the package deepseek_v32 binds GlmMoeDsaForCausalLM with `import ... as` under a platform
`if`, qwen_alias with a plain `import ... as`, and lazy_models through a PEP 562 `__getattr__`.
"""

_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "DeepseekV32ForCausalLM": ("deepseek_v32", "DeepseekV32ForCausalLM"),
    "GlmMoeDsaForCausalLM": ("deepseek_v32", "GlmMoeDsaForCausalLM"),
    "QwenImplForCausalLM": ("qwen_impl", "QwenImplForCausalLM"),
    "QwenAliasForCausalLM": ("qwen_alias", "QwenAliasForCausalLM"),
    "LazyForCausalLM": ("lazy_models", "LazyForCausalLM"),
}

_MULTIMODAL_MODELS = {}

_SPECULATIVE_DECODING_MODELS = {}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_MULTIMODAL_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
}
