"""Subclass that overrides the wrapper's language_model_cls default (tracer example)."""

from torch import nn

from sglang.srt.models.qwen3_vl import Qwen3VLForConditionalGeneration


class Qwen3MoeSparseBlock(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.experts = nn.ModuleList(
            [nn.Linear(config.hidden_size, config.hidden_size) for _ in range(4)]
        )

    def forward(self, hidden_states):
        return sum(expert(hidden_states) for expert in self.experts)


class Qwen3MoeLLMModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [Qwen3MoeSparseBlock(config) for _ in range(config.num_hidden_layers)]
        )
        # For EAGLE3 support
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        aux_hidden_states = []
        for layer_idx, layer in enumerate(self.layers):
            if layer_idx in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = hidden_states + layer(hidden_states)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class Qwen3VLMoeForConditionalGeneration(Qwen3VLForConditionalGeneration):
    def __init__(
        self, config, quant_config=None, prefix: str = "", language_model_cls=Qwen3MoeLLMModel
    ):
        super().__init__(config, quant_config, prefix, language_model_cls)


EntryClass = Qwen3VLMoeForConditionalGeneration
