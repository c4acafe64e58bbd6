"""A wrapper reaching the delegate by getattr with a misspelt literal name (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class DeepseekVL2ForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.language = LlamaForCausalLM(config.language_config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.language(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        setter = getattr(self.language, "set_eagle3_layers_to_captures")  # expect: broken-delegation
        setter(layer_ids)


EntryClass = DeepseekVL2ForCausalLM
