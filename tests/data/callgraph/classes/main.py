"""Instances from constructors, methods through instances and self, bound-method values, nested classes."""


class Counter:
    def __init__(self, start):
        self.value = start
        self.reset()

    def reset(self):
        self.value = 0

    def bump(self):
        self.value += 1
        return self

    def report(self):
        return self.value


class Registry:
    class Entry:
        def __init__(self, name):
            self.name = name

        def label(self):
            return self.name.upper()

    def make(self, name):
        return Registry.Entry(name)


counter = Counter(5)
counter.bump().bump()
show = counter.report
show()
Counter(1).report()
entry = Registry().make("x")
entry.label()
