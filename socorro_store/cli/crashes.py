"""``socorro-store demo``: the main job, one library call into :mod:`socorro_store.demo`."""

import sys

import click

from ..demo import run_demo
from ..schema.labels import label
from ..schema.timeparse import parse_day
from .common import AsciiInt, echo_json, local_url_option, url_of
from .reports import bars_with_data


@click.command()
@click.option("--crashes", "count", type=AsciiInt(1), default=2000, show_default=True,
              help="Number of synthetic crashes to submit and process.")
@click.option("--processors", type=AsciiInt(1, 64), default=4, show_default=True,
              help="Processor threads draining the queue.")
@click.option("--dump-kb", type=AsciiInt(0), default=150, show_default=True,
              help="Average minidump size in KB (0: metadata-only crashes).")
@click.option("--seed", type=AsciiInt(), default=None, help="Random seed (default: a new one per run).")
@click.option("--day", default=None, metavar="YYYY-MM-DD",
              help="Submit the crashes over this whole UTC day (default: today, up to now).")
@local_url_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def demo(ctx, count, processors, dump_kb, seed, day, local_url, as_json):
    """Simulate a collector, processors and readers on the store, then print what it holds.

    The crashes are today's, submitted up to now (so `web` shows them at once), unless --day."""
    url = url_of(ctx, local_url)
    day = parse_day(day, "--day")[0].date() if day is not None else None
    with click.progressbar(length=count, label="collect + process", file=sys.stderr) as bar:
        report = run_demo(url, crashes=count, processors=processors, seed=seed, dump_kb=dump_kb, day=day,
                          progress=bar.update)
    if as_json:
        echo_json(report)
        return
    click.echo(f"crashes submitted        {report['crashes_submitted']}")
    click.echo(f"crashes processed        {report['crashes_processed']}")
    click.echo(f"stored for {report['day']}    {report['crashes_stored_for_day']}")
    sizes = report["queue_sizes"]
    click.echo(f"queue drained            {'yes' if report['queue_drained'] else 'NO'} "
               f"(standard {sizes['standard']}, legacy {sizes['legacy']}, priority {sizes['priority']})")
    click.echo(f"unique signatures        {report['unique_signatures_for_day']}")
    click.echo(f"processing errors        {report['processing_errors_for_day']}")
    click.echo(f"hang pairs               {report['hang_pairs_for_day']}")
    click.echo("top signatures:")
    for item in report["top_signatures"]:
        click.echo(f"  {item['count']:6d}  {label(item['signature'])}")
    click.echo("hourly counts (submitted_crash_reports):")
    for line in bars_with_data(report["hourly_counts"].items(), "hour"):
        click.echo(line)
    click.echo(f"lifecycle throughput     {report['crashes_per_second']} crashes/s "
               f"({report['elapsed_seconds']} s)")


COMMANDS = [demo]
