"""A dataclass's synthesized __init__ calls __post_init__; a class with its own __init__ does not."""
from dataclasses import dataclass


@dataclass
class Config:
    n: int = 1

    def __post_init__(self):
        self.check()

    def check(self):
        return self.n


class Plain:
    def __init__(self):
        self.n = 0

    def __post_init__(self):
        return 0


def build():
    Config()
    Plain()


build()
