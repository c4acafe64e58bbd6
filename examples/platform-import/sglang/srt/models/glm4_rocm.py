"""The ROCm build of GLM-4: its wrapper delegates to a decoder without the setter (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaModel


class Glm4ForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.model.set_eagle3_layers_to_capture(layer_ids)  # expect: broken-delegation
