"""``if isinstance(x, C):`` narrows the local x in the body to what can pass the test; a tested
class outside the tree (``str``) proves nothing."""


class Base:
    def name(self):
        return "base"


class Named(Base):
    def name(self):
        return "named"


class Other(Base):
    pass


def first(tokens):
    for t in tokens:
        if t is not None and isinstance(t, (Named,)):
            return t.name()  # Named.name only: an Other cannot pass
    return None


def loose(x):
    if isinstance(x, str):
        return len(x)
    return x.name()


first([Named(), Other()])
loose(Other())
