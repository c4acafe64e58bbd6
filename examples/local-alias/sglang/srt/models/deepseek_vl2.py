"""The delegate is reached through a local alias (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class DeepseekVL2ForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.language = LlamaForCausalLM(config.language_config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.language(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        language = self.language
        ids = list(layer_ids) if layer_ids is not None else None
        language.set_eagle3_layers_to_capture(ids)


EntryClass = DeepseekVL2ForCausalLM
