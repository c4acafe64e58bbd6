from .modeling_utils import DecoderModelForCausalLM


class SpecDecOneEngineForCausalLM(DecoderModelForCausalLM):
    """Target and draft in one engine: the draft reads what the target's layers captured."""

    def __init__(self, model, model_config):
        super().__init__(model, config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
        self.draft_model = None

    def forward(self, attn_metadata, input_ids=None, position_ids=None, return_context_logits: bool = False,
                spec_metadata=None, **kwargs):
        hidden_states = self.model(input_ids=input_ids, attn_metadata=attn_metadata, position_ids=position_ids,
                                   spec_metadata=spec_metadata, **kwargs)
        return self.logits_processor(hidden_states, self.lm_head, attn_metadata, return_context_logits)
