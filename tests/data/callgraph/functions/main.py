"""Plain calls of module-level functions, nested functions, recursion, a function never called."""


def helper(x):
    return x + 1


def outer(x):
    def inner(y):
        return helper(y)
    return inner(x) + helper(x)


def countdown(n):
    if n > 0:
        countdown(n - 1)


def unused():
    return helper(0)


outer(1)
countdown(3)
