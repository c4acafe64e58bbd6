"""Example trees (TensorRT-LLM-shaped) for ids that travel in a forward argument.

``@register_auto_model("Arch")`` registers the entry; its forward (inherited from
``DecoderModelForCausalLM``) hands ``spec_metadata`` to the inner model, whose loop hands
it to each decoder layer, which calls ``spec_metadata.maybe_capture_hidden_states(...)``;
``Eagle3SpecMetadata.__post_init__`` defaults the ids when the config names none.
``argument_tree(...)`` varies one part, so each example shows exactly the shape it is about.
"""

from __future__ import annotations

PROTOCOL = "trtllm-eagle3"

_UTILS = '''from torch import nn

MODEL_CLASS_MAPPING = {}


def register_auto_model(name):
    def decorator(cls):
        MODEL_CLASS_MAPPING[name] = cls
        return cls
    return decorator


class DecoderModelForCausalLM(nn.Module):

    def __init__(self, model, *, config):
        super().__init__()
        self.model = model

    def forward(self, attn_metadata, input_ids=None, spec_metadata=None, **kwargs):
        hidden_states = self.model(input_ids=input_ids, attn_metadata=attn_metadata, spec_metadata=spec_metadata)
        return self.lm_head(hidden_states)
'''

_LOOPS = {
    "passes": "            hidden_states, residual = layer(hidden_states, residual, spec_metadata=spec_metadata)\n",
    "swallowed": "            hidden_states, residual = layer(hidden_states, residual)  # expect: broken-delegation\n",
    "never": "            hidden_states, residual = layer(hidden_states, residual, spec_metadata=spec_metadata)"
             "  # expect: dead-write\n",
}

_HOOKS = {
    "call": '''        hidden_states = self.mlp(hidden_states)
        if spec_metadata is not None:
            spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
''',
    "never": '''        hidden_states = self.mlp(hidden_states)
''',
    "branch": '''        if self.fused:  # expect: capture-skipped-on-branch
            hidden_states, residual = self.fused_norm(hidden_states, residual)
        else:
            if spec_metadata is not None:
                spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
''',
    "branch-guarded": '''        if spec_metadata is not None and spec_metadata.is_layer_capture(self.layer_idx):
            self.fused = False
        if self.fused:
            hidden_states, residual = self.fused_norm(hidden_states, residual)
        else:
            if spec_metadata is not None:
                spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)
''',
}

_QWEN3 = '''from torch import nn

from .modeling_utils import DecoderModelForCausalLM, register_auto_model


class Qwen3DecoderLayer(nn.Module):

    def __init__(self, config, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.fused = config.fused
        self.mlp = nn.Linear(8, 8)

    def forward(self, hidden_states, residual, spec_metadata=None, **kwargs):
{hook}        return hidden_states, residual


class Qwen3Model(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([Qwen3DecoderLayer(config, i) for i in range(config.num_hidden_layers)])

    def forward(self, attn_metadata, input_ids=None, {param}):
        hidden_states, residual = self.embed_tokens(input_ids), None
        for layer in self.layers:
{loop}        return hidden_states


@register_auto_model("Qwen3ForCausalLM")
class Qwen3ForCausalLM(DecoderModelForCausalLM):

    def __init__(self, config):
        super().__init__(Qwen3Model(config), config=config)
'''

_DEFAULTS = {
    "logged": '''            logger.warning("no EAGLE-3 capture layers configured: using the default three")
            self.layers_to_capture = (1, self.num_layers // 2 - 1, self.num_layers - 4)
''',
    "silent": '''            self.layers_to_capture = (1, self.num_layers // 2 - 1, self.num_layers - 4)  # expect: silent-fallback
''',
}

_EAGLE3 = '''import logging
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass
class Eagle3SpecMetadata:
    num_layers: int = 0
    layers_to_capture: tuple = None

    def __post_init__(self):
        if self.layers_to_capture is None:
{default}        else:
            self.layers_to_capture = sorted(self.layers_to_capture)

    def maybe_capture_hidden_states(self, layer_id, hidden_states, residual=None):
        if layer_id in self.layers_to_capture:
            self.buffer[layer_id] = hidden_states
'''


def argument_tree(model_loop: str = "passes", layer_hook: str = "call",
                  default_log: str = "logged") -> tuple[tuple[str, str], ...]:
    param = "**kwargs" if model_loop == "swallowed" else "spec_metadata=None, **kwargs"
    loop = _LOOPS["never" if layer_hook == "never" else model_loop]
    qwen3 = _QWEN3.replace("{hook}", _HOOKS[layer_hook]).replace("{loop}", loop).replace("{param}", param)
    return (
        ("tensorrt_llm/version.py", '__version__ = "0.0.0-example"\n'),
        ("tensorrt_llm/_torch/models/modeling_utils.py", _UTILS),
        ("tensorrt_llm/_torch/models/modeling_qwen3.py", qwen3),
        ("tensorrt_llm/_torch/speculative/eagle3.py", _EAGLE3.replace("{default}", _DEFAULTS[default_log])),
    )


__all__ = ["PROTOCOL", "argument_tree"]
