"""Two-level MoE setter that tags layers and never clears the tags (the real
sglang 0.5.6 qwen2_moe shape; tracer example). With a runner that calls the
setter twice (no ids during graph set-up, then the configured ids), the tags
of both calls add up."""

import logging
from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaDecoderLayer

logger = logging.getLogger(__name__)


class Qwen2MoeModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        # For EAGLE3 support
        self.layers_to_capture = []

    def set_eagle3_layers_to_capture(self, layers_to_capture: List[int]):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)  # expect: stale-layer-markers

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states, residual = input_embeds, None
        aux_hidden_states = []
        for layer in self.layers:
            if getattr(layer, "_is_layer_to_capture", False):
                aux_hidden_states.append(hidden_states)
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        return hidden_states, aux_hidden_states


class Qwen2MoeForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.model = Qwen2MoeModel(config, quant_config=quant_config, prefix="model")
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
            return hidden_states, aux_hidden_states
        return hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: no aux layer ids; using the default layers")
            self.model.set_eagle3_layers_to_capture([2, num_layers // 2, num_layers - 3])
        else:
            self.model.set_eagle3_layers_to_capture([val + 1 for val in layer_ids])


EntryClass = Qwen2MoeForCausalLM
