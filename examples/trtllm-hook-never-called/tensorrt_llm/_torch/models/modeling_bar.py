from torch import nn

from .modeling_speculative import SpecDecOneEngineForCausalLM
from .modeling_utils import DecoderModel, register_auto_model


class BarAttention(nn.Module):

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, position_ids, hidden_states, attn_metadata, lora_params=None, **kwargs):
        return self.qkv(hidden_states)


class BarDecoderLayer(nn.Module):
    """A one-engine model: its wrapper captures the final output, but no layer calls the hook."""

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.self_attn = BarAttention(model_config, layer_idx)

    def forward(self, position_ids, hidden_states, attn_metadata, residual=None, **kwargs):
        residual = hidden_states
        hidden_states = self.self_attn(position_ids=position_ids, hidden_states=hidden_states,
                                       attn_metadata=attn_metadata, **kwargs)
        return hidden_states + residual


class BarModel(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.num_hidden_layers = model_config.num_hidden_layers
        self.layers = nn.ModuleList([BarDecoderLayer(model_config, i) for i in range(self.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, spec_metadata=None, lora_params=None,
                **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        for decoder_layer in self.layers[:self.num_hidden_layers]:
            hidden_states = decoder_layer(position_ids=position_ids, hidden_states=hidden_states, attn_metadata=attn_metadata, spec_metadata=spec_metadata, lora_params=lora_params)  # expect: dead-write
        return self.norm(hidden_states)


@register_auto_model("BarForCausalLM")
class BarForCausalLM(SpecDecOneEngineForCausalLM):

    def __init__(self, model_config):
        super().__init__(BarModel(model_config), model_config)
