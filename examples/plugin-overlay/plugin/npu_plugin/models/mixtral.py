"""Mixtral on the NPU (example): a rewrite that does not implement SupportsEagle3."""

from torch import nn


class NPUMixtralModel(nn.Module):
    def forward(self, hidden_states):
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states


class NPUMixtralForCausalLM(nn.Module):  # expect: missing-setter
    def __init__(self, config):
        super().__init__()
        self.model = NPUMixtralModel()

    def forward(self, hidden_states):
        return self.model(hidden_states)
