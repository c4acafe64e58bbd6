"""DeepseekV32ForCausalLM on ROCm (example): the same shape."""

from torch import nn

from vllm.model_executor.models.interfaces import EagleModelMixin, SupportsEagle3


class DeepseekV32Model(nn.Module, EagleModelMixin):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            hidden_states = layer(hidden_states)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, None)
        return hidden_states, aux_hidden_states


class DeepseekV32ForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = DeepseekV32Model(config)

    def forward(self, hidden_states):
        return self.model(hidden_states)
