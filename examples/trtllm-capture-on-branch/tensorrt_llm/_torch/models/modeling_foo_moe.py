from torch import nn

from .modeling_speculative import SpecDecOneEngineForCausalLM
from .modeling_utils import DecoderModel, register_auto_model


class FooMoeDecoderLayer(nn.Module):
    """Captures only when the post-MoE all-reduce is not fused with the next layer's norm."""

    def __init__(self, model_config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.post_moe_fusion = model_config.tp_size > 1
        self.mlp = nn.Linear(8, 8)

    def forward(self, position_ids, hidden_states, attn_metadata, residual, spec_metadata=None, **kwargs):
        hidden_states = self.mlp(hidden_states)
        if self.post_moe_fusion:  # expect: capture-skipped-on-branch
            hidden_states, residual = self.moe_allreduce(hidden_states, residual)
        else:
            if spec_metadata and spec_metadata.is_layer_capture(self.layer_idx):
                spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
            hidden_states, residual = self.next_layer_layernorm(hidden_states, residual)
        return hidden_states, residual


class FooMoeModel(DecoderModel):

    def __init__(self, model_config):
        super().__init__(model_config)
        self.layers = nn.ModuleList([FooMoeDecoderLayer(model_config, i) for i in range(model_config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, position_ids=None, spec_metadata=None, **kwargs):
        hidden_states, residual = self.embed_tokens(input_ids), None
        for decoder_layer in self.layers:
            hidden_states, residual = decoder_layer(position_ids=position_ids, hidden_states=hidden_states, attn_metadata=attn_metadata, residual=residual, spec_metadata=spec_metadata, **kwargs)
        return hidden_states


@register_auto_model("FooMoeForCausalLM")
class FooMoeForCausalLM(SpecDecOneEngineForCausalLM):

    def __init__(self, model_config):
        super().__init__(FooMoeModel(model_config), model_config)
