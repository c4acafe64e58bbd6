"""Calls on call results: f()(), f()(g)(), returned nested functions."""


def leaf():
    return 0


def make_leaf():
    return leaf


def make_adder(n):
    def add(x):
        return x + n
    return add


def identity(f):
    return f


def factory():
    return identity


make_leaf()()
make_adder(1)(2)
factory()(leaf)()


def chain():
    return make_adder(3)(4)


chain()
