"""Wrapper that delegates to the decoder instead of the causal LM (tracer example).

self.language_model is a LlamaModel: it owns layers_to_capture but has no
set_eagle3_layers_to_capture (that lives on LlamaForCausalLM).
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaModel


class InternVLChatModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.mlp1 = nn.Linear(config.vision_config.hidden_size, config.llm_config.hidden_size)
        self.language_model = LlamaModel(config.llm_config)
        self.lm_head = nn.Linear(
            config.llm_config.hidden_size, config.llm_config.vocab_size, bias=False
        )
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.language_model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.mlp1(image_features).mean()
        hidden_states = self.language_model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.lm_head(hidden_states), aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        self.language_model.set_eagle3_layers_to_capture(layer_ids)  # expect: broken-delegation


EntryClass = InternVLChatModel
