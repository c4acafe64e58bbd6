"""MiMo: the decoder subclass overrides forward and never captures (vLLM MiMo's shape) (tracer example)."""

from torch import nn

from sglang.srt.models.qwen2 import Qwen2ForCausalLM, Qwen2Model


class MiMoModel(Qwen2Model):
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        return hidden_states + residual


class MiMoForCausalLM(Qwen2ForCausalLM):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        nn.Module.__init__(self)
        self.config = config
        self.model = MiMoModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False


EntryClass = MiMoForCausalLM
