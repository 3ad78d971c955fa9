"""Helpers shared by the command modules."""

import json

import click


def echo_json(data):
    """Print ``data`` as indented JSON (the ``--json`` output of every command)."""
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def url_of(ctx, local_url=None):
    """The store URL: the command's own ``--url``, else the main group's (None means env var,
    then default)."""
    return local_url or ctx.find_root().obj["url"]


def local_url_option(command):
    """``--url`` on a command itself (``socorro-store serve --url …``), overriding the global one."""
    return click.option("--url", "local_url", default=None, metavar="URL",
                        help="Store URL (overrides the global --url).")(command)
