"""``export`` and ``import``: move a range of crashes between stores as a msgpack stream.

``socorro-store export --day D -o - | socorro-store --url hbase://… import -`` moves a day.
"""

import json

import click

from ..backends import open_backend
from ..crashstore.store import CrashStore
from ..jobs import transfer
from .common import echo_json, open_existing, progress_bar, url_of
from .crash import time_range


@click.command("export")
@click.option("--day", default=None, metavar="D", help="One UTC day (YYYY-MM-DD).")
@click.option("--from", "start", default=None, metavar="D", help="Start (ISO 8601 date or time).")
@click.option("--to", "end", default=None, metavar="D", help="End, exclusive.")
@click.option("-o", "--output", default="-", show_default=True, help="File to write, - for stdout.")
@click.option("--no-dumps", is_flag=True, help="Leave the minidumps out.")
@click.option("--json", "as_json", is_flag=True, help="Print the trailer as JSON on stderr, no bar.")
@click.pass_context
def export_command(ctx, day, start, end, output, no_dumps, as_json):
    """Write the crashes of a range (raw, dumps, processed, state) as a msgpack stream."""
    start, end = time_range(day, start, end)
    progress, close = progress_bar(as_json, "export")
    with open_existing(ctx) as backend, click.open_file(output, "wb") as out:
        try:
            trailer = transfer.export_crashes(backend, start, end, out, dumps=not no_dumps, progress=progress)
        finally:
            close()
    if as_json:
        click.echo(json.dumps(trailer, sort_keys=True), err=(output == "-"))
    else:
        click.echo(f"exported {trailer['crashes']} crashes ({trailer['processed']} processed, "
                   f"{trailer['dumps']} dumps, {trailer['dump_bytes']} bytes)", err=True)


@click.command("import")
@click.argument("source", type=click.File("rb"))
@click.option("--no-rollup", is_flag=True, help="Skip the rollup of the imported days (live counters only).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def import_command(ctx, source, no_rollup, as_json):
    """Import an export stream (FILE, or - for stdin); creates the tables if needed.  Idempotent."""
    progress, close = progress_bar(as_json, "import")
    backend = open_backend(url_of(ctx))
    with CrashStore(backend) as store:
        store.create_tables()
        try:
            report = transfer.import_crashes(store, source, progress=progress, rollup_counters=not no_rollup)
        finally:
            close()
    if as_json:
        echo_json(report)
        return
    click.echo(f"read {report['crashes']} crashes: imported {report['imported']} "
               f"({report['processed']} processed, {report['queued']} queued), "
               f"skipped {report['skipped']} already stored")
    rolled = report["rollup"]
    if isinstance(rolled, dict):
        click.echo(f"rollup {rolled['run_id']}: {rolled['days']} day(s), counters written {rolled['cells_written']}")
    elif rolled:
        click.echo(rolled)


COMMANDS = [export_command, import_command]
