"""A class passed as a constructor parameter with a default, overridden by a subclass via super().__init__."""


class LlamaModel:
    def __init__(self, config):
        self.config = config

    def set_capture(self, ids):
        return ids


class Qwen2Model(LlamaModel):
    def set_capture(self, ids):
        return list(ids)


class LlamaForCausalLM:
    def __init__(self, config, model_cls=LlamaModel):
        self.model = model_cls(config)
        self.head = self.make_head()

    def make_head(self):
        return None

    def set_capture(self, ids):
        return self.model.set_capture(ids)


class Qwen2ForCausalLM(LlamaForCausalLM):
    def __init__(self, config):
        super().__init__(config, model_cls=Qwen2Model)


LlamaForCausalLM({}).set_capture([1])
Qwen2ForCausalLM({}).set_capture([2])
