"""Two defs of the setter in one class body; the second runs, as in SGLang 0.5.19-0.5.21's qwen3_5_text.py (tracer example)."""

import logging
from typing import List, Optional

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Qwen3_5DecoderLayer(nn.Module):
    def __init__(self, config, layer_id: int = 0) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.mlp = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, positions, hidden_states, forward_batch, residual):
        residual = hidden_states if residual is None else hidden_states + residual
        return self.mlp(residual), residual


class Qwen3_5Model(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [Qwen3_5DecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        # For EAGLE3 support
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


class Qwen3_5ForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.model = Qwen3_5Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        # For EAGLE3 support
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.lm_head(hidden_states), aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):  # expect: shadowed-setter
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: draft config names no layer ids; using defaults")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            if any(i < 0 or i >= self.config.num_hidden_layers for i in layer_ids):
                raise ValueError(f"layer ids out of range: {layer_ids}")
            self.model.layers_to_capture = [val + 1 for val in layer_ids]

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: draft config names no layer ids; using defaults")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = Qwen3_5ForCausalLM
