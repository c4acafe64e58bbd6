"""Causal LM whose MRO has no EAGLE-3 setter (tracer example).

The decoder can capture (it reads layers_to_capture), but neither
Llama4ForCausalLM nor its base class offers set_eagle3_layers_to_capture.
"""

import torch
from torch import nn

from sglang.srt.models.llama import LlamaDecoderLayer


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


class Llama4PreTrainedModel(nn.Module):
    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, loaded_weight in weights:
            params[name].data.copy_(loaded_weight)


class Llama4ForCausalLM(Llama4PreTrainedModel):  # expect: missing-setter
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.model = Llama4Model(config, quant_config, prefix="model")
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        return self.lm_head(hidden_states)


EntryClass = Llama4ForCausalLM
