"""Helpers shared by the command modules."""

import json
import sys

import click

from ..backends import open_backend
from ..crashstore.store import CrashStore


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


def open_existing(ctx, local_url=None):
    """The backend of the command's URL, never creating a store (StoreNotFound, exit 1)."""
    return open_backend(url_of(ctx, local_url), create=False)


def open_existing_store(ctx, local_url=None):
    """A :class:`CrashStore` on an existing store (see :func:`open_existing`)."""
    backend = open_existing(ctx, local_url)
    try:
        return CrashStore(backend)
    except BaseException:
        backend.close()
        raise


def progress_bar(as_json, label):
    """``(callback(done, total), close)`` drawing a click bar on stderr; no bar with ``--json``
    or when stderr is not a terminal (a log or a pipe keeps its one-line errors)."""
    if as_json or not sys.stderr.isatty():
        return None, lambda: None
    state = {}

    def update(done, total):
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = click.progressbar(length=max(1, total), label=label, file=sys.stderr)
            state["done"] = 0
        bar.update(done - state["done"])
        state["done"] = done

    def close():
        if state.get("bar") is not None:
            state["bar"].render_finish()

    return update, close
