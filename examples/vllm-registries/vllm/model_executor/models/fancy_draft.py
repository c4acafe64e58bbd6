"""A draft head only the speculative registry names (no draft-like class name): its
holder has no _set_aux_hidden_state_layers, which is informational on a draft head."""

from torch import nn

from vllm.model_executor.models.interfaces import SupportsEagle3


class FancyDraftModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4)])


class FancyDraftForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = FancyDraftModel(config)
