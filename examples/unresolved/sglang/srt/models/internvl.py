"""Wrapper whose language model class is fetched with getattr (tracer example).

The module and class names come from the checkpoint config at run time.
"""

import importlib
from typing import List, Optional

import torch
from torch import nn


class InternVLChatModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.mlp1 = nn.Linear(config.vision_config.hidden_size, config.llm_config.hidden_size)
        llm_arch = config.llm_config.architectures[0]
        llm_module = importlib.import_module(f"sglang.srt.models.{config.llm_module}")
        self.language_model = getattr(llm_module, llm_arch)(config.llm_config, quant_config)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.language_model.model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.mlp1(image_features).mean()
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)  # expect: unresolved


EntryClass = InternVLChatModel
