"""A getter that returns the vision tower, not the language model (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM
from sglang.srt.models.vision import VisionTower


class Glm4vForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.visual = VisionTower(config.vision_config)
        self.language_model = LlamaForCausalLM(config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def get_encoder(self):
        return self.visual

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.get_encoder().set_eagle3_layers_to_capture(layer_ids)  # expect: broken-delegation


EntryClass = Glm4vForConditionalGeneration
