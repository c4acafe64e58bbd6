"""A module's skeleton: its source with every function body blanked, for the outline.

The outline (``index.outline``) needs the class headers, the module- and class-level
statements, the line span of every def and the imports anywhere (a function-level
import binds a name the code uses) — never a statement of a function body. Parsing a
model file whole costs the same whether or not its bodies are read, so this module
blanks them first, by text: each body becomes blank lines, its imports (re-indented to
the body's first column, on their own lines) and a ``pass`` on the body's last code
line, so that every line number, every def's end line and every import stay where they
were. ``ast.parse`` of the skeleton is several times cheaper than of the module.

The scan is careful rather than clever: strings and comments are masked first (a
docstring line at column 0 or a bracket inside a string never ends a body), a body
ends only at a dedented line outside brackets and line continuations, and anything it
is not sure of keeps the module whole (``None``): tabs in the indentation, a body it
cannot delimit. A module-level ``__getattr__`` (its body is the PEP 562 dispatch the
outline reads) and a one-line body stay as they are. The outline parses the skeleton and, where that
fails, the module itself; ``tests/test_skeleton.py`` compares the outlines of both on
every file of the releases the suite downloads.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from operator import add

# Strings (triple-quoted first) and comments, in one pass; the string's prefix letters
# do not matter for where it ends. A backslash escapes the next character, as in the
# tokenizer (a raw string's \" does not end it either).
_LEXEME = re.compile(
    r'"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*(?:"""|$)'
    r"|'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*(?:'''|$)"
    r'|"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"?'
    r"|'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'?"
    r"|#[^\n]*")
_NOT_NEWLINE = re.compile(r"[^\n]")
STRING_MASK, COMMENT_MASK = "\x00", "\x01"
# Line starts are found after a newline (a literal the regex engine scans for quickly); the
# text is searched with a newline put in front of it, so offsets there are one more.
# ``(?=([ ]*))\1`` takes a line's indentation whole (a lookahead does not backtrack): a
# plain ``[ ]*`` retried every shorter run of spaces on every line that is not a match.
_DEF = re.compile(r"\n(?=([ ]*))\1(?:async[ ]+)?def[ ]+(\w+)")
_HEADER_TOKEN = re.compile(r"[()\[\]{}:]")
_IMPORT = re.compile(r"\n(?=([ ]+))\1(?:from[ ]+[\w.]+[ ]+)?import[ ]")
_CODE = re.compile(r"[^ \n\x01]")
_OPEN = "([{"
_CLOSE = ")]}"
_dedent_cache: dict[int, re.Pattern[str]] = {}


def _mask(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "#":
        return COMMENT_MASK * len(text)
    # the opening quote stays: a line that starts a string starts code (a bare string
    # statement after a method is the class body's, not the method's)
    if "\n" not in text:
        return text[0] + STRING_MASK * (len(text) - 1)
    return text[0] + _NOT_NEWLINE.sub(STRING_MASK, text[1:])


def masked(text: str) -> str:
    """``text`` with the characters of every string and comment replaced (newlines kept,
    every offset unchanged): what is left is the code's own brackets and indentation."""
    return _LEXEME.sub(_mask, text)


def _dedent(indent: int) -> re.Pattern[str]:
    """A line that starts code at column ``indent`` or less (not a masked string's or
    comment's line, not a blank one)."""
    pattern = _dedent_cache.get(indent)
    if pattern is None:
        pattern = _dedent_cache[indent] = re.compile(r"\n(?=([ ]{0,INDENT}))\1[^ \n\x00\x01]".replace("INDENT", str(indent)))
    return pattern


def _balanced(code: str) -> bool:
    return sum(code.count(c) for c in _OPEN) == sum(code.count(c) for c in _CLOSE)


def _header_end(code: str, start: int) -> int:
    """Offset of the colon that ends the def header starting at ``start``; -1 if none."""
    depth = 0
    for token in _HEADER_TOKEN.finditer(code, start):
        char = token.group()
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0:
            return token.start()
    return -1


def _continued(code: str, line_start: int) -> bool:
    """Does the line before offset ``line_start`` end in a backslash continuation?"""
    end = line_start - 1
    return end > 0 and code[end - 1] == "\\"


def skeleton(text: str) -> str | None:
    """``text`` with its function bodies blanked (see the module docstring); None where
    the module is better parsed whole."""
    if "\t" in text or "\f" in text:
        return None
    text = "\n" + text  # every line, the first too, follows a newline (see _DEF)
    code = masked(text)
    lines = text.split("\n")
    # offset of each line's first character: the lengths before it plus its newlines
    starts = list(map(add, accumulate(map(len, lines[:-1]), initial=0), range(len(lines))))
    imports = [found.start() + 1 for found in _IMPORT.finditer(code)]  # line starts, in order
    out = list(lines)
    changed = False
    resume = 0  # a def inside a blanked body is blanked with it
    for found in _DEF.finditer(code):
        if found.start() + 1 < resume:
            continue
        indent = len(found.group(1))
        if indent == 0 and found.group(2) == "__getattr__":
            continue  # PEP 562: the outline reads the imports under its tests
        colon = _header_end(code, found.end())
        if colon < 0:
            return None
        newline = code.find("\n", colon)
        if newline < 0 or _CODE.search(code, colon + 1, newline):
            continue  # a one-line body (or the file's last line): kept as it is
        body_start = newline + 1
        end = _body_end(code, body_start, indent)
        if end is None:
            return None
        first_line = _line_of(starts, body_start)
        last_code = _last_code_line(code, starts, body_start, end)
        if last_code is None:
            return None
        end_line = _line_of(starts, end) if end < len(code) else len(lines)
        kept = _imports(code, lines, starts, imports, body_start, end, indent + 1)
        out[first_line:end_line] = [""] * (end_line - first_line)
        for number, row in kept.items():
            out[number] = row
        if last_code not in kept:
            out[last_code] = " " * (indent + 1) + "pass"
        changed = True
        resume = end
    return "\n".join(out)[1:] if changed else None


def _line_of(starts: list[int], offset: int) -> int:
    """0-based line number of ``offset``."""
    return bisect_right(starts, offset) - 1


def _body_end(code: str, body_start: int, indent: int) -> int | None:
    """Offset of the first line after the body (``len(code)`` at the end of the file):
    a line of code at the def's column or less, outside brackets and continuations."""
    pattern = _dedent(indent)
    position = body_start - 1
    while True:
        found = pattern.search(code, position)
        if found is None:
            return len(code) if _balanced(code[body_start:]) else None
        candidate = found.start() + 1
        if _balanced(code[body_start:candidate]) and not _continued(code, candidate):
            return candidate
        position = found.end()


def _last_code_line(code: str, starts: list[int], body_start: int, end: int) -> int | None:
    """0-based number of the body's last line holding code (a string counts, a comment not)."""
    line = _line_of(starts, max(body_start, end - 1))
    first = _line_of(starts, body_start)
    while line >= first:
        stop = starts[line + 1] - 1 if line + 1 < len(starts) else len(code)
        if _CODE.search(code, starts[line], stop):
            return line
        line -= 1
    return None


def _imports(code: str, lines: list[str], starts: list[int], imports: list[int], body_start: int, end: int,
             column: int) -> dict[int, str]:
    """The body's import statements (``imports``: the offsets of every import line of the
    file), each moved to ``column`` (a body of imports alone is valid at one indentation),
    with their continuation lines; {0-based line: text}."""
    kept: dict[int, str] = {}
    for offset in imports[bisect_left(imports, body_start):bisect_left(imports, end)]:
        first = _line_of(starts, offset)
        number = first
        statement = lines[number].lstrip(" ")
        kept[number] = " " * column + statement
        # continuation lines: inside the import's brackets or after a backslash
        while True:
            stop = starts[number + 1] - 1 if number + 1 < len(starts) else len(code)
            so_far = code[starts[first]:stop]
            if _balanced(so_far) and not so_far.endswith("\\"):
                break
            number += 1
            if number >= len(lines) or starts[number] >= end:
                return kept  # the statement runs past the body: keep what is there
            kept[number] = lines[number]
        if ";" in code[starts[first]:stop]:
            # `import x; y = 1`: the rest of the line is a body statement of its own
            kept[first] = " " * column + statement.split(";")[0]
    return kept
