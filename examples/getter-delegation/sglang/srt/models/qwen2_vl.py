"""A wrapper that reaches its language model through a getter method (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM
from sglang.srt.models.vision import VisionTower


class Qwen2VLForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.visual = VisionTower(config.vision_config)
        self.language_model = LlamaForCausalLM(config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def get_language_model(self):
        return self.language_model

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.get_language_model().set_eagle3_layers_to_capture(layer_ids)


EntryClass = Qwen2VLForConditionalGeneration
