from torch import nn

from .modeling_utils import DecoderModel, DecoderModelForCausalLM, register_auto_model


class LlamaDecoderLayer(nn.Module):
    """Hands the metadata to a helper of its own, which calls the hook."""

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx

    def forward(self, position_ids, hidden_states, attn_metadata, residual=None, spec_metadata=None, **kwargs):
        hidden_states = hidden_states * 2
        self._capture(spec_metadata, hidden_states, residual)
        return hidden_states, residual

    def _capture(self, metadata, hidden_states, residual):
        if metadata is not None:
            metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)


class LlamaModel(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([LlamaDecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for layer in self.layers[:self.num_hidden_layers]:
            hidden_states, residual = layer(position_ids=position_ids, hidden_states=hidden_states,
                                            attn_metadata=attn_metadata, residual=residual, **kwargs)
        return self.norm(hidden_states, residual)


@register_auto_model("LlamaForCausalLM")
class LlamaForCausalLM(DecoderModelForCausalLM):

    def __init__(self, model_config):
        super().__init__(LlamaModel(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)


@register_auto_model("MistralForCausalLM")
class MistralForCausalLM(DecoderModelForCausalLM):
    """Mistral checkpoints built on the Llama model."""

    def __init__(self, model_config):
        super().__init__(LlamaModel(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
