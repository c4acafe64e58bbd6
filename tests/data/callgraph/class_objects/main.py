"""Class objects held in a dict, a class attribute and a tuple, instantiated later."""

class Llama:
    def __init__(self, config):
        self.config = config

    def forward(self):
        return "llama"

class Qwen:
    def __init__(self, config):
        self.config = config

    def forward(self):
        return "qwen"


REGISTRY = {"llama": Llama, "qwen": Qwen}

class Runner:
    model_cls = Llama

    def __init__(self, arch=None):
        cls = REGISTRY[arch] if arch else self.model_cls
        self.model = cls({})

    def step(self):
        return self.model.forward()

class QwenRunner(Runner):
    model_cls = Qwen

def build_all():
    return [cls({}) for cls in (Llama, Qwen)]


Runner().step()
Runner("qwen").step()
QwenRunner().step()
for m in build_all():
    m.forward()
