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
    package: str = ""  # --package NAME: the framework package is called NAME (a fork)
    replace_builtin: bool = False  # --replace-builtin: a --rules pack may take a built-in pack's name
    plugins: tuple[str, ...] = ()  # --plugin PATH: plugins of the host framework, read with it

    def packs(self) -> list[Protocol]:
        return load_protocols(list(self.protocols) or None, list(self.rule_files), self.replace_builtin,
                              self.package)

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
        click.option("--replace-builtin", is_flag=True,
                     help="A --rules pack with a built-in pack's name replaces it (else that is an error)."),
        click.option("--package", "package", default=None, metavar="NAME",
                     help="The framework's package is called NAME (a fork under another name; "
                          "default: found by the tree's structure)."),
        click.option("--plugin", "plugins", multiple=True, type=click.Path(exists=True, file_okay=False),
                     help="A plugin of the framework (its checkout or unpacked wheel), read with the tree: its "
                          "model registrations, runner subclasses and patches count (repeatable)."),
        click.option("--cache-dir", type=click.Path(file_okay=False),
                     help="Summary cache (default $TRACER_CACHE_DIR, else $XDG_CACHE_HOME/tracer or ~/.cache/tracer)."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the summary cache."),
        click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None,
                     help="Parallel parser processes (default: CPU count)."),
    ]

    def wrapper(protocols, rule_files, replace_builtin, package, plugins, cache_dir, no_cache,  # type: ignore[no-untyped-def]
                jobs, **kwargs):
        return func(packs=PackOptions(tuple(protocols), tuple(rule_files), cache_dir, no_cache, jobs or 0,
                                      package or "", replace_builtin, tuple(plugins)), **kwargs)

    functools.update_wrapper(wrapper, func)  # keeps the options already declared (__click_params__)
    del wrapper.__wrapped__  # type: ignore[attr-defined]  # click must see the wrapper's own signature
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


FORMATS = ("text", "json", "sarif", "github")


def format_option(func: F) -> F:
    """--format, and ruff's name for it, --output-format."""
    return click.option("--format", "--output-format", "fmt", type=click.Choice(FORMATS), default="text",
                        show_default=True, help="Output format.")(func)


def write_output(text: str, out_file: str | None, color: bool | None = None) -> None:
    """``color``: True keeps the escape codes the text was painted with (click would strip
    them off a terminal: --color always and FORCE_COLOR ask for them there)."""
    if out_file:
        from tracer.present.files import write_text_file

        write_text_file(out_file, text)
    else:
        click.echo(text, nl=False, color=color)


def _selectors(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--select a,b --select c` -> (a, b, c), as ruff takes them."""
    return tuple(s.strip() for v in values for s in v.split(",") if s.strip())


@dataclass(frozen=True)
class RuleOptions:
    """--select/--ignore/--extend-select (slugs or prefixes, ruff's way) and --config FILE."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    config_file: str | None = None

    def settings(self, start: str | None, packs: PackOptions | None = None, fail_on: str | None = None) -> Settings:
        """[tool.tracer] (--config FILE, else found from START up), the command line over it."""
        from tracer.checks.selection import Layer, resolve
        from tracer.config.settings import LintConfig, discover_config, load_config_file, merge

        if self.config_file:
            config = load_config_file(self.config_file)
        elif start:
            config = discover_config(start)
        else:
            config = LintConfig()
        for note in config.notes:
            click.echo(f"tracer: {note}", err=True)
        if packs is not None:
            config = merge(config, packs.protocols, packs.rule_files, fail_on, package=packs.package,
                           replace_builtin=packs.replace_builtin, plugins=packs.plugins)
        elif fail_on:
            config = merge(config, fail_on=fail_on)
        selection = resolve([Layer(config.select, config.ignore, config.extend_select),
                             Layer(self.select, self.ignore, self.extend_select)])
        return Settings(config, selection)


@dataclass(frozen=True)
class Settings:
    config: Any  # tracer.config.settings.LintConfig
    selection: Any  # tracer.checks.selection.Selection

    def packs(self) -> list[Protocol]:
        return load_protocols(list(self.config.protocols) or None, list(self.config.rules),
                              self.config.replace_builtin, self.config.package)

    def narrow(self, result: Any) -> Any:
        """A ScanResult with only the selected rules' findings, outside the excluded files."""
        import dataclasses

        from tracer.checks.selection import apply
        from tracer.config.settings import is_excluded

        result = apply(result, self.selection)
        if self.config.exclude:
            result = dataclasses.replace(result, findings=tuple(
                f for f in result.findings if not is_excluded(f.file, self.config.exclude)))
        return result


def rule_options(func: F) -> F:
    """--select, --ignore, --extend-select, --config; the command receives ``rules: RuleOptions``."""
    options = [
        click.option("--select", "select", multiple=True, metavar="RULES",
                     help="Report only these rules: slugs or prefixes, comma-separated, or ALL "
                          "(replaces [tool.tracer] select). An info rule named here is printed."),
        click.option("--ignore", "ignore", multiple=True, metavar="RULES",
                     help="Do not report these rules (slugs or prefixes; added to [tool.tracer] ignore)."),
        click.option("--extend-select", "extend_select", multiple=True, metavar="RULES",
                     help="Report these rules on top of the selection."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False, exists=True), metavar="FILE",
                     help="Settings file: a pyproject.toml ([tool.tracer]) or a TOML file holding the table "
                          "(default: the first pyproject.toml with [tool.tracer] in PATH or above)."),
    ]

    def wrapper(select, ignore, extend_select, config_file, **kwargs):  # type: ignore[no-untyped-def]
        chosen = _selectors(select)
        return func(rules=RuleOptions(chosen or None, _selectors(ignore), _selectors(extend_select), config_file),
                    **kwargs)

    functools.update_wrapper(wrapper, func)
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]
