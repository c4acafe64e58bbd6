"""Classes only the outside creates (a framework's loader, a user): none of them, nor a subclass,
is created here. Each stores its own model through the base's __init__; the base's forward, which
no call here reaches, runs on each of them (A and B inherit it) and calls that class's model."""


class Base:
    def __init__(self, model):
        self.model = model

    def forward(self):
        return self.model.run()


class ModelA:
    def run(self):
        pass


class ModelB:
    def run(self):
        pass


class ModelC:
    def run(self):
        pass


class A(Base):
    def __init__(self):
        super().__init__(ModelA())


class B(Base):
    def __init__(self):
        super().__init__(ModelB())


class C(Base):
    """Overrides forward: Base.forward never runs on a C (C.model's run is no edge of it)."""

    def __init__(self):
        super().__init__(ModelC())

    def forward(self):
        return None
