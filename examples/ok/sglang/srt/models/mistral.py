"""Causal LM that inherits its setter from another module (tracer example)."""

from sglang.srt.models.llama import LlamaForCausalLM


class MistralForCausalLM(LlamaForCausalLM):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__(config, quant_config=quant_config, prefix=prefix)
        self.sliding_window = getattr(config, "sliding_window", None)


EntryClass = MistralForCausalLM
