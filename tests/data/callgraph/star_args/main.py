"""f(*t) with t a tuple of known length: element k binds parameter k (not every parameter)."""


class Kind:
    def __contains__(self, item):
        return True

    def __len__(self):
        return 1


def match(kind, values):
    return "x" in values and len(kind)  # values holds strings only; kind holds the Kind


def run():
    for pattern in [(Kind(), "x"), (Kind(), "y")]:
        match(*pattern)


run()
