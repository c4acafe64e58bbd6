import re
from re import sub as re_sub

_tab = re.compile(r"\t")


def expand(m):
    return "    "


def upper(m):
    return m.group(0).upper()


def squash(m):
    return " "


def never(m):
    return ""


def lowered(m):
    return m.group(0).lower()


class Cleaner:
    def __init__(self):
        self.space = re.compile(r"\s+")

    def clean(self, text):
        return self.space.sub(squash, text)

    def count(self, text):
        return self.space.subn(squash, text)[1]

    def find(self, text):
        return self.space.match(text)  # no callback: match takes none


def tabs(text):
    return _tab.sub(expand, text)


def words(text):
    return re.sub(r"\w+", upper, text)


def kw(text):
    return re_sub(r"\w+", repl=lowered, string=text)


def plain(text):
    return re.sub(r"x", "y", text) + _tab.sub("  ", text)


def main():
    c = Cleaner()
    c.clean(tabs(words(kw(plain("a\tb")))))
    c.count("a  b")
    c.find("a")
