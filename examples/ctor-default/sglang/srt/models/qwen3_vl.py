"""Qwen3-VL: the language model class is a constructor parameter (tracer example)."""

import logging
from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaModel

logger = logging.getLogger(__name__)


class Qwen3LLMModel(LlamaModel):
    pass


class Qwen3VLForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "", language_model_cls=Qwen3LLMModel) -> None:
        super().__init__()
        self.config = config
        self.model = language_model_cls(config)
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return hidden_states, aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: draft config names no layer ids; using defaults")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = Qwen3VLForConditionalGeneration
