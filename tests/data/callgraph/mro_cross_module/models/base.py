class BaseModel:
    def __init__(self, config):
        self.config = config
        self.layers = self.build_layers()

    def build_layers(self):
        return [self.make_layer(i) for i in range(2)]

    def make_layer(self, i):
        return i

    def forward(self, x):
        return self.post(x)

    def post(self, x):
        return x
