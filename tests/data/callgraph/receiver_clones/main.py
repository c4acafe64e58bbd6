"""One base-class registrar and dispatcher shared by two parser classes (a block and an
inline parser): each stores a lambda over ``self`` and the function it is given in a dict
the base class's __init__ allocates. Python never hands the block's function the inline
parser or an inline state; a solve that gives the base class's methods one set of
variables for every receiver does (the methods are solved apart per receiver class)."""


class BlockState:
    def append(self, token):
        return token


class InlineState:
    def append(self, token):
        return token


class Parser:
    def __init__(self):
        self.methods = {}

    def register(self, name, func):
        self.methods[name] = lambda m, state: func(self, m, state)

    def dispatch(self, name, m, state):
        return self.methods[name](m, state)


class BlockParser(Parser):
    def __init__(self):
        super().__init__()

    def parse(self, state):
        return self.dispatch("block", "m", state)

    def extract(self):
        return "block"


class InlineParser(Parser):
    def __init__(self):
        super().__init__()

    def parse(self, state):
        return self.dispatch("inline", "m", state)

    def render(self):
        return "inline"


def parse_block_thing(block, m, state):
    block.extract()
    state.append(m)


def parse_inline_thing(inline, m, state):
    inline.render()
    state.append(m)


block = BlockParser()
inline = InlineParser()
block.register("block", parse_block_thing)
inline.register("inline", parse_inline_thing)
block.parse(BlockState())
inline.parse(InlineState())
