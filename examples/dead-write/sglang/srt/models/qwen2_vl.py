"""Wrapper whose setter writes the state on itself, not on the decoder (tracer example).

Qwen2VLForConditionalGeneration never reads self.layers_to_capture; only the
inner Qwen2Model's forward loop does, and nobody writes that one.
"""

import logging
from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.qwen2 import Qwen2Model

logger = logging.getLogger(__name__)


class Qwen2VLForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.visual = nn.Linear(config.vision_config.hidden_size, config.hidden_size)
        self.model = Qwen2Model(config, quant_config=quant_config, prefix="model")
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, pixel_values=None):
        input_embeds = self.model.embed_tokens(input_ids)
        if pixel_values is not None:
            input_embeds = input_embeds + self.visual(pixel_values).mean()
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.lm_head(hidden_states), aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: no aux layer ids given; capturing defaults")
            layers = [2, num_layers // 2, num_layers - 3]
        else:
            layers = [val + 1 for val in layer_ids]
        self.layers_to_capture = layers  # expect: dead-write


EntryClass = Qwen2VLForConditionalGeneration
