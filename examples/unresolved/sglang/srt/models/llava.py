"""Wrapper whose language model class comes from the registry (tracer example).

self.language_model's class depends on the checkpoint's architectures list:
the delegating call cannot be typed, so the verdict is unknown, not ok.
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.registry import ModelRegistry


def build_language_model(text_config, quant_config=None) -> nn.Module:
    model_cls, _ = ModelRegistry.resolve_model_cls(text_config.architectures)
    return model_cls(text_config, quant_config=quant_config, prefix="language_model")


class LlavaForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.multi_modal_projector = nn.Linear(
            config.vision_config.hidden_size, config.text_config.hidden_size
        )
        self.language_model = build_language_model(config.text_config, quant_config)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.language_model.model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.multi_modal_projector(image_features).mean()
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)  # expect: unresolved


EntryClass = LlavaForConditionalGeneration
