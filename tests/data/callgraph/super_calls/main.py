"""super(): zero-argument, two-argument, super(Base, self) skipping Base's own method, chained __init__."""


class Layer:
    def __init__(self, size):
        self.size = size

    def forward(self, x):
        return x

    def describe(self):
        return "layer"


class Norm(Layer):
    def __init__(self, size, eps=1e-6):
        super().__init__(size)
        self.eps = eps

    def forward(self, x):
        return super().forward(x) * 2

    def describe(self):
        return "norm"


class RMSNorm(Norm):
    def __init__(self, size):
        super(RMSNorm, self).__init__(size, eps=1e-5)

    def forward(self, x):
        return super().forward(x) + 1

    def describe(self):
        return "rms " + super(Norm, self).describe()


norm = RMSNorm(4)
norm.forward(1)
norm.describe()
