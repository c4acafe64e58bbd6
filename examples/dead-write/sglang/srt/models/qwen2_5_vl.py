"""A redundant write of the output flag beside a working chain: must stay quiet (tracer example).

The shape sglang #8801 merged: Qwen2Model never reads capture_aux_hidden_states,
so setting it on self.model does nothing, but it breaks nothing either. The
flag on self and self.model.layers_to_capture are both live, so there is no
finding and the verdict is ok (as for the real 0.5.6 Qwen2.5-VL).
"""

import logging
from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.qwen2 import Qwen2Model

logger = logging.getLogger(__name__)


class Qwen2_5_VLForConditionalGeneration(nn.Module):
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
        self.model.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: no aux layer ids given; capturing defaults")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = Qwen2_5_VLForConditionalGeneration
