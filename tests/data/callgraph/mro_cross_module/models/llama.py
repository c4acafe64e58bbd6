from models.base import BaseModel

from .mixins import CaptureMixin


class LlamaModel(BaseModel):
    def make_layer(self, i):
        return ("llama", i)


class LlamaForCausalLM(CaptureMixin, LlamaModel):
    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
