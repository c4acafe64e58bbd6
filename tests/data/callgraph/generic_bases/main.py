"""A generic base (``class Impl(Base[int])``) enters the MRO like a plain one."""
from typing import Generic, TypeVar

T = TypeVar("T")


class Base(Generic[T]):
    def run(self):
        return self.step()

    def step(self):
        return 1


class Impl(Base[int]):
    def go(self):
        return self.run()


Impl().go()
