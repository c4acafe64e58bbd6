"""A class attribute that is an instance of a class with __get__ (a descriptor: here a
property subclass, and a plain one) is read through __get__; property.__get__ runs the
getter property.__init__ was given."""


class CachedProperty(property):
    def __init__(self, fget):
        property.__init__(self, fget=fget)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return property.__get__(self, obj, owner)


def cached(fget):
    return CachedProperty(fget)


class Typed:
    def __get__(self, obj, owner=None):
        return helper


def helper():
    return 0


def unrelated():
    return 1


class Model:
    kind = Typed()

    @cached
    def size(self):
        return 3

    def use(self):
        return self.size + self.kind()


Model().use()
