"""Builtins and methods of builtin types are not nodes; own functions around them are."""


def weight(item):
    return len(item)


def describe(items):
    ordered = sorted(items, key=weight)
    return ", ".join(str(x) for x in ordered)


def total(items):
    return sum(weight(i) for i in items)


class Bag:
    def __init__(self, items):
        self.items = list(items)

    def size(self):
        return len(self.items)


bag = Bag(["aa", "b"])
print(describe(bag.items), total(bag.items), bag.size())
names = dict(first=weight)
names["first"]("xyz")
