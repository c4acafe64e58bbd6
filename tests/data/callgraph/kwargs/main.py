"""Functions passed by keyword, through **kwargs, and as parameter defaults."""


def fast(x):
    return x


def slow(x):
    return x


def careful(x):
    return x


def run(data, *, strategy=slow, fallback=None):
    result = strategy(data)
    if fallback is not None:
        fallback(data)
    return result


def configure(**options):
    return options["hook"](0)


run(1)
run(2, strategy=fast, fallback=careful)
configure(hook=careful)
