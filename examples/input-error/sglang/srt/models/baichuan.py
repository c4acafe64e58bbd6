# (input-error expected at the conflict marker, line 30: see EXPECT.toml)
"""Causal LM committed with merge-conflict markers: a syntax error (tracer example)."""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaModel


class BaichuanForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.lm_head(hidden_states), aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
<<<<<<< HEAD
        self.model.layers_to_capture = [val + 1 for val in layer_ids]
=======
        self.model.layers_to_capture = list(layer_ids)
>>>>>>> eagle3-offsets


EntryClass = BaichuanForCausalLM
