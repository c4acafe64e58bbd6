"""A diamond of bases where two define the setter: Python's C3 order decides which
one runs (tracer example). MRO of DiamondForCausalLM: DiamondForCausalLM, MixedBase,
CaptureMixin, VisionMixin. A depth-first order would pick VisionMixin's setter, which
delegates to a vision tower this class does not have."""

import logging
from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaModel

logger = logging.getLogger(__name__)


class CaptureMixin(nn.Module):
    """The setter that runs for DiamondForCausalLM."""

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("EAGLE3: draft config names no layer ids; using defaults")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


class VisionMixin(nn.Module):
    """A setter for a vision tower: never runs for DiamondForCausalLM (C3 puts it last)."""

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.vision_tower.set_eagle3_layers_to_capture(layer_ids)


class MixedBase(CaptureMixin, VisionMixin):
    pass


class DiamondForCausalLM(MixedBase, CaptureMixin):
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


EntryClass = DiamondForCausalLM
