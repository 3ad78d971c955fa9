"""``raw get`` and ``raw scan``: any table's rows as stored (Socorro's get_full_row and scans).

Binary values are shown safely: printable text as is, anything else with ``\\xNN`` escapes;
an 8-byte value is also shown as the big-endian signed integer a counter cell holds.
"""

import json

import click

from ..errors import NotFound
from ..schema.keys import decode_counter
from .common import AsciiInt, SummaryGroup, echo_json, open_existing


def show_bytes(value):
    """Printable ASCII as is (backslash doubled), every other byte as ``\\xNN``."""
    return "".join(chr(b) if 32 <= b < 127 and b != 0x5C else "\\\\" if b == 0x5C else f"\\x{b:02x}"
                   for b in value)


def to_bytes(text):
    """A row key typed on the command line: ``\\xNN`` escapes allowed (as :func:`show_bytes`)."""
    return text.encode("utf-8", "surrogateescape").decode("unicode_escape").encode("latin-1") \
        if "\\" in text else text.encode("utf-8")


def cell_view(value):
    view = {"value": show_bytes(value), "size": len(value)}
    if len(value) == 8:
        view["as_counter"] = decode_counter(value)
    return view


def row_view(row, cells):
    return {"row": show_bytes(row), "cells": {show_bytes(c): cell_view(v) for c, v in sorted(cells.items())}}


def print_row(view):
    click.echo(view["row"])
    for column, cell in view["cells"].items():
        shown = cell["value"] if cell["size"] <= 200 else cell["value"][:200] + f"… ({cell['size']} bytes)"
        counter = f"  (= {cell['as_counter']})" if "as_counter" in cell else ""
        click.echo(f"  {column} = {shown}{counter}")


@click.group("raw", cls=SummaryGroup)
def raw_group():
    """Rows of any table, as stored."""


@raw_group.command("get")
@click.argument("table")
@click.argument("row")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def get(ctx, table, row, as_json):
    """Every cell of one row (ROW may use \\xNN escapes)."""
    with open_existing(ctx) as backend:
        cells = backend.get_row(table, to_bytes(row))
    if not cells:
        raise NotFound(f"no row {row!r} in table {table}")
    view = row_view(to_bytes(row), cells)
    if as_json:
        echo_json(view)
    else:
        print_row(view)


@raw_group.command("scan")
@click.argument("table")
@click.option("--prefix", default=None, help="Rows starting with this (\\xNN escapes allowed).")
@click.option("--start", default=None, help="First row (inclusive).")
@click.option("--stop", default=None, help="Last row (exclusive).")
@click.option("--limit", type=AsciiInt(1), default=20, show_default=True, help="At most N rows.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines, one row each.")
@click.pass_context
def scan(ctx, table, prefix, start, stop, limit, as_json):
    """Rows of a table in key order."""
    if prefix is not None and (start is not None or stop is not None):
        raise click.UsageError("--prefix excludes --start/--stop")
    with open_existing(ctx) as backend:
        rows = backend.scan(table, prefix=to_bytes(prefix) if prefix is not None else None,
                            start=to_bytes(start) if start is not None else None,
                            stop=to_bytes(stop) if stop is not None else None, limit=limit,
                            page_size=min(limit, 1000))
        for row, cells in rows:
            view = row_view(row, cells)
            if as_json:
                click.echo(json.dumps(view, sort_keys=True))
            else:
                print_row(view)


COMMANDS = [raw_group]
