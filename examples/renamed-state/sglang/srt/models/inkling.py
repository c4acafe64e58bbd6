"""Inkling (SGLang 0.5.23): the ids live in a private set of the inner model (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaDecoderLayer


class InklingCausalLLM(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        self._capture_layer_ids = set()

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self._capture_layer_ids = set(layer_ids or [])

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = None
        aux_hidden_states = [] if self._capture_layer_ids else None
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
            if aux_hidden_states is not None and layer.layer_id in self._capture_layer_ids:
                aux_hidden_states.append(hidden_states + residual)
        if aux_hidden_states is None:
            return hidden_states
        return hidden_states, aux_hidden_states


class InklingForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.llm = InklingCausalLLM(config.text_config)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.llm.set_eagle3_layers_to_capture(layer_ids)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.llm(input_ids, positions, forward_batch, input_embeds)


EntryClass = InklingForConditionalGeneration
