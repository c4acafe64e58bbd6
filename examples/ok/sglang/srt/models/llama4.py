"""Subclass that swaps the decoder through an overridden factory (tracer example).

Llama4ForCausalLM inherits LlamaForCausalLM's setter and __init__, but its
_init_model returns Llama4Model, so the state lives on Llama4Model.
"""

import torch
from torch import nn

from sglang.srt.models.llama import LlamaDecoderLayer, LlamaForCausalLM


class Llama4Model(nn.Module):
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
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = self.layers[i](
                positions, hidden_states, forward_batch, residual
            )
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class Llama4ForCausalLM(LlamaForCausalLM):
    def _init_model(self, config, quant_config=None, prefix: str = ""):
        return Llama4Model(config, quant_config=quant_config, prefix=prefix)


EntryClass = [Llama4ForCausalLM]
