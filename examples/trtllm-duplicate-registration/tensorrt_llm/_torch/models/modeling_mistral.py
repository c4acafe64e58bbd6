from torch import nn

from .modeling_utils import DecoderModel, DecoderModelForCausalLM, register_auto_model


class MistralDecoderLayer(nn.Module):

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx

    def forward(self, position_ids, hidden_states, attn_metadata, residual=None, spec_metadata=None, **kwargs):
        if spec_metadata is not None:
            spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
        return hidden_states, residual


class MistralModel(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([MistralDecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, spec_metadata=None, **kwargs):
        hidden_states, residual = self.embed_tokens(input_ids), None
        for decoder_layer in self.layers:
            hidden_states, residual = decoder_layer(position_ids, hidden_states, attn_metadata, residual, spec_metadata=spec_metadata)
        return hidden_states


# The same architecture name as modeling_llama.MistralForCausalLM: whichever module is imported last wins.
@register_auto_model("MistralForCausalLM")  # expect: duplicate-registration
class MistralForCausalLM(DecoderModelForCausalLM):

    def __init__(self, model_config):
        super().__init__(MistralModel(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
