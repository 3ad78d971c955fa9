"""The ``socorro-store`` command: a thin click layer, one library call per command.

Each command group lives in its own module here and is registered below.  Errors of the library
(:class:`~socorro_store.errors.SocorroStoreError`) become one line on stderr: exit code 2 for bad
input or usage (:data:`BAD_INPUT`), exit code 1 for a failure (not found, no store, backend
unavailable or failing, a failed job, a corrupt stream, a file that cannot be read or written).
"""

import importlib
import sys

import click

from ..config import ENV_VAR
from ..errors import ConfigError, InvalidArgument, SocorroStoreError, SpecError
from ..jobs.runs import JobLeaseHeld

# Modules that each define COMMANDS, a list of click commands to register on the main group.
COMMAND_MODULES = ["tables", "serve", "crashes", "jobs", "crash", "reports", "transfer", "raw", "web"]

#: Errors that mean "the command was asked something wrong" (exit 2).  A job whose lease another
#: run holds also exits 2, as ``rollup`` documents: try again later, nothing failed.
BAD_INPUT = (InvalidArgument, ConfigError, SpecError, JobLeaseHeld)


def exit_code_of(exc):
    """2 for bad input or usage, 1 for any other library error (a failure)."""
    return 2 if isinstance(exc, BAD_INPUT) else 1


def describe_os_error(exc):
    """``No such file or directory: '/no/such/dir/x'``: the reason and the path, on one line."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{reason}: {exc.filename!r}" if exc.filename is not None else reason


class _Group(click.Group):
    """Turns library errors into one-line messages with exit code 2 (bad input) or 1 (failure),
    and click's usage errors (unknown option, bad value) into one line with exit code 2."""

    def main(self, *args, standalone_mode=True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:  # UsageError, BadParameter, FileError, …
            click.echo(f"Error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SocorroStoreError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exit_code_of(exc))
        except OSError as exc:  # a file the command reads or writes (-o, --dir, --access-log): never a traceback
            click.echo(f"Error: {describe_os_error(exc)}", err=True)
            sys.exit(1)


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("socorro-store")
    except PackageNotFoundError:
        return "unknown"


@click.group(cls=_Group)
@click.version_option(_version(), "--version", prog_name="socorro-store", message="%(prog)s %(version)s")
@click.option("--url", envvar=ENV_VAR, default=None, metavar="URL",
              help=f"Store URL (default: ${ENV_VAR}, else embedded://./socorro-data).")
@click.pass_context
def main(ctx, url):
    """socorro-store: Socorro's HBase crash storage, on HBase or an embedded engine."""
    ctx.obj = {"url": url}


for _name in COMMAND_MODULES:
    for _command in importlib.import_module(f"{__name__}.{_name}").COMMANDS:
        main.add_command(_command)

