"""``socorro-store derive``: the deriver of the store's counters (cut-over, a worker, status)."""

import click

from ..errors import SocorroStoreError

from .common import echo_json, open_existing_store, progress_bar


@click.group("derive")
def derive_group():
    """The counters derived from the crash rows by one leased writer (docs/derivation.md)."""


@derive_group.command("cut-over")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def cut_over_command(ctx, as_json):
    """Move an older version's store to derived counters.

    Stop the older version's writers first, and run `rollup --since` its first day.  Records what every crash is counted under now, then writes the cut-over mark.  A store
    created by this version is cut over from its creation; running it again does nothing."""
    update, close = progress_bar(as_json, "crashes")
    done = {"n": 0}

    def progress(n):
        done["n"] += n
        if update is not None:
            update(done["n"], max(done["n"], 1))

    with open_existing_store(ctx) as store:
        try:
            report = store.cut_over_counters(progress=progress)
        finally:
            close()
    if as_json:
        echo_json(report)
        return
    click.echo(f"derived counters since {report['since']}; {report['crashes']} crash(es) recorded")


@derive_group.command("run")
@click.option("--once", is_flag=True, help="Derive until caught up, then exit (1 if not within --timeout).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="With --once: the most seconds to try.")
@click.pass_context
def run_command(ctx, once, timeout):
    """Run a deriver in the foreground, until Ctrl-C.

    Any number may run: one derives at a time, under the lease, and another takes over within
    30 s when it dies."""
    with open_existing_store(ctx) as store:
        if once:
            if not store.derive(timeout):
                raise SocorroStoreError(f"derivation not caught up within {timeout:g}s")
            click.echo("caught up")
            return
        try:
            store.derive(forever=True)
        except KeyboardInterrupt:
            pass


@derive_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def status_command(ctx, as_json):
    """Whether counters are derived, and how far behind.

    The cut-over time, the change records waiting, and the age of the oldest."""
    with open_existing_store(ctx) as store:
        status = store.derivation_status()
    if as_json:
        echo_json(status)
        return
    if status["cut_over"] is None:
        click.echo("counters: incremented live (not cut over: `socorro-store derive cut-over`)")
        return
    lag = status["lag_seconds"]
    click.echo(f"counters derived since {status['cut_over']}")
    click.echo(f"waiting    {status['waiting']}")
    click.echo(f"lag        {f'{lag:.1f}s' if lag is not None else '-'}")
    if status.get("foreign_writes"):  # an older version's saves incrementing beside the deriver
        click.echo(f"foreign    {status['foreign_writes']} counter cells written beside the deriver "
                   f"(last: {status['last_foreign_write']}): stop every writer; the repair is in "
                   "docs/derivation.md")


COMMANDS = [derive_group]
