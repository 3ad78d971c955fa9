"""``socorro-store crash …`` (one crash) and ``crashes list`` (a time range of crashes)."""

import functools
import itertools
import sys
from datetime import datetime, timedelta, timezone

import click

from ..errors import InvalidArgument, InvalidCrashID, NotFound
from ..schema.crash_ids import parse_crash_id
from ..schema.labels import label
from ..schema.timeparse import FIRST_DAY, parse_day, parse_timestamp
from .common import AsciiInt, SummaryGroup, echo_json, emit_list, list_format_options, open_existing_store


def last_days(days, now=None):
    """``(start, end)`` of the last ``days`` UTC days, today included (``now``: default the clock)."""
    today = (now or datetime.now(timezone.utc)).replace(hour=0, minute=0, second=0, microsecond=0)
    end = today + timedelta(days=1)
    return end - timedelta(days=days), end


def time_range(day, start, end, default_days=None):
    """``(start, end)`` of ``--day D`` or ``--from T --to T`` (one of them), or with neither the
    last ``default_days`` days (:func:`last_days`; None: one of them is required)."""
    if day is None and start is None and end is None and default_days is not None:
        return last_days(default_days)
    if day is not None:
        if start is not None or end is not None:
            raise click.UsageError("give --day or --from/--to, not both")
        return parse_day(day, "--day")  # InvalidArgument for a bad or impossible date, 9999-12-31 included
    if start is None or end is None:
        raise click.UsageError("give --day D, or both --from T and --to T")
    first, last = parse_timestamp(start, "--from"), parse_timestamp(end, "--to")
    if first.date() < FIRST_DAY:  # the store's time keys begin there (the library's message shows a repr)
        raise InvalidArgument(f"--from {start} is before {FIRST_DAY.isoformat()}, the earliest time the store keeps")
    if first >= last:  # an empty or reversed range would print nothing and exit 0
        raise InvalidArgument(f"--from {start} is not before --to {end}")
    return first, last


def range_options(command, default=None):
    """``--day``, ``--from`` and ``--to``; ``default``: what neither means, for the help."""
    day_help = "One UTC day (YYYY-MM-DD)." + (f"  Without --day or --from/--to: {default}." if default else "")
    command = click.option("--to", "end", default=None, metavar="T", help="End (exclusive), ISO 8601.")(command)
    command = click.option("--from", "start", default=None, metavar="T", help="Start, ISO 8601.")(command)
    return click.option("--day", default=None, metavar="D", help=day_help)(command)


class CrashIdType(click.ParamType):
    """A crash id as people paste it: the bare id, ``bp-<id>`` or a crash-stats report URL
    (:func:`~socorro_store.schema.crash_ids.parse_crash_id`); the command gets the bare id.
    ``-`` (stdin) passes through for the commands that take it."""

    name = "crash_id"

    def convert(self, value, param, ctx):
        if value == "-":
            return value
        return parse_crash_id(value)  # InvalidCrashID: exit 2, one line (cli/__init__.py)


CRASH_ID = CrashIdType()


@click.group("crash", cls=SummaryGroup)
def crash_group():
    """Read, dump, reprocess or delete one crash.

    CRASH_ID is the id (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxDYYMMDD), bp-<id>, or a crash-stats report
    URL (https://crash-stats.mozilla.org/report/index/<id>).
    """


@crash_group.command("show")
@click.argument("crash_id", type=CRASH_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def show(ctx, crash_id, as_json):
    """Processing state, times, signature, product, version and dumps of a crash."""
    with open_existing_store(ctx) as store:
        info = store.crash_summary(crash_id)
    if as_json:
        echo_json(info)
        return
    claim = info["claim"]
    click.echo(f"crash        {info['crash_id']}")
    click.echo(f"product      {info['product']} {info['version']}" + (f" ({info['process_type']})"
                                                                      if info["process_type"] else ""))
    click.echo(f"submitted    {info['submitted']}")
    click.echo(f"processed    {info['processed_at'] or 'no'}")
    click.echo(f"signature    {label(info['signature']) if info['signature'] is not None else '-'}")
    click.echo(f"queues       {', '.join(info['queues']) or '-'}"
               + (f"  (legacy_processing {info['legacy_processing']})" if info["legacy_processing"] is not None else ""))
    click.echo("claim        " + ("-" if claim is None else
                                  f"{claim['processor']} ({'live' if claim['live'] else 'expired'} lease)")
               + f"  attempts {info['attempts']}")
    for name, size in info["dumps"].items():
        click.echo(f"dump         {name} {size} bytes")


@crash_group.command("raw")
@click.argument("crash_id", type=CRASH_ID)
@click.option("--json", "as_json", is_flag=True, help="JSON (what it prints anyway: every command takes --json).")
@click.pass_context
def raw(ctx, crash_id, as_json):
    """Print the raw crash (annotations) as JSON."""
    with open_existing_store(ctx) as store:
        echo_json(store.get_raw_crash(crash_id))


@crash_group.command("processed")
@click.argument("crash_id", type=CRASH_ID)
@click.option("--unredacted", is_flag=True, help="Keep the forbidden keys (email, url, …).")
@click.option("--json", "as_json", is_flag=True, help="JSON (what it prints anyway: every command takes --json).")
@click.pass_context
def processed(ctx, crash_id, unredacted, as_json):
    """Print the processed crash as JSON (redacted unless --unredacted)."""
    with open_existing_store(ctx) as store:
        echo_json(store.get_unredacted_processed(crash_id) if unredacted else store.get_processed(crash_id))


@crash_group.command("dumps")
@click.argument("crash_id", type=CRASH_ID)
@click.argument("directory", metavar="DIR", required=False, type=click.Path(file_okay=False))
@click.option("--dir", "dir_option", default=None, type=click.Path(file_okay=False),
              help="DIR given as an option (as older releases took it).")
@click.option("--json", "as_json", is_flag=True, help="Print the paths as JSON ({dump name: path}).")
@click.pass_context
def dumps(ctx, crash_id, directory, dir_option, as_json):
    """Write each dump to DIR/<crash id>.<dump name>.dump; print the paths.

    DIR is created if needed (0700); the dump files are 0600: a minidump holds the crashed
    process's memory."""
    if (directory is None) == (dir_option is None):
        raise click.UsageError("give the directory once: crash dumps CRASH_ID DIR")
    directory = directory if directory is not None else dir_option
    with open_existing_store(ctx) as store:
        paths = store.get_raw_dumps_as_files(crash_id, directory, suffix=".dump")
    if as_json:
        echo_json(paths)
    else:
        for path in paths.values():
            click.echo(path)


def _ids(crash_ids):
    """The ids given, with ``-`` meaning one id per line of stdin (any form :data:`CRASH_ID`
    takes; blank lines skipped).  A bad line is refused before anything is done."""
    out = []
    for crash_id in crash_ids:
        if crash_id != "-":
            out.append(crash_id)
            continue
        for number, line in enumerate(sys.stdin, 1):
            if line.strip():
                try:
                    out.append(parse_crash_id(line.strip()))
                except InvalidCrashID as exc:
                    raise InvalidCrashID(f"stdin line {number}: {exc}") from None
    if not out:
        raise click.UsageError("no crash id given")
    return out


@crash_group.command("reprocess")
@click.argument("crash_ids", nargs=-1, required=True, type=CRASH_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def reprocess(ctx, crash_ids, as_json):
    """Queue crashes for reprocessing (the priority queue).  ``-`` reads ids from stdin."""
    ids = _ids(crash_ids)
    with open_existing_store(ctx) as store:
        queued = store.enqueue_priority(ids)
    if as_json:
        echo_json({"requested": len(ids), "queued": queued})
    else:
        click.echo(f"queued {queued} of {len(ids)} for reprocessing (a pending request is not queued twice)")


@crash_group.command("delete")
@click.argument("crash_ids", nargs=-1, required=True, type=CRASH_ID)
@click.option("--yes", is_flag=True, help="Really delete (required).")
@click.option("--missing-ok", is_flag=True, help="Skip ids with no crash instead of failing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def delete(ctx, crash_ids, yes, missing_ok, as_json):
    """Delete crashes with every pointer, queue row and claim, and what they counted.  Needs --yes."""
    if not yes:
        raise click.UsageError("refusing to delete crashes without --yes")
    ids = _ids(crash_ids)
    with open_existing_store(ctx) as store:
        deleted = store.delete_crashes(ids, missing_ok=missing_ok)
    if as_json:
        echo_json({"deleted": deleted})
    else:
        for crash_id in deleted:
            click.echo(f"deleted {crash_id}")


@click.group("crashes", cls=SummaryGroup)
def crashes_group():
    """Crashes of a time range."""


@crashes_group.command("list")
@functools.partial(range_options, default="today")
@click.option("--signature", default=None, help="Only crashes of this signature.")
@click.option("--limit", type=AsciiInt(0), default=None, help="At most N crashes.")
@list_format_options
@click.pass_context
def list_command(ctx, day, start, end, signature, limit, fmt):
    """Crash ids submitted in the range (default: today, UTC), in submission order; with --json,
    --nl, --csv or --table also each crash's submitted time, signature and state."""
    start, end = time_range(day, start, end, default_days=1)
    with open_existing_store(ctx) as store:
        if signature is not None and not store.get_signature_counters(signature):
            # as `signatures show`: a signature never counted is a typo, not an empty result
            raise NotFound(f"no counters for signature {signature!r} (`socorro-store signatures top` lists "
                           "the signatures of a period)")
        items = iter(store.list_crashes(start, end, signature, limit, details=fmt is not None))
        first = next(items, None) if fmt is not None else None  # its keys are the columns
        columns = sorted(first) if first else ["crash_id"]
        emit_list(itertools.chain([first] if first is not None else [], items), fmt, columns, str)


COMMANDS = [crash_group, crashes_group]
