"""Building blocks of the catalogue's example trees (SGLang-shaped, a few dozen lines).

``model(...)`` writes one model module: an inner decoder whose forward loop reads
the state attribute, a top class with the setter, and ``EntryClass``. Each check
varies one part of it (the setter body, the delegate, the forward) so the example
shows exactly the shape the check is about.
"""

from __future__ import annotations

DECODER = '''
class {name}Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
        self.layers_to_capture = []

    def forward(self, hidden_states):
        aux_hidden_states = []
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = self.layers[i](hidden_states)
        return hidden_states, aux_hidden_states
'''

# vLLM Gemma4's shape (gemma4.py:1323 in 0.33.0): a flag returns early through another
# method before the loop, whose capture sits in a helper the chain reads the state in.
EARLY_RETURN_DECODER = '''
class {name}Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
        self.layers_to_capture = []
        self.fast_prefill_enabled = config.fast_prefill

    def fast_prefill_forward(self, hidden_states{extra}):
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states

    def _maybe_capture(self, aux_hidden_states, i, hidden_states):
        if i in self.layers_to_capture:
            aux_hidden_states.append(hidden_states)

    def forward(self, hidden_states):
        if self.fast_prefill_enabled:
            hidden_states = self.fast_prefill_forward(hidden_states{passed})
            return hidden_states, []
        aux_hidden_states = []
        for i in range(len(self.layers)):
            self._maybe_capture(aux_hidden_states, i, hidden_states)
            hidden_states = self.layers[i](hidden_states)
        return hidden_states, aux_hidden_states
'''

SETTER = '''
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("no layer ids given; capturing the default layers")
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
'''

TOP = '''
class {name}ForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = {name}Model(config)
        self.capture_aux_hidden_states = False

    def forward(self, hidden_states):
        hidden_states, aux_hidden_states = self.model(hidden_states)
        if self.capture_aux_hidden_states:
            return hidden_states, aux_hidden_states
        return hidden_states
{setter}'''

HEADER = '''import logging

from torch import nn

logger = logging.getLogger(__name__)
'''


def model(name: str = "Foo", setter: str = SETTER, decoder: str = DECODER, extra: str = "",
          entry: str | None = None) -> str:
    """Source of ``sglang/srt/models/<name>.py``: decoder, top class, EntryClass."""
    return (HEADER + decoder.format(name=name) + TOP.format(name=name, setter=setter) + extra
            + f"\n\nEntryClass = {entry or name + 'ForCausalLM'}\n")


def model_file(name: str, source: str) -> tuple[str, str]:
    return (f"sglang/srt/models/{name.lower()}.py", source)


RUNNER_HEADER = '''"""ModelRunner (example)."""


class ModelRunner:
    def __init__(self, model, server_args):
        self.model = model
        self.server_args = server_args
        self.initialize()
'''


def runner(body: str) -> tuple[str, str]:
    """``sglang/srt/model_executor/model_runner.py`` whose ``initialize`` is ``body``."""
    return ("sglang/srt/model_executor/model_runner.py", RUNNER_HEADER + body)


TARGET = {"architectures": ["FooForCausalLM"], "num_hidden_layers": 8, "hidden_size": 64}
DRAFT_1_3_5 = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64,
               "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 5]}}
DRAFT_NO_IDS = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64}


def mark(source: str, where: str, slug: str) -> str:
    """``source`` with ``  # expect: slug`` at the end of the one line that contains ``where``."""
    lines = source.split("\n")
    hits = [i for i, line in enumerate(lines) if where in line]
    if len(hits) != 1:
        raise ValueError(f"{where!r} is on {len(hits)} lines of the example")
    lines[hits[0]] += f"  # expect: {slug}"
    return "\n".join(lines)
