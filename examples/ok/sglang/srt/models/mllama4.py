"""hasattr-guarded delegation whose guard holds: must stay quiet (tracer example).

Same wrapper as broken-delegation/.../mllama4.py, but here Llama4ForCausalLM
inherits the setter from LlamaForCausalLM, so the call always runs.
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama4 import Llama4ForCausalLM


class Llama4ForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.multi_modal_projector = nn.Linear(
            config.vision_config.hidden_size, config.text_config.hidden_size
        )
        self.language_model = Llama4ForCausalLM(
            config.text_config, quant_config, prefix="language_model"
        )

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.language_model.model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.multi_modal_projector(image_features).mean()
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if hasattr(self.language_model, "set_eagle3_layers_to_capture"):
            self.language_model.set_eagle3_layers_to_capture(layer_ids)


EntryClass = Llama4ForConditionalGeneration
