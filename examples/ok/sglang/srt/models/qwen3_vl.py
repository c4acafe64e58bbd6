"""VLM whose inner model class is a constructor parameter (tracer example).

Qwen3-VL shape: __init__(..., language_model_cls=Qwen3LLMModel) builds
self.model = language_model_cls(...); the MoE subclass in qwen3_vl_moe.py
overrides the default. The setter writes self.model.layers_to_capture itself
unless the inner model has its own setter.
"""

import logging
from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaDecoderLayer

logger = logging.getLogger(__name__)


class Qwen3LLMModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = None
        aux_hidden_states = []
        for layer_idx, layer in enumerate(self.layers):
            if layer_idx in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class Qwen3VLForConditionalGeneration(nn.Module):
    def __init__(
        self, config, quant_config=None, prefix: str = "", language_model_cls=Qwen3LLMModel
    ) -> None:
        super().__init__()
        self.config = config.text_config
        self.visual = nn.Linear(config.vision_config.hidden_size, self.config.hidden_size)
        self.model = language_model_cls(
            config=self.config, quant_config=quant_config, prefix="model.language_model"
        )
        self.lm_head = nn.Linear(self.config.hidden_size, self.config.vocab_size, bias=False)
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
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: no aux layer ids given; capturing defaults")
            layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            layers_to_capture = [val + 1 for val in layer_ids]

        if hasattr(self.model, "set_eagle3_layers_to_capture"):
            self.model.set_eagle3_layers_to_capture(layers_to_capture)
        else:
            self.model.layers_to_capture = layers_to_capture


EntryClass = Qwen3VLForConditionalGeneration
