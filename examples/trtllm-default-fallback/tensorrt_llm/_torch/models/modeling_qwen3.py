from torch import nn
from transformers import Qwen3Config

from .modeling_speculative import SpecDecOneEngineForCausalLM
from .modeling_utils import DecoderModel, register_auto_model


class Qwen3DecoderLayer(nn.Module):

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.mlp = nn.Linear(8, 8)

    def forward(self, position_ids, hidden_states, attn_metadata, residual, spec_metadata=None, **kwargs):
        hidden_states = self.mlp(hidden_states)
        if spec_metadata is not None:
            spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
        return hidden_states, residual


class Qwen3Model(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([Qwen3DecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, spec_metadata=None, **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for decoder_layer in self.layers:
            hidden_states, residual = decoder_layer(position_ids=position_ids, hidden_states=hidden_states,
                                                    attn_metadata=attn_metadata, residual=residual,
                                                    spec_metadata=spec_metadata)
        return self.norm(hidden_states, residual)


@register_auto_model("Qwen3ForCausalLM")
class Qwen3ForCausalLM(SpecDecOneEngineForCausalLM[Qwen3Model, Qwen3Config]):

    def __init__(self, model_config):
        super().__init__(Qwen3Model(model_config), model_config)
