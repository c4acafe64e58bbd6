"""next(x) calls type(x).__next__ (x is the iterator: its __iter__ does not run); next of a generator yields."""


class Counter:
    def __init__(self):
        self.n = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.n += 1
        return self.n


def first(it):
    return next(it)


def helper():
    return 1


def gen():
    yield helper


def take():
    f = next(gen())
    return f()


first(Counter())
take()
