"""A parameter annotated with classes of the tree takes, of what its callers pass, only
instances of those classes and their subclasses: one shared dispatcher hands block and inline
states to every parse function, and each keeps the states its annotation admits. An
annotation naming no class of the tree (Any, a class imported from outside) or none at all
narrows nothing, and a class whose base is unknown (it may be the annotated one) is kept."""
from typing import Any, Optional

from elsewhere import Remote  # outside the tree


class BlockState:
    def append(self):
        return 1


class InlineState:
    def append(self):
        return 2


class SubBlock(BlockState):
    def append(self):
        return 3


class Opaque(make_base()):  # noqa: F821 - its base is not known
    def append(self):
        return 4


class Dispatcher:
    def dispatch(self, func, state):
        return func(state)


def parse_block(state: BlockState):
    return state.append()


def parse_inline(state: "Optional[InlineState]"):
    return state.append()


def parse_loose(state: Any):
    return state.append()


def parse_remote(state: Remote):
    return state.append()


def parse_any(state):
    return state.append()


def run():
    d = Dispatcher()
    for func in (parse_block, parse_inline, parse_loose, parse_remote, parse_any):
        for state in (BlockState(), InlineState(), SubBlock(), Opaque()):
            d.dispatch(func, state)


run()
