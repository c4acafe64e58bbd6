"""The fixed shape: the setter clears every tag before setting the new ones,
so repeated calls do not add up (must stay quiet; tracer example)."""

from typing import List, Optional

from torch import nn

from sglang.srt.models.qwen2_moe import Qwen2MoeForCausalLM, Qwen2MoeModel


class Qwen3MoeModel(Qwen2MoeModel):
    def set_eagle3_layers_to_capture(self, layers_to_capture: List[int]):
        for layer in self.layers:
            layer._is_layer_to_capture = False
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            self.layers[layer_id]._is_layer_to_capture = True


class Qwen3MoeForCausalLM(Qwen2MoeForCausalLM):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        nn.Module.__init__(self)
        self.config = config
        self.model = Qwen3MoeModel(config, quant_config=quant_config, prefix="model")
        self.capture_aux_hidden_states = False


EntryClass = Qwen3MoeForCausalLM
