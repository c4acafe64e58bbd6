"""Gemma (example, vLLM 0.33.0 gemma4.py's shape): with kv_sharing_fast_prefill the forward
returns through fast_prefill_forward, which runs the layers without the capture helper."""

from itertools import islice

from torch import nn

from vllm.model_executor.models.interfaces import EagleModelMixin, SupportsEagle3


class GemmaModel(nn.Module, EagleModelMixin):
    def __init__(self, config, cache_config):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
        self.start_layer, self.end_layer = 0, config.num_hidden_layers
        self.fast_prefill_enabled = cache_config.kv_sharing_fast_prefill

    def fast_prefill_forward(self, hidden_states):
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(hidden_states, residual)
        return hidden_states

    def forward(self, hidden_states):
        if self.fast_prefill_enabled:  # expect: capture-skipped-on-branch
            hidden_states = self.fast_prefill_forward(hidden_states)
            return hidden_states
        # a guard that returns without running any layer is no skipped branch
        if hidden_states is None:
            return hidden_states
        residual = None
        aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)
        for layer_idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
            hidden_states, residual = layer(hidden_states, residual)
            self._maybe_add_hidden_state(aux_hidden_states, layer_idx + 1, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class GemmaForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, config, cache_config):
        super().__init__()
        self.config = config
        self.model = GemmaModel(config, cache_config)

    def forward(self, hidden_states):
        return self.model(hidden_states)
