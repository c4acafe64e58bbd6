"""functools.reduce(fn, xs, init) calls fn(acc, x): the accumulator is the initial value
(or an element), then what fn returns."""
from functools import reduce


class Acc:
    def add(self, x):
        return self


def step(acc, x):
    return acc.add(x)


def never(acc, x):
    return acc


def total(xs):
    return reduce(step, xs, Acc())


total([1, 2])
