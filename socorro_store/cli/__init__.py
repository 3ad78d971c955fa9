"""The ``socorro-store`` command: a thin click layer, one library call per command.

Each command group lives in its own module here and is registered below.  Errors of the library
(:class:`~socorro_store.errors.SocorroStoreError`) become one line on stderr and exit code 2.
"""

import importlib
import sys

import click

from ..config import ENV_VAR
from ..errors import SocorroStoreError

# Modules that each define COMMANDS, a list of click commands to register on the main group.
COMMAND_MODULES = ["tables", "serve", "crashes", "jobs"]


class _Group(click.Group):
    """Turns library errors into one-line messages with exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SocorroStoreError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.option("--url", envvar=ENV_VAR, default=None, metavar="URL",
              help=f"Store URL (default: ${ENV_VAR}, else embedded://./socorro-data).")
@click.pass_context
def main(ctx, url):
    """socorro-store: Socorro's HBase crash storage, on HBase or an embedded engine."""
    ctx.obj = {"url": url}


for _name in COMMAND_MODULES:
    for _command in importlib.import_module(f"{__name__}.{_name}").COMMANDS:
        main.add_command(_command)

