"""The delegate's setter is fetched with getattr and a literal name (tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class Phi4MMForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.language_model = LlamaForCausalLM(config)

    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        setter = getattr(self.language_model, "set_eagle3_layers_to_capture")
        setter(layer_ids)


EntryClass = Phi4MMForCausalLM
