"""Helpers shared by the command modules."""

import io
import itertools
import json
import os
import re
import sys

import click

from ..backends import open_backend
from ..config import parse_url
from ..crashstore.store import CrashStore
from ..schema.labels import label
from ..search.engines import resolve_search_url


# ASCII only: int() and float() also take "8_000", "+80", " 80" and other scripts' digits
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


class AsciiInt(click.IntRange):
    """``click.IntRange`` of ASCII digits only (an optional ``-``)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not _INTEGER.fullmatch(value):
            self.fail(f"{value!r} is not a whole number in ASCII digits", param, ctx)
        return super().convert(value, param, ctx)


class AsciiFloat(click.FloatRange):
    """``click.FloatRange`` of ASCII digits and a point only (an optional ``-``)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not _DECIMAL.fullmatch(value):
            self.fail(f"{value!r} is not a number in ASCII digits", param, ctx)
        return super().convert(value, param, ctx)


class SummaryGroup(click.Group):
    """A command group whose ``--help`` lists each command with its whole first sentence,
    wrapped: click's default cuts it at the terminal's width ("Simulate a collector, processors
    and readers on the..."), which reads as a fragment."""

    def format_commands(self, ctx, formatter):
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def stdout_to_devnull():
    """Point stdout at devnull, once its reader has gone: as Python's documentation advises
    (signal module, "Note on SIGPIPE"), so that the interpreter's final flush of what is still
    buffered has nowhere to fail (a traceback at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def echo_json(data):
    """Print ``data`` as indented JSON (the ``--json`` output of every command)."""
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def url_of(ctx, local_url=None):
    """The store URL: the command's own ``--url``, else the main group's (None means env var,
    then default).  A command's own ``--url`` is noted as the one the user gave (for the
    ``tables create`` hint of a missing store)."""
    root = ctx.find_root().obj
    if local_url:
        root["given_url"] = local_url
    return local_url or root["url"]


def local_url_option(command):
    """``--url`` on a command itself (``socorro-store serve --url …``), overriding the global one."""
    return click.option("--url", "local_url", default=None, metavar="URL",
                        help="Store URL (overrides the global --url).")(command)


def open_existing(ctx, local_url=None):
    """The backend of the command's URL, never creating a store (StoreNotFound, exit 1)."""
    return open_backend(url_of(ctx, local_url), create=False)


def open_existing_store(ctx, local_url=None, search_url=None):
    """A :class:`CrashStore` on an existing store (see :func:`open_existing`, :func:`store_on`)."""
    return store_on(ctx, open_existing(ctx, local_url), local_url, search_url)


def store_on(ctx, backend, local_url=None, search_url=None):
    """A :class:`CrashStore` on ``backend`` (closed if this fails), searching as ``open_store``
    does: ``search_url``, else the global ``--search-url``, else ``$SOCORRO_SEARCH_URL``, else an
    embedded store's own directory (without it, ``web`` and ``queue status`` would see no
    search there, and ``import`` would leave its crashes unfed)."""
    try:
        directory = backend.directory if parse_url(url_of(ctx, local_url)).scheme == "embedded" else None
        search_url = search_url or (ctx.find_root().obj or {}).get("search_url")  # the command's, else the global one
        return CrashStore(backend, search_url=resolve_search_url(search_url, directory))
    except BaseException:
        backend.close()
        raise


def phased_progress_bar(as_json):
    """``(callback(phase, done, total), close)`` drawing one click bar a phase on stderr; no bar
    with ``--json`` or when stderr is not a terminal (a log or a pipe keeps its one-line errors,
    with no stray phase labels)."""
    if as_json or not sys.stderr.isatty():
        return None, lambda: None
    state = {}

    def update(phase, done, total):
        bar = state.get("bar")
        if bar is None or state.get("phase") != phase:
            if bar is not None:
                bar.render_finish()
            bar = click.progressbar(length=max(1, total), label=phase, file=sys.stderr)
            state.update(bar=bar, phase=phase, done=0)
        bar.length = max(1, total)  # a total found as the work goes (an import's input)
        bar.update(done - state["done"])
        state["done"] = done

    def close():
        if state.get("bar") is not None:
            state["bar"].render_finish()

    return update, close


def progress_bar(as_json, label):
    """``(callback(done, total), close)``: :func:`phased_progress_bar` of one phase, ``label``."""
    update, close = phased_progress_bar(as_json)
    if update is None:
        return None, close
    return (lambda done, total: update(label, done, total)), close


# -- list output -------------------------------------------------------------------------------
#
# One convention for every list command (crashes list, jobs list, tables list):
#   (plain)   one item per line, for reading and for `xargs`;
#   --json    one JSON array of objects, streamed item by item (a big list never sits in memory);
#   --nl      newline-delimited JSON: one object per line (for `jq -c`, line tools, huge lists);
#   --csv     a header row, then one row per item (nested values as JSON);
#   --table   aligned columns with a header (reads the whole list first, to size the columns);
#             the one format only people read: the store's markers (##null##…) in words.
# Commands that print one thing (crash show, jobs show, a report) print one indented JSON object.

LIST_FORMATS = ("json", "nl", "csv", "table")
LIST_FORMAT_HELP = {"json": "One JSON array of objects.", "nl": "JSON lines: one object per line.",
                    "csv": "CSV with a header row.", "table": "Aligned columns with a header."}


def list_format_options(command):
    """``--json``, ``--nl``, ``--csv`` and ``--table`` (one at most) as the ``fmt`` argument."""
    for name in reversed(LIST_FORMATS):
        command = click.option(f"--{name}", "fmt", flag_value=name, default=None,
                               help=LIST_FORMAT_HELP[name])(command)
    return command


def _cell(value):
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list, tuple)) else str(value)


def emit_list(items, fmt, columns, plain):
    """Print ``items`` (dicts with ``columns``) in ``fmt`` (None: ``plain(item)`` per line)."""
    if fmt is None:
        for item in items:
            click.echo(plain(item))
    elif fmt == "nl":
        for item in items:
            click.echo(json.dumps(item, sort_keys=True, default=str))
    elif fmt == "json":
        first = True
        for item in items:
            click.echo(("[\n  " if first else ",\n  ") + json.dumps(item, sort_keys=True, default=str), nl=False)
            first = False
        click.echo("[]" if first else "\n]")
    elif fmt == "csv":
        import csv

        line = io.StringIO()
        writer = csv.writer(line, lineterminator="")
        for row in itertools.chain([columns], ([_cell(item.get(c)) for c in columns] for item in items)):
            line.seek(0)
            line.truncate()
            writer.writerow(row)
            click.echo(line.getvalue())
    else:
        rows = [[_cell(label(item.get(c))) for c in columns] for item in items]
        widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
        for row in [list(columns), ["-" * w for w in widths]] + rows:
            click.echo("  ".join(value.ljust(w) for value, w in zip(row, widths)).rstrip())
