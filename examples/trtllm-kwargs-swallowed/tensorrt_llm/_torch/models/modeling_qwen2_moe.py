from torch import nn

from .modeling_utils import DecoderModel, DecoderModelForCausalLM, register_auto_model


class Qwen2MoeDecoderLayer(nn.Module):
    """Would capture if it were given the metadata: it names the parameter."""

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx

    def forward(self, position_ids, hidden_states, attn_metadata, residual, spec_metadata=None, **kwargs):
        if spec_metadata is not None:
            spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
        return hidden_states, residual


class Qwen2MoeModel(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([Qwen2MoeDecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(position_ids, hidden_states, attn_metadata, residual)  # expect: broken-delegation
        return self.norm(hidden_states, residual)


@register_auto_model("Qwen2MoeForCausalLM")
class Qwen2MoeForCausalLM(DecoderModelForCausalLM):

    def __init__(self, model_config):
        super().__init__(Qwen2MoeModel(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
