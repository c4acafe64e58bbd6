"""Llama (example): one path through the layers, captured by the helper after each layer."""

from torch import nn

from vllm.model_executor.models.interfaces import EagleModelMixin, SupportsEagle3


class LlamaModel(nn.Module, EagleModelMixin):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states):
        residual = None
        aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)
        for idx, layer in enumerate(self.layers):
            hidden_states, residual = layer(hidden_states, residual)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class LlamaForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)

    def forward(self, hidden_states):
        return self.model(hidden_states)
