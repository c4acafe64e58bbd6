"""Functions stored as dict values and called through subscripts."""


def encode(x):
    return x


def decode(x):
    return x


def compress(x):
    return x


HANDLERS = {"enc": encode, "dec": decode}


def dispatch(table, key, value):
    return table[key](value)


def build():
    table = dict(HANDLERS)
    table["zip"] = compress
    return table


HANDLERS["enc"](1)
dispatch(HANDLERS, "dec", 2)
build()["zip"](3)
nested = {"codec": {"enc": encode}}
nested["codec"]["enc"](4)
HANDLERS.update({"dec": compress})
HANDLERS["dec"](5)
