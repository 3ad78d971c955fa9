"""Helpers shared by the command modules."""

import json

import click


def echo_json(data):
    """Print ``data`` as indented JSON (the ``--json`` output of every command)."""
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def url_of(ctx):
    """The store URL given to the main group (None means env var, then default)."""
    return ctx.find_root().obj["url"]
