from torch import nn
from transformers import PretrainedConfig

from .modeling_utils import DecoderModel, DecoderModelForCausalLM, register_auto_model


class MixtralDecoderLayer(nn.Module):

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.block_sparse_moe = nn.Linear(8, 8)

    def forward(self, position_ids, hidden_states, attn_metadata, residual, **kwargs):
        hidden_states = self.block_sparse_moe(hidden_states)
        return hidden_states, residual


class MixtralModel(DecoderModel):
    """Overrides the loop, but its forward takes the metadata only in **kwargs and hands the layers nothing."""

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([MixtralDecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, inputs_embeds=None, **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for decoder_layer in self.layers:
            hidden_states, residual = decoder_layer(position_ids=position_ids, hidden_states=hidden_states, attn_metadata=attn_metadata, residual=residual)  # expect: broken-delegation
        return self.norm(hidden_states, residual)


@register_auto_model("MixtralForCausalLM")
class MixtralForCausalLM(DecoderModelForCausalLM[MixtralModel, PretrainedConfig]):

    def __init__(self, model_config):
        super().__init__(MixtralModel(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
