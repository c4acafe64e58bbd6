"""Functions passed as positional arguments and called through the parameter (one named like a global)."""


def square(x):
    return x * x


def negate(x):
    return -x


def apply(fn, value):
    return fn(value)


def apply_twice(fn, value):
    return apply(fn, apply(fn, value))


def compose(f, g):
    def composed(x):
        return f(g(x))
    return composed


def shadowed(square):
    return square(2)


def run():
    shadowed(negate)
    apply(square, 3)
    apply_twice(negate, 4)
    both = compose(square, negate)
    both(5)


run()
