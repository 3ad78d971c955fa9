"""``queue status``, ``signatures top|show`` and ``metrics show``: what the counters and queues say."""

import functools
import re

import click

from ..crashstore.reports import DEFAULT_TOP, top_signatures
from ..errors import InvalidArgument, NotFound
from ..schema.keys import parse_metrics_row
from ..schema.labels import label
from ..schema.timeparse import date_problem
from .common import AsciiInt, SummaryGroup, echo_json, emit_list, list_format_options, open_existing_store
from .crash import range_options, time_range

BAR_WIDTH = 40
#: crash-stats' top crashers: the last 7 days unless a period is asked
TOP_DEFAULT_DAYS = 7
#: A metrics row that starts like an interval (a digit) must be one; other names are Socorro's.
_INTERVAL_LIKE = re.compile(r"[0-9]")


def bars(points):
    """Lines ``label  count  ####`` scaled to the largest count (plain text)."""
    peak = max([n for _label, n in points] + [1])
    return [f"  {label}  {n:7d}  {'#' * (n * BAR_WIDTH // peak)}" for label, n in points]


def bars_with_data(points, unit):
    """:func:`bars` of ``points`` (``[(label, count)]`` in time order, one per ``unit``) from
    the first with crashes to the last, and a line naming each run of empty points left out at
    either end (the hours of today still to come, the weeks before a signature appeared)."""
    points = list(points)
    busy = [i for i, (_label, n) in enumerate(points) if n]
    if not busy:
        return [f"  no crashes in these {len(points)} {unit}s"] if points else []

    def left_out(run, where):
        count = len(run)
        span = run[0][0] if count == 1 else f"{run[0][0]} to {run[-1][0]}"
        return f"  ({count} {where} {unit}{'s' if count > 1 else ''} with no crashes left out: {span})"

    first, last = busy[0], busy[-1]
    lines = [left_out(points[:first], "earlier")] if first else []
    lines += bars(points[first:last + 1])
    if last + 1 < len(points):
        lines.append(left_out(points[last + 1:], "later"))
    return lines


@click.group("queue", cls=SummaryGroup)
def queue_group():
    """The processing queues."""


@queue_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def queue_status(ctx, as_json):
    """Per queue: size by the counters and by the index, oldest item, live leases; dead letters."""
    with open_existing_store(ctx) as store:
        status = store.queue_status()
    if as_json:
        echo_json(status)
        return
    click.echo(f"{'queue':9s} {'counted':>8s} {'indexed':>8s} {'leased':>7s}  oldest")
    for name, q in status["queues"].items():
        oldest = f"{q['oldest']} ({q['oldest_age_s']:.0f}s ago)" if q["oldest"] else "-"
        click.echo(f"{name:9s} {q['counted']:8d} {q['indexed']:8d} {q['leased']:7d}  {oldest}")
    click.echo(f"dead-lettered {status['dead_lettered']}")
    search = status.get("search") or {}
    lag = f", oldest {search['lag_seconds']:.1f}s ago" if search.get("lag_seconds") is not None else ""
    indexed = f", {search['documents']} crashes indexed" if search.get("documents") is not None else ""
    click.echo(f"search {'(not configured) ' if not search.get('configured') else ''}"
               f"feed: {search.get('pending', 0)} changes waiting{lag}{indexed}")
    derivation = status.get("derivation") or {}
    if derivation.get("cut_over") is None:
        click.echo("counters: incremented live (not cut over)")
    else:
        lag = f", oldest {derivation['lag_seconds']:.1f}s ago" if derivation.get("lag_seconds") is not None else ""
        click.echo(f"counters derived: {derivation.get('waiting', 0)} changes waiting{lag}")


@click.group("signatures", cls=SummaryGroup)
def signatures_group():
    """Signature counters: the top-crashers report and one signature's history."""


def _dimension_options(command):
    command = click.option("--os", "os_name", default=None, metavar="O", help="Only crashes of this OS (os_name).")(command)
    command = click.option("--version", default=None, metavar="V", help="Only this version (needs --product).")(command)
    return click.option("--product", default=None, metavar="P", help="Only crashes of this product.")(command)


_TOP_COLUMNS = ["rank", "signature", "count", "share", "previous_rank", "previous_count", "movement"]


@signatures_group.command("top")
@functools.partial(range_options, default=f"the last {TOP_DEFAULT_DAYS} days, today included")
@_dimension_options
@click.option("--process-type", default=None, metavar="T",
              help="Only crashes of this process type (parent, content, gpu, ...): whole days, no other filter.")
@click.option("--limit", type=AsciiInt(1), default=DEFAULT_TOP, show_default=True,
              help="How many signatures to rank.")
@list_format_options
@click.pass_context
def top(ctx, day, start, end, product, version, os_name, process_type, limit, fmt):
    """Top crashers of the period (default: the last 7 days, today included, as crash-stats),
    with their rank in the period before (from the counters);
    of one product, version (with --product), OS or process type when asked.  --json prints the whole report;
    --nl, --csv and --table its rows (rank, signature, count, share, previous rank and count,
    movement)."""
    if version is not None and product is None:
        raise click.UsageError("--version needs --product (versions are per product)")
    start, end = time_range(day, start, end, default_days=TOP_DEFAULT_DAYS)
    with open_existing_store(ctx) as store:
        if process_type is None:
            report = store.top_signatures(start, end, limit, product=product, version=version, os=os_name)
        else:  # ranked per process type only (no counter column): the rankings, read directly
            store.live_counters.settle()
            report = top_signatures(store.backend, start, end, limit, product, version, os_name, process_type)
    if fmt == "json":
        echo_json(report)
        return
    if fmt is not None:
        emit_list(report["signatures"], fmt, _TOP_COLUMNS, str)
        return
    dimension = report.get("dimension")
    if dimension:
        asked = ", ".join(f"{k} {label(v)}" for k, v in dimension["filter"].items())
        counted = ", ".join(f"{k} {label(v)}" for k, v in dimension["counted_as"].items())
        click.echo(f"filter: {asked}" + ("" if dimension["counted_as"] == dimension["filter"] else
                                           f" (over the cardinality cap: counted as {counted})"))
    submitted = report["submitted"] if report["submitted"] is not None else "n/a"
    click.echo(f"top crashers {report['start']} -> {report['end']}: {report['total']} crashes with a "
               f"signature ({submitted} submitted); previous period from {report['previous_start']}")
    click.echo(f"{'rank':>4s} {'count':>7s} {'share':>7s}  {'before':>9s}  signature")
    for item in report["signatures"]:
        before = (f"#{item['previous_rank']} {item['movement']}" if item["previous_rank"] else "new")
        click.echo(f"{item['rank']:4d} {item['count']:7d} {item['share'] * 100:6.2f}%  {before:>9s}  {label(item['signature'])}")


@signatures_group.command("show")
@click.argument("signature")
@_dimension_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def show(ctx, signature, product, version, os_name, as_json):
    """A signature's counters at every level, when it was first seen, and charts of its counts."""
    if version is not None and product is None:
        raise click.UsageError("--version needs --product (versions are per product)")
    with open_existing_store(ctx) as store:
        report = store.signature_report(signature, product=product, version=version, os=os_name)
    if not report["counters"]:  # a typo would otherwise chart 78 zeros and exit 0
        raise NotFound(f"no counters for signature {signature!r} (`socorro-store signatures top` lists "
                       "the signatures of a period)")
    if as_json:
        echo_json(report)
        return
    click.echo(f"signature   {label(report['signature'])}")
    first = report["first_seen"]
    click.echo(f"first seen  {first['start']} ({first['level']})" if first else "first seen  never")
    for level, heading in (("year", "yearly"), ("month", "monthly"), ("day", "daily"), ("hour", "hourly")):
        values = report["counters"].get(level, {})
        if values:
            click.echo(f"{heading:8s}: " + ", ".join(f"{row} {n}" for row, n in list(values.items())[-6:]))
    click.echo("hourly, last 48 hours:")
    for line in bars_with_data(report["hourly"], "hour"):
        click.echo(line)
    click.echo("daily, last 30 days:")
    for line in bars_with_data(report["daily"], "day"):
        click.echo(line)


def check_interval_row(row):
    """InvalidArgument unless ``row`` names an interval's metrics row, saying why in the row's own
    text (the library's message shows the row as bytes): an impossible date, or the forms taken."""
    try:
        parse_metrics_row(row)
    except InvalidArgument:
        problem = date_problem(row)
        if problem is not None:
            raise InvalidArgument(f"not a metrics row: {row!r} is not a valid date: {problem}") from None
        raise InvalidArgument(f"not a metrics row: {row!r} (expected yyyy, yyyy-mm, yyyy-mm-dd, yyyy-mm-ddThh, "
                              "yyyy-mm-ddThh:mm or crash_report_queues)") from None


@click.group("metrics", cls=SummaryGroup)
def metrics_group():
    """Rows of the metrics table."""


@metrics_group.command("show")
@click.argument("row")
@click.option("--product", default=None, metavar="P", help="The counters of this product.")
@click.option("--version", default=None, metavar="V", help="With --product: of this version.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def metrics_show(ctx, row, product, version, as_json):
    """The counters of a metrics row (yyyy[-mm[-dd[Thh[:mm]]]] or crash_report_queues), or those
    of one product (and version) with --product [--version].

    An impossible interval (2026-13-45) exits 2; a row with no counters exits 1."""
    if version is not None and product is None:
        raise click.UsageError("--version needs --product (versions are per product)")
    if _INTERVAL_LIKE.match(row):  # Socorro's own row names pass to the library as they are
        check_interval_row(row)  # InvalidArgument (exit 2) for a malformed or impossible interval
    with open_existing_store(ctx) as store:
        values = store.get_metrics(row, product=product, version=version)
    if not values:
        what = f" for product {product!r}" + (f" version {version!r}" if version else "") if product else ""
        raise NotFound(f"no counters in metrics row {row!r}{what}")
    if as_json:
        echo_json(values)
        return
    for name, n in sorted(values.items()):
        click.echo(f"{name:50s} {n}")


COMMANDS = [queue_group, signatures_group, metrics_group]
