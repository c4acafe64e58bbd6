"""functools.partial (both spellings) and a bound method kept on the instance and called later."""
import functools
from functools import partial


def scale(k, x):
    return x


def unused(k, x):
    return k


class Renderer:
    def __init__(self):
        self.finalize = self._default_finalize

    def _default_finalize(self, x):
        return x

    def render(self, x):
        return self.finalize(x)


def run():
    double = functools.partial(scale, 2)
    double(3)
    triple = partial(scale, k=3)
    triple(x=1)
    return Renderer().render(1)


run()
