"""A finding's fields, read back from its message and hint through the check's templates
(the catalogue's messages are ``str.format`` templates: the fields a fix needs are in them)."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping


def _pattern(template: str) -> re.Pattern[str]:
    parts, seen = [], set()
    for literal, name, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name in seen or not name.isidentifier():
            parts.append(f"(?P={name})" if name in seen else ".+?")
        else:
            seen.add(name)
            parts.append(f"(?P<{name}>.+?)")
    return re.compile("".join(parts), re.DOTALL)


def read_fields(messages: Mapping[str, str], hints: Mapping[str, str], message: str,
                hint: str) -> tuple[str, dict[str, str]] | None:
    """(variant, fields) of the first variant whose message template matches ``message`` whole
    (its hint's fields join them where the hint matches too); None when none matches."""
    for variant, template in messages.items():
        found = _pattern(template).fullmatch(message)
        if found is None:
            continue
        fields = dict(found.groupdict())
        hinted = _pattern(hints.get(variant, hints.get("", ""))).fullmatch(hint)
        if hinted is not None:
            fields.update({k: v for k, v in hinted.groupdict().items() if k not in fields})
        return variant, fields
    return None
