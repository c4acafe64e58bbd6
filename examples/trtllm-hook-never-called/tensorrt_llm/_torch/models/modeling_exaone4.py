from torch import nn

from .modeling_utils import DecoderModel, DecoderModelForCausalLM, register_auto_model


class Exaone4Attention(nn.Module):

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, position_ids, hidden_states, attn_metadata, lora_params=None, **kwargs):
        return self.qkv(hidden_states)


class Exaone4DecoderLayer(nn.Module):
    """Takes the metadata in **kwargs and hands it to the attention; nothing calls the hook."""

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.self_attn = Exaone4Attention(model_config, layer_idx)

    def forward(self, position_ids, hidden_states, attn_metadata, residual=None, **kwargs):
        residual = hidden_states
        hidden_states = self.self_attn(position_ids=position_ids, hidden_states=hidden_states,
                                       attn_metadata=attn_metadata, **kwargs)
        return hidden_states + residual


class Exaone4Model(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.num_hidden_layers = model_config.num_hidden_layers
        self.layers = nn.ModuleList([Exaone4DecoderLayer(model_config, i) for i in range(self.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, spec_metadata=None, lora_params=None,
                **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        for decoder_layer in self.layers[:self.num_hidden_layers]:
            hidden_states = decoder_layer(position_ids=position_ids, hidden_states=hidden_states, attn_metadata=attn_metadata, spec_metadata=spec_metadata, lora_params=lora_params)  # expect: dead-write
        return self.norm(hidden_states)


@register_auto_model("Exaone4ForCausalLM")
class Exaone4ForCausalLM(DecoderModelForCausalLM):

    def __init__(self, model_config):
        super().__init__(Exaone4Model(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
