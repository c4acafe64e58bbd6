from .modeling_utils import DecoderModelForCausalLM


def get_spec_worker(model_config):
    """Picks the worker class for the configured mode at run time."""
    return WORKERS[model_config.spec_config.mode](model_config)


class SpecDecOneEngineForCausalLM(DecoderModelForCausalLM):
    """Target and draft in one engine: the draft reads what the target's layers captured."""

    def __init__(self, model, model_config):
        super().__init__(model, config=model_config, hidden_size=model_config.hidden_size,
                         vocab_size=model_config.vocab_size)
        self.spec_worker = get_spec_worker(model_config)
        self.layer_idx = -1

    def forward(self, attn_metadata, input_ids=None, position_ids=None, return_context_logits: bool = False,
                spec_metadata=None, **kwargs):
        hidden_states = self.model(input_ids=input_ids, attn_metadata=attn_metadata, position_ids=position_ids,
                                   spec_metadata=spec_metadata, **kwargs)
        # The final output (id -1): captured here, outside the decoder loop, for one-engine drafts only.
        if spec_metadata is not None and spec_metadata.is_layer_capture(self.layer_idx):
            spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states)
        logits = self.logits_processor(hidden_states, self.lm_head, attn_metadata, return_context_logits)
        return self.spec_worker(hidden_states=hidden_states, logits=logits, spec_metadata=spec_metadata)
