"""Properties: reading an attribute calls the getter, assigning it calls the setter."""


class Config:
    def __init__(self, layers):
        self._layers = layers
        self.capture = [0]

    @property
    def num_layers(self):
        return len(self._layers)

    @property
    def capture(self):
        return self._capture

    @capture.setter
    def capture(self, ids):
        self._capture = self.validate(ids)

    def validate(self, ids):
        return [i for i in ids if i < self.num_layers]


def last_layer(config):
    return config.num_layers - 1


cfg = Config([1, 2, 3])
cfg.capture = [1, 5]
print(cfg.capture, last_layer(cfg))
