"""Decoder + causal LM with its own setter; self.model from an overridable factory (tracer example)."""

import logging
from typing import List, Optional

import torch
from torch import nn

logger = logging.getLogger(__name__)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, layer_id: int = 0) -> None:
        super().__init__()
        self.mlp = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, positions, hidden_states, forward_batch, residual):
        residual = hidden_states if residual is None else hidden_states + residual
        return self.mlp(residual), residual


class LlamaModel(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = None
        aux_hidden_states = []
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = self.layers[i](
                positions, hidden_states, forward_batch, residual
            )
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.model = self._init_model(config, quant_config, prefix="model")
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False

    def _init_model(self, config, quant_config=None, prefix: str = ""):
        return LlamaModel(config)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.lm_head(hidden_states), aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: draft config names no layer ids; using defaults")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


class Phi3ForCausalLM(LlamaForCausalLM):
    pass


EntryClass = [LlamaForCausalLM, Phi3ForCausalLM]
