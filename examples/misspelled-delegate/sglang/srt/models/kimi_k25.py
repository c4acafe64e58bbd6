"""Kimi-K2.5 wrapper whose delegate call is one letter off, as in SGLang 0.5.23 (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class KimiK25ForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.language_model = LlamaForCausalLM(config.text_config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        # LlamaForCausalLM has set_eagle3_layers_to_capture: this is an AttributeError at start-up
        self.language_model.set_eagle3_layer_to_capture(layer_ids)  # expect: broken-delegation


EntryClass = KimiK25ForConditionalGeneration
