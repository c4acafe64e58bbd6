"""Wrapper that calls the delegate's setter without the ids it was given (tracer example).

The chain resolves (DeepseekV3ForCausalLM inherits the setter), but the inner
setter always takes its layer_ids-is-None branch: the draft config is ignored.
"""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM


class K2VLMultiModalProjector(nn.Module):
    def __init__(self, vision_config) -> None:
        super().__init__()
        self.linear = nn.Linear(vision_config.hidden_size, vision_config.text_hidden_size)

    def forward(self, image_features: torch.Tensor) -> torch.Tensor:
        return self.linear(image_features)


class KimiK25ForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "", **kwargs) -> None:
        super().__init__()
        self.config = config
        self.mm_projector = K2VLMultiModalProjector(config.vision_config)

        self.language_model = None
        if not config.encoder_only:
            self.language_model = DeepseekV3ForCausalLM(
                config.text_config, quant_config, prefix="language_model"
            )

    def forward(self, input_ids, positions, forward_batch, image_features=None):
        input_embeds = self.language_model.model.embed_tokens(input_ids)
        if image_features is not None:
            input_embeds = input_embeds + self.mm_projector(image_features).mean()
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    def set_eagle3_layers_to_capture(
        self, layer_ids: Optional[List[int]] = None
    ) -> None:
        """Set the layers to capture for EAGLE3 speculative decoding."""
        if self.language_model is None or not hasattr(
            self.language_model, "set_eagle3_layers_to_capture"
        ):
            raise AttributeError(
                "language_model does not support EAGLE3 speculative decoding."
            )

        self.language_model.set_eagle3_layers_to_capture()  # expect: ids-dropped


EntryClass = KimiK25ForConditionalGeneration
