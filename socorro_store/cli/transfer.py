"""``export`` and ``import``: move a range of crashes between stores as a msgpack stream.

``socorro-store export --day D -o - | socorro-store --url hbase://… import -`` moves a day.
"""

import json

import click

from ..backends import open_backend
from ..errors import StoreNotFound
from ..files import open_private
from ..jobs import transfer
from .common import echo_json, open_existing, progress_bar, stdout_to_devnull, store_on, url_of
from .crash import time_range


@click.command("export")
@click.option("--day", default=None, metavar="D", help="One UTC day (YYYY-MM-DD).")
@click.option("--from", "start", default=None, metavar="D", help="Start (ISO 8601 date or time).")
@click.option("--to", "end", default=None, metavar="D", help="End, exclusive.")
@click.option("-o", "--output", default="-", show_default=True,
              help="File to write (created 0600: it holds unredacted crashes), - for stdout.")
@click.option("--no-dumps", is_flag=True, help="Leave the minidumps out.")
@click.option("--json", "as_json", is_flag=True, help="Print the trailer as JSON on stderr, no bar.")
@click.pass_context
def export_command(ctx, day, start, end, output, no_dumps, as_json):
    """Write the crashes of a range (raw, dumps, processed, state) as a msgpack stream.

    The stream holds unredacted crashes: a file is created 0600, whatever the umask.  A reader
    that stops before the end (``| head -c``) leaves the stream incomplete: exit 1."""
    start, end = time_range(day, start, end)
    bar, close = progress_bar(as_json, "export")
    written = [0, None]

    def progress(done, total):
        written[:] = [done, total]
        if bar is not None:
            bar(done, total)

    try:
        with open_existing(ctx) as backend, _output(output) as out:
            try:
                trailer = transfer.export_crashes(backend, start, end, out, dumps=not no_dumps, progress=progress)
            finally:
                close()
    except BrokenPipeError:
        if output != "-":
            raise  # a file's own broken pipe (a FIFO): a failure like any other OSError
        stdout_to_devnull()
        of = f" of {written[1]}" if written[1] is not None else ""
        raise click.ClickException(f"the export is incomplete: its reader closed the stream before the end "
                                   f"(at crash {written[0]}{of})") from None
    if as_json:
        click.echo(json.dumps(trailer, sort_keys=True), err=(output == "-"))
    else:
        click.echo(f"exported {trailer['crashes']} crashes ({trailer['processed']} processed, "
                   f"{trailer['dumps']} dumps, {trailer['dump_bytes']} bytes)", err=True)


def _output(output):
    """stdout (``-``, kept open) or a private file (:func:`~socorro_store.files.open_private`)."""
    return click.open_file("-", "wb") if output == "-" else open_private(output)


@click.command("import")
@click.argument("source", type=click.File("rb"))
@click.option("--no-rollup", is_flag=True, help="Skip the rollup of the imported days (live counters only).")
@click.option("--create", is_flag=True, help="Create the store and its tables if they do not exist.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def import_command(ctx, source, no_rollup, create, as_json):
    """Import an export stream (FILE, or - for stdin) into an existing store.  Idempotent.

    A store that does not exist is refused, as every reading command refuses it (a mistyped
    --url must not become a new store): create it first, or give --create."""
    progress, close = progress_bar(as_json, "import")
    if create:
        backend = open_backend(url_of(ctx))
    else:
        try:
            backend = open_existing(ctx)
        except StoreNotFound as exc:
            raise StoreNotFound(f"{exc}, or give `import --create`") from None
    with store_on(ctx, backend) as store:
        if create:
            store.create_tables()
        try:
            report = transfer.import_crashes(store, source, progress=progress, rollup_counters=not no_rollup)
        finally:
            close()
        store.settle()  # the imported crashes searchable before the command returns
    if as_json:
        echo_json(report)
        return
    click.echo(f"read {report['crashes']} crashes: imported {report['imported']} "
               f"({report['processed']} processed, {report['queued']} queued), "
               f"skipped {report['skipped']} already stored")
    rolled = report["rollup"]
    if isinstance(rolled, dict):  # its cells_written are corrections: the saves counted each crash live
        click.echo(f"counters: counted as each crash was saved; rollup {rolled['run_id']} recounted "
                   f"{rolled['days']} day(s): {rolled['cells_written']} cell(s) corrected, "
                   f"{rolled['cells_deleted']} deleted")
    elif rolled:
        click.echo(rolled)


COMMANDS = [export_command, import_command]
