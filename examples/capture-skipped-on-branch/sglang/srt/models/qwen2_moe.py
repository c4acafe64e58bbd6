"""Qwen2-MoE shape of SGLang 0.5.23 (qwen2_moe.py:1179): the two-batch-overlap path
runs the layers through model_forward_stages and captures nothing."""
import logging

from torch import nn

logger = logging.getLogger(__name__)

class Qwen2MoeModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
        self.layers_to_capture = []

    def forward(self, hidden_states, forward_batch):
        aux_hidden_states = []
        if forward_batch.can_run_tbo:  # expect: capture-skipped-on-branch
            hidden_states = model_forward_stages(layers=self.layers, hidden_states=hidden_states)
        else:
            for i in range(len(self.layers)):
                if i in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states)
                hidden_states = self.layers[i](hidden_states)
        return hidden_states, aux_hidden_states

class Qwen2MoeForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = Qwen2MoeModel(config)
        self.capture_aux_hidden_states = False

    def forward(self, hidden_states):
        hidden_states, aux_hidden_states = self.model(hidden_states)
        if self.capture_aux_hidden_states:
            return hidden_states, aux_hidden_states
        return hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("no layer ids given; capturing the default layers")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = Qwen2MoeForCausalLM
