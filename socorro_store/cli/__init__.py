"""The ``socorro-store`` command: a thin click layer, one library call per command.

Each command group lives in its own module here and is registered below.  Errors of the library
(:class:`~socorro_store.errors.SocorroStoreError`) become one line on stderr: exit code 2 for bad
input or usage (:data:`BAD_INPUT`), exit code 1 for a failure (not found, no store, backend
unavailable or failing, a failed job, a corrupt stream, a file that cannot be read or written).
A reader that closes stdout early (``| head``) is a normal end: exit 0, nothing on stderr; but
for ``export``, whose stream is incomplete without its end (exit 1, one line).
"""

import importlib
import shlex
import sys

import click

from ..config import ENV_VAR
from ..errors import ConfigError, InvalidArgument, SocorroStoreError, SpecError, StoreNotFound
from ..jobs.runs import JobLeaseHeld
from .common import SummaryGroup, stdout_to_devnull

# Modules that each define COMMANDS, a list of click commands to register on the main group.
COMMAND_MODULES = ["tables", "serve", "crashes", "jobs", "crash", "reports", "dimensions", "transfer", "raw", "web",
                   "search", "derive"]

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


_CREATE_HINT = "run `socorro-store tables create`"


def message_of(exc, ctx):
    """The one-line message of a library error.  The ``tables create`` hint of a missing store
    names the ``--url`` the user gave (copied without it, it would create ./socorro-data)."""
    message = str(exc)
    given = (ctx.obj or {}).get("given_url") if ctx is not None else None
    if isinstance(exc, StoreNotFound) and given:
        message = message.replace(_CREATE_HINT, f"run `socorro-store --url {shlex.quote(given)} tables create`")
    return message


def _stdout_is_closed():
    """True when stdout's reader has gone (a pipe whose other end is closed reports POLLERR).
    A BrokenPipeError from anything else (a socket to a server) is then still a failure."""
    try:
        import select  # noqa: PLC0415

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), no file descriptor: take it as stdout
        return True


def _on_broken_pipe():
    """stdout's reader went away (``| head``): a normal end, exit 0 (stdout pointed at devnull
    first: :func:`~.common.stdout_to_devnull`).  A broken pipe that is not stdout's is a failure
    like any other OSError (one line, exit 1); a command whose output is incomplete without its
    end (``export``) says so itself."""
    if not _stdout_is_closed():
        click.echo("Error: Broken pipe", err=True)
        sys.exit(1)
    stdout_to_devnull()
    sys.exit(0)


class _Group(SummaryGroup):
    """Turns library errors into one-line messages with exit code 2 (bad input) or 1 (failure),
    and click's usage errors (unknown option, bad value) into one line with exit code 2.  A closed
    stdout ends any command quietly with exit 0."""

    def main(self, *args, standalone_mode=True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
            sys.stdout.flush()  # what is still buffered: a closed pipe shows here, not at exit
        except BrokenPipeError:
            _on_broken_pipe()
        except click.ClickException as exc:  # UsageError, BadParameter, FileError, …
            click.echo(f"Error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def make_context(self, *args, **kwargs):  # prints --help and --version
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            _on_broken_pipe()

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SocorroStoreError as exc:
            click.echo(f"Error: {message_of(exc, ctx)}", err=True)
            sys.exit(exit_code_of(exc))
        except BrokenPipeError:  # before OSError; click's own handling would exit 1
            _on_broken_pipe()
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
@click.option("--search-url", default=None, metavar="URL",
              help="Search engine URL (default: $SOCORRO_SEARCH_URL, else an embedded store's own directory; "
                   "none: no search).")
@click.pass_context
def main(ctx, url, search_url):
    """socorro-store: Socorro's HBase crash storage, on an embedded engine, HBase or Cloud Bigtable.

    \b
    The store is one URL: --url, else $SOCORRO_STORE_URL, else embedded://./socorro-data.
      embedded://PATH                the embedded engine (SQLite) in directory PATH
      hbase://HOST[:PORT][?OPTIONS]  HBase, through its Thrift gateway
      bigtable://PROJECT/INSTANCE    Cloud Bigtable (pip install 'socorro-store[bigtable]')
    """
    given = url if ctx.get_parameter_source("url") is click.core.ParameterSource.COMMANDLINE else None
    ctx.obj = {"url": url, "given_url": given, "search_url": search_url}


for _name in COMMAND_MODULES:
    for _command in importlib.import_module(f"{__name__}.{_name}").COMMANDS:
        main.add_command(_command)

