"""Entry points called from outside the program (a plugin hook, a test): a parameter no call
fills is an instance of the classes that have every attribute the function reads on it (the
created ones where some are; at most three; none when no class has them all)."""


class Markdown:
    def __init__(self):
        self.block = BlockParser()


class BlockParser:
    def register(self, name, func):
        self.rules = {name: func}

    def parse(self):
        return 0


class Other:
    def parse(self):
        return 1


def handle():
    return 0


def plugin(md):
    md.block.register("x", handle)


def ambiguous(p):
    return p.parse()


def unknown(m):
    return m.group(0)
