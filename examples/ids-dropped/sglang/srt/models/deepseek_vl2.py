"""Wrapper that forwards a literal None instead of the ids (tracer example).

Passing None explicitly is the same as passing nothing: the inner setter's
fallback branch runs whatever the draft config says.
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.deepseek_v2 import DeepseekV2ForCausalLM


class DeepseekVL2ForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.projector = nn.Linear(
            config.vision_config.hidden_size, config.language_config.hidden_size
        )
        self.language = DeepseekV2ForCausalLM(config.language_config, quant_config)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.language.model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.projector(image_features).mean()
        return self.language(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.language.set_eagle3_layers_to_capture(None)  # expect: ids-dropped


EntryClass = DeepseekVL2ForCausalLM
