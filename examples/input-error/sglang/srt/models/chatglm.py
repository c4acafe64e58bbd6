"""Causal LM saved in Latin-1, not UTF-8 (tracer example).

Maintainer: René (this byte is 0xE9: invalid UTF-8).
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaModel


class ChatGLMForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.transformer = LlamaModel(config)
        self.output_layer = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.transformer(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.output_layer(hidden_states), aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        self.transformer.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = ChatGLMForCausalLM
