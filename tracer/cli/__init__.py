"""Command line: tracer scan | rules | graph | report | explain | lint | baseline | sweep | verify.

The only package that imports click. Every command takes the same option set
for packs and caches (options.py); expected errors are one line
(``tracer: error: ...``) and exit status 2, never a traceback.
Exit status: 0 clean, 1 findings at or above --fail-on, 2 usage or input error.
"""

from __future__ import annotations

import difflib
import os
import sys

from tracer.cli import interrupt

if "pytest" not in sys.modules:  # the command itself: handlers before the slow imports below
    interrupt.install()

import click  # noqa: E402

from tracer import __version__  # noqa: E402
from tracer.config.packs import ProtocolError  # noqa: E402
from tracer.model.errors import UsageError  # noqa: E402
from tracer.model.escape import printable  # noqa: E402


class TracerGroup(click.Group):
    """Turns expected errors into one line and exit status 2, never a traceback;
    loads the commands in ``lazy_commands`` on first use."""

    lazy_commands: dict[str, str] = {}  # name -> "module:attribute"
    summaries: dict[str, str] = {}  # name -> its one line in `tracer --help` (without loading it)

    def main(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        """As a process (not inside a test's CliRunner): once the command has ended, the
        process ends at once with its status. Python's finalization puts the default signal
        handlers back, so a SIGINT arriving then killed the process by the signal (-2)
        after its output was complete."""
        if type(sys.stdout).__module__.startswith("click.testing"):
            return super().main(*args, **kwargs)
        try:
            super().main(*args, **kwargs)
            code = 0
        except SystemExit as exc:
            if isinstance(exc.code, int) or exc.code is None:
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing more can be said there
                pass
        os._exit(code)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in self.lazy_commands:
            module, _, attribute = self.lazy_commands[name].partition(":")
            command = getattr(__import__(module, fromlist=[attribute]), attribute)
            self.add_command(command, name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[no-untyped-def]
        """A mistyped command gets the closest names (`tracer scna` -> did you mean 'scan'?)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.5)
            hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
            ctx.fail(f"no such command {name!r}{hint}")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """One line per command, never cut with "...": the summaries above, else the command's own."""
        rows = []
        for name in self.list_commands(ctx):
            summary = self.summaries.get(name)
            if summary is None:
                command = self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
                summary = command.get_short_help_str(limit=200)
            rows.append((name, summary))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def make_context(self, info_name, args, parent=None, **extra):  # type: ignore[no-untyped-def]
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            _usage_error(exc)
            raise  # pragma: no cover  (_usage_error exits)

    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            if not type(sys.stdout).__module__.startswith("click.testing"):  # not inside a test's CliRunner
                interrupt.install()  # SIGINT/SIGTERM: exit 130/143 within a second, no worker left
            interrupt.armed(True)
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except KeyboardInterrupt as exc:
            interrupt.finish(exc.code if isinstance(exc, interrupt.Interrupted) else 130)
        except click.UsageError as exc:  # click's four-line block, in tracer's one-line shape
            _usage_error(exc)
        except _expected_errors() as exc:
            if interrupt.received():
                interrupt.finish(128 + (interrupt.received() or 2))
            click.echo(f"tracer: error: {printable(exc)}", err=True)
            ctx.exit(2)
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            click.echo(f"tracer: error: {exc.format_message()}", err=True)
            ctx.exit(2)
        except OSError as exc:
            if interrupt.received():
                interrupt.finish(128 + (interrupt.received() or 2))
            click.echo(f"tracer: error: {printable(exc)}", err=True)
            ctx.exit(2)
        except Exception as exc:  # a bug in tracer: say so in one line, keep the detail on request
            if interrupt.received():  # an interrupt that some library turned into another error
                interrupt.finish(128 + (interrupt.received() or 2))
            if "TRACER_DEBUG" in os.environ:
                raise
            click.echo(f"tracer: internal error: {type(exc).__name__}: {printable(exc)} "
                       "(set TRACER_DEBUG=1 for the traceback; please report it)", err=True)
            ctx.exit(2)
        finally:
            interrupt.armed(False)


def _expected_errors() -> tuple[type[Exception], ...]:
    """The errors said in one line: ours, and those of modules the command imported (one it never
    imported raised none): `graph --all` imports neither the scan JSON (~45 ms) nor the configs."""
    found: list[type[Exception]] = [UsageError, ProtocolError]
    for module, name in (("tracer.effective.configs", "ConfigError"), ("tracer.present.scan_json", "ScanJsonError")):
        if module in sys.modules:
            found.append(getattr(sys.modules[module], name))
    return tuple(found)


def _usage_error(exc: click.UsageError) -> None:
    """`tracer: error: <what> (tracer scan --help)`, one line, exit 2 (as for every other error)."""
    message = " ".join(exc.format_message().split())
    if message.startswith("No such option") and ". " in message:  # click's "...'--formt'. Did you mean ..."
        said, _, hint = message.partition(". ")
        hint = hint.rstrip(".").strip("()")
        message = f"{said} ({hint[:1].lower() + hint[1:]})"
    where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
    message = message[:1].lower() + message[1:].rstrip(".")
    click.echo(f"tracer: error: {message}{where}", err=True)
    raise SystemExit(2)


@click.group(cls=TracerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracer")
def main() -> None:
    """Static code-path tracer for LLM inference frameworks (SGLang EAGLE-3/DFlash capture chains)."""


# Commands live in their own modules, imported only when invoked (or listed in
# --help), so that `tracer scan` does not pay for the others at start-up.
TracerGroup.lazy_commands.update({
    "scan": "tracer.cli.scan:scan_command",
    "rules": "tracer.cli.scan:rules_command",
    "graph": "tracer.cli.graph:graph_command",
    "report": "tracer.cli.report:report_command",
    "explain": "tracer.cli.explain:explain_command",
    "lint": "tracer.cli.lint:lint_command",
    "baseline": "tracer.cli.lint:baseline_command",
    "sweep": "tracer.cli.sweep:sweep_command",
    "verify": "tracer.cli.verify:verify_command",
})
TracerGroup.summaries.update({
    "baseline": "Accept every current finding: write the baseline file lint reads.",
    "explain": "One model's chain and the layers it really captures, in words.",
    "graph": "Export the protocol graph (--all: the whole call graph).",
    "lint": "The findings a change introduces and those it fixes, pre-merge.",
    "report": "An HTML report: support matrix, chain pictures, findings.",
    "rules": "Document the finding slugs, or one (tracer rules SLUG).",
    "scan": "Trace every entry class's capture chain in PATH; report findings.",
    "sweep": "Scan every release in a version range; a history page.",
    "verify": "Run the model code; report the layers really captured.",
})

__all__ = ["main"]
