"""Vision-language wrapper with no EAGLE-3 setter at all (tracer example).

The shape of Qwen2.5-VL before sglang #8801: the inner decoder can capture,
but nothing on the wrapper offers set_eagle3_layers_to_capture.
"""

import torch
from torch import nn

from sglang.srt.models.qwen2 import Qwen2Model


class Qwen2_5_VisionTransformer(nn.Module):
    def __init__(self, vision_config) -> None:
        super().__init__()
        self.proj = nn.Linear(vision_config.hidden_size, vision_config.out_hidden_size)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.proj(pixel_values)


class Qwen2_5_VLForConditionalGeneration(nn.Module):  # expect: missing-setter
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.visual = Qwen2_5_VisionTransformer(config.vision_config)
        self.model = Qwen2Model(config, quant_config=quant_config, prefix="model")
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, pixel_values=None):
        input_embeds = self.model.embed_tokens(input_ids)
        if pixel_values is not None:
            input_embeds = input_embeds + self.visual(pixel_values).mean()
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        return self.lm_head(hidden_states)


EntryClass = [Qwen2_5_VLForConditionalGeneration]
