from torch import nn

from .modeling_utils import DecoderModel, DecoderModelForCausalLM, register_auto_model


class Phi3DecoderLayer(nn.Module):

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx

    def forward(self, position_ids, hidden_states, attn_metadata, residual=None, spec_metadata=None, lora_params=None):
        if spec_metadata is not None:
            spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
        return hidden_states, residual


class Phi3Model(DecoderModel):
    """Keeps the base class's forward (DecoderModel.forward), whose loop passes lora_params only."""

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([Phi3DecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])


@register_auto_model("Phi3ForCausalLM")
class Phi3ForCausalLM(DecoderModelForCausalLM):

    def __init__(self, model_config):
        super().__init__(Phi3Model(model_config), config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
