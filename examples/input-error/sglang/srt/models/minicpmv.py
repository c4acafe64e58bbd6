"""Wrapper around a class defined in a file that does not parse (tracer example).

BaichuanForCausalLM lives in baichuan.py, which has a syntax error: the
delegating call cannot be typed, so this model is unknown, not ok.
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.baichuan import BaichuanForCausalLM


class MiniCPMV(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.resampler = nn.Linear(config.vision_config.hidden_size, config.hidden_size)
        self.llm = BaichuanForCausalLM(config, quant_config, prefix="llm")

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.llm.model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.resampler(image_features).mean()
        return self.llm(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.llm.set_eagle3_layers_to_capture(layer_ids)  # expect: unresolved


EntryClass = MiniCPMV
