"""Method lookup through the MRO: inherited __init__, overrides reached through self, a diamond."""


class Base:
    def __init__(self):
        self.ready = True

    def run(self):
        return self.step()

    def step(self):
        return "base"


class Left(Base):
    def step(self):
        return "left"


class Right(Base):
    def step(self):
        return "right"

    def extra(self):
        return "extra"


class Diamond(Left, Right):
    pass


class Child(Base):
    pass


Diamond().run()
Diamond().extra()
Child().run()
