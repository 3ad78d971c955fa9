"""Batch jobs: ``rollup``, ``expire``, ``reconcile-queue``, ``verify-indexes``, ``jobs list|show``.

Each command is one library call.  Long jobs draw a progress bar on stderr (not with ``--json``).
A job already running elsewhere, or another job holding a shared lease it needs (``counters``,
``indexes``): the command says who holds the lease and exits 2.
"""

import json
from datetime import datetime, timezone

import click

from ..jobs import expiry, rollup, scrutiny
from ..jobs.runs import get_run, list_runs
from ..schema.timeparse import parse_duration
from .common import (SummaryGroup, echo_json, emit_list, list_format_options, open_existing, open_existing_store,
                     phased_progress_bar)


def _print_table(report):
    for table, counts in report.items():
        click.echo(f"{table:45s} " + "  ".join(f"{k.upper()}={v}" for k, v in counts.items()))


@click.command("rollup")
@click.option("--until", default=None, metavar="T", help="Roll up intervals ending before T (ISO 8601; default now).")
@click.option("--grace", default="1h", show_default=True, help="An interval is closed this long after it ends.")
@click.option("--since", default=None, metavar="DATE", help="Recompute every day from DATE (default: since the last run).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def rollup_command(ctx, until, grace, since, as_json):
    """Make counters exact for closed intervals and roll them up (job 'rollup')."""
    grace_s = parse_duration(grace)
    progress, close = phased_progress_bar(as_json)
    with open_existing(ctx) as backend:
        try:
            report = rollup.run_rollup(backend, until=until, grace_s=grace_s, since=since, progress=progress)
        finally:
            close()
    if as_json:
        echo_json(report)
        return
    click.echo(f"run {report['run_id']}: cutoff {report['cutoff']}, {report['days']} day(s), "
               f"{report['months']} month(s), {report['years']} year(s), {report['crashes_read']} crashes read")
    click.echo(f"counter cells written {report['cells_written']}, deleted {report['cells_deleted']}, "
               f"drift {report['drift'] or 'none'}")
    if report.get("kept_intervals"):
        click.echo(f"left alone (crashes there could not be counted): {report['kept_intervals']} interval(s), "
                   f"e.g. {', '.join(report['kept_examples'][:5])}; {report['unreadable_rows']} unreadable "
                   "crash row(s)")
        for example in report["unreadable_examples"][:5]:
            click.echo(f"  unreadable {example['crash_id']}: {example['reason']}")
    for example in report["drift_examples"]:
        click.echo(f"  drift {example['table']} {example['row']} {example['column']}: "
                   f"live {example['live']} -> exact {example['exact']}")


@click.command("expire")
@click.option("--minute-days", default=7, show_default=True, help="metrics minute rows kept (days).")
@click.option("--hour-days", default=90, show_default=True, help="metrics hour rows kept (days).")
@click.option("--signature-hours", default=48, show_default=True,
              help="signature hour counters kept (hours).")
@click.option("--signature-days", default=30, show_default=True,
              help="signature day counters kept (days).")
@click.option("--signature-months", default=2, show_default=True,
              help="signature month counters kept (months).")
@click.option("--signature-years", default=2, show_default=True,
              help="signature year counters kept (years).")
@click.option("--claim-days", default=2, show_default=True,
              help="processed crashes' claim histories kept (days after their minute).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def expire_command(ctx, minute_days, hour_days, signature_hours, signature_days, signature_months,
                   signature_years, claim_days, as_json):
    """Delete counter detail past retention that a rolled-up coarser level holds, and old claim
    histories of processed crashes (job 'expire')."""
    retention = expiry.Retention(minute_days, hour_days, signature_hours, signature_days, signature_months,
                                 signature_years, claim_days)
    with open_existing(ctx) as backend:
        report = expiry.run_expire(backend, retention)
    if as_json:
        echo_json(report)
    else:
        for key, value in report.items():
            click.echo(f"{key}: {value}")


@click.command("reconcile-queue")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def reconcile_queue_command(ctx, as_json):
    """Recompute the crash_report_queues sizes from the queue indexes (job 'reconcile-queue')."""
    with open_existing(ctx) as backend:
        report = scrutiny.run_reconcile_queue(backend)
    if as_json:
        echo_json(report)
        return
    for queue, size in report["after"].items():
        click.echo(f"{queue:10s} {report['before'][queue]} -> {size}")
    click.echo(f"counters corrected: {report['corrected']}")


@click.command("verify-indexes")
@click.option("--repair", is_flag=True, help="Recreate missing pointers; delete old orphans.")
@click.option("--orphan-age", default="10m", show_default=True, help="Only orphans older than this are deleted.")
@click.option("--since", default=None, metavar="DATE",
              help="Only crashes whose crash-id date is DATE or later (their rows are read by day prefix).")
@click.option("--until", default=None, metavar="DATE", help="With --since: only crash-id dates before DATE.")
@click.option("--drop-foreign", is_flag=True,
              help="With --repair: delete pointers in Socorro's layouts (FOREIGN) whose crash row exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def verify_indexes_command(ctx, repair, orphan_age, since, until, drop_foreign, as_json):
    """Check every pointer of the 7 index tables against its crash row; --repair fixes them.

    Each pointer is VALID, MISSING, ORPHAN, FOREIGN, UNREADABLE or MALFORMED (job 'verify-indexes').

    Exit 0: nothing to fix (a check), or everything found was fixed (--repair).  Exit 1: a check
    found MISSING, ORPHAN (MALFORMED rows, in no layout, are orphans too) or UNREADABLE pointers,
    or a repair left some (orphans younger than --orphan-age, unreadable crash rows).  FOREIGN
    pointers (Socorro's own index layouts) are reported, never a failure.  Exit 2: bad usage, or
    another run holds the indexes lease.
    """
    age = parse_duration(orphan_age)
    if drop_foreign and not repair:
        raise click.UsageError("--drop-foreign needs --repair")
    progress, close = phased_progress_bar(as_json)
    with open_existing(ctx) as backend:
        try:
            report = scrutiny.run_verify_indexes(backend, repair=repair, orphan_age_s=age, since=since, until=until,
                                                 drop_foreign=drop_foreign, progress=progress)
        finally:
            close()
    if as_json:
        echo_json(report)
    else:
        _print_table(report)
    if scrutiny.problems_left(report, repair):
        ctx.exit(1)


@click.group("jobs", cls=SummaryGroup)
def jobs_group():
    """Runs of the batch jobs (from the jobs table)."""


def _when(ms):
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if ms else "-"


@jobs_group.command("list")
@click.option("--job", default=None, help="Only runs of this job.")
@click.option("--limit", default=50, show_default=True, help="At most N runs.")
@list_format_options
@click.pass_context
def list_command(ctx, job, limit, fmt):
    """Runs, newest first: id, job, status, attempt, phase, start, end, error."""
    with open_existing(ctx) as backend:
        runs = list_runs(backend, job, limit)
    items = [run.to_dict() for run in runs]
    columns = ["run_id", "job", "status", "attempt", "phase", "started_ms", "ended_ms", "host", "pid", "error"]

    def plain(item):
        return (f"{item['run_id']}  {item['job']:16s} {item['status']:9s} attempt {item['attempt']}  "
                f"{item['phase']:8s} {_when(item['started_ms'])} -> {_when(item['ended_ms'])}  "
                f"{item['host']}:{item['pid']}" + (f"  {item['error']}" if item["error"] else ""))

    emit_list(items, fmt, columns, plain)


@jobs_group.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def show_command(ctx, run_id, as_json):
    """Everything recorded about one run, with its log."""
    with open_existing(ctx) as backend:
        run = get_run(backend, run_id)
    if as_json:
        echo_json(run.to_dict())
        return
    for key, value in run.to_dict().items():
        if key == "log":
            continue
        if key.endswith("_ms"):
            value = _when(value)
        elif isinstance(value, (dict, list)):  # JSON, not a Python repr
            value = json.dumps(value, sort_keys=True, default=str)
        click.echo(f"{key:13s} {'-' if value is None or value == '' else value}")
    for line in run.log:
        click.echo(f"log: {line}")


COMMANDS = [rollup_command, expire_command, reconcile_queue_command, verify_indexes_command, jobs_group]


@click.command("expire-crashes")
@click.option("--before", required=True, metavar="DATE", help="Delete crashes submitted before DATE (YYYY-MM-DD, UTC).")
@click.option("--dry-run", is_flag=True, help="Count what would go; delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def expire_crashes_command(ctx, before, dry_run, as_json):
    """Delete every crash submitted before DATE with all its index pointers; its counts stay
    (job 'expire-crashes').  A bad or future date exits 2."""
    from ..jobs import retention
    retention.parse_before(before)  # exit 2 before the store is opened
    progress, close = phased_progress_bar(as_json)
    with open_existing_store(ctx) as store:  # its search index loses the crashes too
        try:
            report = retention.run_expire_crashes(store.backend, before, dry_run=dry_run, progress=progress,
                                                  on_deleted=store.search.crashes_deleted)
        finally:
            close()
    if as_json:
        echo_json(report)
        return
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"run {report['run_id']}: {verb} {report['crashes'] if dry_run else report['deleted']} crash(es) "
               f"submitted before {report['before']} ({report['days']} day(s) read); counters kept")


COMMANDS.append(expire_crashes_command)
