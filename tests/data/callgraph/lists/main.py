"""Functions stored in lists and tuples: index, append, negative index, slice, nesting, loops."""


def first():
    return 1


def second():
    return 2


def third():
    return 3


def fourth():
    return 4


PIPELINE = [first, second]
PIPELINE.append(third)
PIPELINE[2]()
PIPELINE[-1]()

for fn in PIPELINE[:2]:
    fn()

GRID = [[fourth], (first,)]
GRID[0][0]()


def call_at(seq, i):
    return seq[i]()


call_at((second, fourth), 1)
