"""Option sets every command shares, so each takes the same --protocol/--rules/--cache-dir/--no-cache/-j."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from tracer.config.packs import load_protocols
from tracer.model.protocol import Protocol

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class PackOptions:
    protocols: tuple[str, ...]
    rule_files: tuple[str, ...]
    cache_dir: str | None
    no_cache: bool
    jobs: int

    def packs(self) -> list[Protocol]:
        return load_protocols(list(self.protocols) or None, list(self.rule_files))

    @property
    def use_cache(self) -> bool:
        return not self.no_cache


def pack_options(func: F) -> F:
    """--protocol, --rules, --cache-dir, --no-cache, -j; the command receives ``packs: PackOptions``."""
    options = [
        click.option("--protocol", "protocols", multiple=True,
                     help="Protocol pack to apply (repeatable; default: all that fit the tree)."),
        click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False),
                     help="Extra protocol pack (TOML) to load."),
        click.option("--cache-dir", type=click.Path(file_okay=False),
                     help="Summary cache (default $TRACER_CACHE_DIR, else $XDG_CACHE_HOME/tracer or ~/.cache/tracer)."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the summary cache."),
        click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None,
                     help="Parallel parser processes (default: CPU count)."),
    ]

    def wrapper(protocols, rule_files, cache_dir, no_cache, jobs, **kwargs):  # type: ignore[no-untyped-def]
        return func(packs=PackOptions(tuple(protocols), tuple(rule_files), cache_dir, no_cache, jobs or 0), **kwargs)

    functools.update_wrapper(wrapper, func)  # keeps the options already declared (__click_params__)
    del wrapper.__wrapped__  # type: ignore[attr-defined]  # click must see the wrapper's own signature
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


def write_output(text: str, out_file: str | None) -> None:
    if out_file:
        from tracer.present.files import write_text_file

        write_text_file(out_file, text)
    else:
        click.echo(text, nl=False)
