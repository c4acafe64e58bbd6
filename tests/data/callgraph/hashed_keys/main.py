class Key:
    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return self.name == other.name


class Plain:
    pass


class Ordered:
    def __hash__(self):
        return 0

    def __getitem__(self, i):
        return i


REGISTRY = {}
SEEN = set()


def store(k, v):
    REGISTRY[k] = v


def lookup(k):
    return REGISTRY[k]


def has(k):
    return k in REGISTRY


def fetch(k):
    return REGISTRY.get(k)


def remember(k):
    SEEN.add(k)


def listed(k, items):
    return k in [1, 2]


def indexed(o):
    return o[0]


def unique(xs):
    return set(xs)


class Handlers:
    def on_a(self):
        pass

    def on_b(self):
        pass

    def on_c(self):
        pass


def names(h):
    first = {"on_a": 1}
    for name, value in first.items():
        getattr(h, name)()


def main():
    k = Key("a")
    store(k, 1)
    lookup(k)
    has(k)
    fetch(k)
    remember(k)
    listed(Ordered(), [])
    indexed(Ordered())
    store(Plain(), 2)
    unique([Key("b")])
    names(Handlers())
