"""A finding's identity across edits, in the manner code-scanning tools match alerts.

A finding is its facts (slug, protocol, entry class), where it sits (``anchor``: the
file and the dotted name of the defs around it) and what its code says
(``fingerprint``: a hash of the normalised tokens of the statement it points at:
no whitespace, no comments, local names replaced by a placeholder, attribute
names, literals and operators kept). Moving lines, reformatting a statement over
several lines, renaming a local or adding a comment keep both; editing the
statement keeps the anchor, moving the code into another def or file keeps the
fingerprint. Findings are paired in tiers (:func:`match`): facts + anchor +
fingerprint, then facts + anchor, then facts + fingerprint; what is left on either
side is new or gone.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

from tracer.lint.suppress import SourceLines

_DEF = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+(\w+)")
_MAX_STATEMENT_LINES = 60  # a statement longer than this is hashed by its first lines


class Identity(NamedTuple):
    slug: str
    protocol: str
    entry: str
    anchor: str
    fingerprint: str


def enclosing_def(lines: list[str], number: int) -> str:
    """Dotted name of the defs and classes around line ``number`` (1-based), innermost last."""
    if not 0 < number <= len(lines):
        return ""
    target = lines[number - 1]
    indent = len(target) - len(target.lstrip())
    names = []
    own = _DEF.match(target)
    if own:
        names.append(own.group(3))
    for text in reversed(lines[: number - 1]):
        stripped = text.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("@"):
            continue
        width = len(text) - len(text.lstrip())
        if width >= indent:
            continue
        match = _DEF.match(text)
        if match:
            names.append(match.group(3))
            indent = width
            if width == 0:
                break
    return ".".join(reversed(names))


def statement_tokens(lines: list[str], number: int) -> list[str]:
    """The normalised tokens of the logical line starting at line ``number``: names that are
    not attributes, keywords or the def's own name become ``_``; comments and layout go."""
    if not 0 < number <= len(lines):
        return []
    text = "\n".join(line.lstrip() if i == 0 else line
                     for i, line in enumerate(lines[number - 1:number - 1 + _MAX_STATEMENT_LINES])) + "\n"
    found: list[str] = []
    previous = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or (token.type == tokenize.DEDENT and found):
                break
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
                continue
            value = token.string
            if value in (")", "]", "}") and found and found[-1] == ",":
                found.pop()  # a formatter's trailing comma is layout
            if token.type == tokenize.NAME and not keyword.iskeyword(value) and previous not in (".", "def", "class"):
                value = "_"
            found.append(value)
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a statement cut by the line limit (or a line inside one): what was read stands
    return found


def fingerprint(source: SourceLines, finding: dict) -> str:
    """Hash of the protocol and the normalised statement: stable across moves and layout."""
    lines = source.lines(finding["file"]) if finding.get("file") else []
    tokens = statement_tokens(lines, finding.get("line", 0))
    text = "\n".join([finding.get("protocol") or "", " ".join(tokens)])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def anchor(source: SourceLines, finding: dict) -> str:
    """``file::Class.method`` around the finding (``file::`` at module level, ``""`` without a file)."""
    if not finding.get("file"):
        return ""
    return f"{finding['file']}::{enclosing_def(source.lines(finding['file']), finding.get('line', 0))}"


def add_fingerprints(findings: list[dict], root: str | Path, source: SourceLines | None = None) -> None:
    source = source or SourceLines(root)
    for finding in findings:
        finding["fingerprint"] = fingerprint(source, finding)
        finding["anchor"] = anchor(source, finding)


def keys(finding: dict) -> list[tuple[str, str, str, str]]:
    """One (slug, protocol, entry, fingerprint) per affected entry (runner findings: entry "")."""
    entries = finding.get("entries") or ([finding["entry"]] if finding.get("entry") else [""])
    return [(finding["slug"], finding.get("protocol") or "", e, finding["fingerprint"]) for e in entries]


def identities(finding: dict) -> list[Identity]:
    """One identity per affected entry (runner findings: entry "")."""
    return [Identity(slug, proto, entry, finding.get("anchor") or "", fp) for slug, proto, entry, fp in keys(finding)]


T = TypeVar("T")
U = TypeVar("U")
_TIERS: tuple[Callable[[Identity], Hashable], ...] = (
    lambda i: i,
    lambda i: (i.slug, i.protocol, i.entry, i.anchor) if i.anchor else None,
    lambda i: (i.slug, i.protocol, i.entry, i.fingerprint),
)


def match(base: Sequence[tuple[Identity, T]], head: Sequence[tuple[Identity, U]],
          likeness: Callable[[T, U], float] | None = None
          ) -> tuple[list[tuple[T, U]], list[tuple[Identity, T]], list[tuple[Identity, U]]]:
    """(pairs, base items left, head items left): each item pairs at most once, the strictest
    tier first, so an edited statement pairs with its old self only when no exact twin is there;
    among several candidates of a tier, the one ``likeness`` rates highest (e.g. its message)."""
    left_base = list(range(len(base)))
    left_head = list(range(len(head)))
    pairs: list[tuple[int, int]] = []
    for tier in _TIERS:
        waiting: dict[Hashable, list[int]] = {}
        for i in left_base:
            key = tier(base[i][0])
            if key is not None:
                waiting.setdefault(key, []).append(i)
        taken_base: set[int] = set()
        taken_head: set[int] = set()
        for j in left_head:
            key = tier(head[j][0])
            queue = waiting.get(key) if key is not None else None
            if not queue:
                continue
            pick = 0
            if likeness is not None and len(queue) > 1:
                pick = max(range(len(queue)), key=lambda k: likeness(base[queue[k]][1], head[j][1]))
            i = queue.pop(pick)
            pairs.append((i, j))
            taken_base.add(i)
            taken_head.add(j)
        left_base = [i for i in left_base if i not in taken_base]
        left_head = [j for j in left_head if j not in taken_head]
    return ([(base[i][1], head[j][1]) for i, j in pairs], [base[i] for i in left_base], [head[j] for j in left_head])


def message_likeness(base: tuple[dict, bool], head: tuple[dict, bool]) -> float:
    """How alike two findings' messages are (a tie-break among candidates of one tier)."""
    return difflib.SequenceMatcher(None, base[0].get("message", ""), head[0].get("message", "")).ratio()
