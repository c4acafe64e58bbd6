"""An instance's __getattr__ runs for a name normal lookup does not find (not for one it finds);
a module's __getattr__ for a name the module does not bind."""
import lazy
from lazy import thing


class Proxy:
    def __init__(self):
        self.real = 1

    def __getattr__(self, name):
        return self.fallback()

    def fallback(self):
        return 0

    def known(self):
        return self.real


class Lazy:
    """A hook that sets what it is asked for: only the first read of a name runs it (here the only
    read; getattr_caching/ has reads at import and later)."""

    def __getattr__(self, name):
        value = Lazy()
        setattr(self, name, value)
        return value


def lazy_use():
    return Lazy().child


def use():
    p = Proxy()
    p.known()
    print(p.missing, lazy.other, thing)


use()
lazy_use()
