"""Generator functions, yielded callables, and the iteration protocol of an own class."""


def step_a():
    return "a"


def step_b():
    return "b"


def steps():
    yield step_a
    yield step_b


class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n


def drain(iterable):
    return [x for x in iterable]


for step in steps():
    step()
drain(Countdown(2))
