"""A __getattr__ that caches its answer with setattr (sqlparse's token types): it runs at the first
read of a name only. Reads at import (the module body) come before any function can read: they
get the edge, a later function's read of the same name does not; the value read is the hook's
everywhere (so ``x in T.alpha`` runs the type's __contains__)."""


class Types(tuple):
    def __getattr__(self, name):
        new = Types(self + (name,))
        setattr(self, name, new)
        return new

    def __contains__(self, item):
        return item is not None and item[:len(self)] == self


T = Types()
ALPHA = T.alpha


def later(token):
    return token in T.alpha


later(ALPHA)
