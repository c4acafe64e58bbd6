"""Base of the Transformers backend (example, cut down from vLLM 0.33.0 transformers/base.py):
the ids become output-recording hooks of a transformers model built outside the tree."""

from torch import nn
from transformers import AutoModel

from vllm.model_executor.models.interfaces import SupportsEagle3


class Base(nn.Module, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = AutoModel.from_config(config)
        self._layer_names = {}
        self._output_aux_hidden_states_kwargs = {}

    def forward(self, input_ids):
        outputs = self.model(input_ids=input_ids, **self._output_aux_hidden_states_kwargs)
        hidden_states = outputs[0]
        if self._output_aux_hidden_states_kwargs:
            return hidden_states, list(outputs[1:])
        return hidden_states

    def set_aux_hidden_state_layers(self, layers):
        if self.model._can_record_outputs is None:
            self.model._can_record_outputs = {}  # expect: unresolved
        for layer in layers:
            layer_name = self._layer_names[layer - 1]
            layer_key = f"aux_hidden_state_{layer}"
            self.model._can_record_outputs[layer_key] = layer_name
            self._output_aux_hidden_states_kwargs[f"output_{layer_key}"] = True
