"""``a[i:j] = xs`` stores xs's elements (not the list xs) in a; ``a[i:j]`` of a list holds its
elements; a slice of a generator is no generator (it cannot be sliced)."""


class Leaf:
    def name(self):
        return "leaf"


class Group:
    def __init__(self, items):
        self.items = items

    def name(self):
        return "group"


def numbers():
    yield 1


def build():
    items = [Leaf(), Leaf()]
    items[0:1] = [Group(items[0:1])]  # a Group replaces the first leaf
    return [item.name() for item in items]  # both kinds


def keep(gen):
    part = gen[0:1]  # (a TypeError at run time)
    return [x for x in part]


build()
keep(numbers())
