"""A property read in methods nothing calls: their ``self`` is known only after the first fixpoint,
when the class's attributes already are (the getter is found at once, on the first read), and two
methods read the same property of the same instances: each gets its edge to the getter, and both
call what the getter returns."""


class Engine:
    def start(self):
        return 1


class Car:
    def __init__(self):
        self._engine = Engine()

    @property
    def engine(self):
        return self._engine

    def drive(self):
        return self.engine.start()

    def park(self):
        return self.engine.start()


Car()
