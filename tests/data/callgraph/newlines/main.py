"""Calls spread over several lines, backslash continuations, calls in defaults and comprehensions."""


def first(*args):
    return args


def second(x=None):
    return x


def third():
    return 3


def wrapper(
    a,
    b=third(),
):
    return first(a,
                 b)


result = first(
    second(
        x=third(),
    ),
    third()
)
total = second() \
    or third()
items = [
    second(v)
    for v in (1, 2)
    if first(v)
]
value = (wrapper
         (2))
