"""InternS1-Pro: a third class sets language_model_cls; the most derived default
decides (SGLang's InternS1-Pro -> Qwen3-VL-MoE -> Qwen3-VL) (tracer example)."""

from torch import nn

from sglang.srt.models.qwen3_vl_moe import Qwen3VLMoeForConditionalGeneration


class InternS1ProTextModel(nn.Module):
    """The language model InternS1-Pro really builds: it has its own state and loop."""

    def __init__(self, config) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(config.hidden_size, config.hidden_size)])
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = input_embeds
        aux_hidden_states = []
        for i, layer in enumerate(self.layers):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
        return hidden_states, aux_hidden_states


class InternS1ProForConditionalGeneration(Qwen3VLMoeForConditionalGeneration):
    def __init__(self, config, quant_config=None, prefix: str = "", language_model_cls=InternS1ProTextModel) -> None:
        super().__init__(config, quant_config, prefix, language_model_cls=language_model_cls)


EntryClass = InternS1ProForConditionalGeneration
