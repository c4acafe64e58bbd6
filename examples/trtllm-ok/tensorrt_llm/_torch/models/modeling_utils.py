from typing import Optional

from torch import nn

from ..speculative.interface import SpecMetadata

MODEL_CLASS_MAPPING = {}


def register_auto_model(name: str):

    def decorator(cls):
        MODEL_CLASS_MAPPING[name] = cls
        return cls

    return decorator


class DecoderModel(nn.Module):

    def __init__(self, model_config):
        super().__init__()
        self.model_config = model_config

    def forward(self, attn_metadata, input_ids=None, position_ids=None, lora_params=None, **kwargs):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for decoder_layer in self.layers:
            hidden_states, residual = decoder_layer(position_ids=position_ids, hidden_states=hidden_states,
                                                    attn_metadata=attn_metadata, residual=residual,
                                                    lora_params=lora_params)
        return self.norm(hidden_states, residual)


class DecoderModelForCausalLM(nn.Module):

    def __init__(self, model, *, config, hidden_size: int, vocab_size: int):
        super().__init__()
        self.model_config = config
        self.model = model

    def forward(self, attn_metadata, input_ids=None, position_ids=None, return_context_logits: bool = False,
                spec_metadata: Optional[SpecMetadata] = None, **kwargs):
        output = self.model(input_ids=input_ids, attn_metadata=attn_metadata, position_ids=position_ids,
                            spec_metadata=spec_metadata)
        return self.logits_processor(output, self.lm_head, attn_metadata, return_context_logits)
