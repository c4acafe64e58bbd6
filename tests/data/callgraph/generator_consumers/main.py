"""A generator's body runs where it is consumed: a for, next(), a builtin, yield from, iter(),
a pipeline stage handed the stream, an iterator class whose __iter__ returns a generator."""


def numbers():
    yield 1
    yield 2


def make():
    return numbers()  # makes the generator; runs none of its body


def total():
    return sum(tuple(make()))  # tuple() runs numbers' body here


def first():
    return next(iter(make()))  # iter() of a generator is the generator: next() runs it


def double(stream):
    for x in stream:  # runs whatever generator it is handed
        yield x * 2


def pipeline():
    return list(double(numbers()))


def chain():
    yield from make()  # the delegating generator runs numbers' body


def never_consumed():
    make()  # made and dropped: numbers' body never runs here


class Box:
    def __init__(self):
        self.items = [1, 2]

    def lazy(self):
        yield from self.items

    def replace(self):
        self.items = self.lazy()  # a list replaced by a lazy view: the attribute holds both

    def walk(self):
        return [x for x in self.items]  # not drawn: the attribute's generator proves nothing


class Ticks:
    def __iter__(self):
        return self.ticks()

    def ticks(self):
        yield 0

    def __next__(self):
        return next(iter(self))  # iter(self) calls __iter__; next() runs the generator it returned


async def agen():
    yield 1


async def consume_async():
    async for x in agen():
        pass


total()
first()
pipeline()
list(chain())
never_consumed()
box = Box()
box.walk()  # before the replacement: walk iterates the list
box.replace()
next(Ticks())
