"""Lambdas, named <lambdaN> by source order within their scope."""


def double(x):
    return 2 * x


def apply(fn, x):
    return fn(x)


inc = lambda x: x + 1  # noqa: E731  main.<lambda1>
twice = lambda x: double(double(x))  # noqa: E731  main.<lambda2>


def pipeline(x):
    stages = [lambda v: inc(v), twice]  # main.pipeline.<lambda1>
    for stage in stages:
        x = stage(x)
    return apply(lambda v: v - 1, x)  # main.pipeline.<lambda2>


inc(1)
pipeline(2)
(lambda: double(3))()  # main.<lambda3>
