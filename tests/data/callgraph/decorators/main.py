"""Decorators at module level: the module body calls the decorator; callers reach what it returns."""

def register(fn):
    REGISTRY.append(fn)
    return fn

def logged(fn):
    def wrapper(*args):
        return fn(*args)
    return wrapper

def repeat(times):
    def decorate(fn):
        def wrapper(*args):
            for _ in range(times):
                fn(*args)
        return wrapper
    return decorate


REGISTRY = []

@register
def plain():
    return 1

@logged
def traced(x):
    return plain() + x

@repeat(2)
def noisy():
    traced(1)


noisy()
REGISTRY[0]()
