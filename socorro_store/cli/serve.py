"""``socorro-store serve`` (the embedded store behind HBase's Thrift1 protocol) and
``socorro-store ping`` (does the store answer?)."""

import click

from ..backends import open_backend
from ..config import parse_url, with_options
from ..errors import ConfigError
from ..crashstore import counter_deriver, cut_over
from ..crashstore.search_feed import pending_changes
from ..schema import keys as K
from ..schema import table_admin as admin
from .common import AsciiFloat, AsciiInt, echo_json, local_url_option, open_existing, url_of


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=9090, show_default=True, type=AsciiInt(0, 65535),
              help="Port (0 picks a free one; the real port is printed).")
@click.option("--transport", type=click.Choice(["buffered", "framed"]), default="buffered", show_default=True,
              help="Thrift transport, as HBase's hbase.regionserver.thrift.framed.")
@click.option("--protocol", type=click.Choice(["binary", "compact"]), default="binary", show_default=True,
              help="Thrift protocol, as HBase's hbase.regionserver.thrift.compact.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (no authentication!).")
@click.option("--max-frame-mb", default=2.0, show_default=True, type=AsciiFloat(min=0, min_open=True),
              help="Largest framed-transport frame, in MB (HBase's default is 2).")
@click.option("--idle-timeout", default=60.0, show_default=True, type=AsciiFloat(min=0, min_open=True),
              help="Seconds before an idle connection is closed.")
@click.option("--workers", default=32, show_default=True, type=AsciiInt(min=1),
              help="Connections served at once (one worker thread each).")
@click.option("--create", is_flag=True,
              help="Create the store and its tables first if missing (as `tables create`); without it a "
                   "missing store is refused.")
@click.option("--access-log", default=None, metavar="FILE",
              help="Append one line per call: time, client, method, table, rows, ms, outcome (- for stdout).")
@local_url_option
@click.pass_context
def serve(ctx, host, port, transport, protocol, allow_remote, max_frame_mb, idle_timeout, workers, create,
          access_log, local_url):
    """Serve an embedded:// store over HBase Thrift1 until SIGTERM/SIGINT.

    The store must exist (`socorro-store tables create`), unless --create: a mistyped path is
    refused, not served empty.
    """
    from ..gateway import serve as run_gateway  # thriftpy2 only when serving
    from ..gateway.access_log import AccessLog
    from ..gateway.server import check_listen_address

    url = parse_url(url_of(ctx, local_url))
    if url.scheme != "embedded":
        raise ConfigError(f"serve needs an embedded:// store URL, not {url.text!r}")
    check_listen_address(host, allow_remote)  # bad usage (exit 2) before a missing store (exit 1)
    if create:
        with open_backend(url.text) as backend:
            admin.create_tables(backend)
    else:
        open_existing(ctx, local_url).close()  # StoreNotFound (exit 1) with the hint; creates nothing
    log = AccessLog(access_log) if access_log is not None else None  # a bad path fails before listening

    def ready(server):
        server.access_log = log

    try:
        run_gateway(url.path, host=host, port=port, transport=transport, protocol=protocol,
                    allow_remote=allow_remote, max_frame_bytes=int(max_frame_mb * 1024 * 1024),
                    idle_timeout_s=idle_timeout, max_workers=workers, sync=url.options["sync"],
                    ready_callback=ready)
    finally:
        if log is not None:
            log.close()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_context
def ping(ctx, as_json):
    """Exit 0 when the store answers (one cheap call: list the tables), else 1 with one line.

    An hbase:// store gets one attempt within its timeout_ms (no retries; a server that does not
    answer is left for the next one); a missing embedded store is refused with the `tables create`
    hint.  For a URL naming several Thrift servers (hbase://H1:P1,H2:P2) each is asked once and
    the line says which answer: the store answers while one does.
    """
    # One attempt: a dead server is reported within the timeout, not after the retry budget.
    url = with_options(url_of(ctx), retries=0) if parse_url(url_of(ctx)).scheme == "hbase" else url_of(ctx)
    with open_backend(url, create=False) as backend:
        answer = admin.ping(backend)
        if as_json and K.CHANGES in backend.list_tables():  # how far the derived views lag
            waiting, age = pending_changes(backend)  # the search feed's
            answer["changes_waiting"] = waiting
            lags = [age]
            if cut_over.enabled(backend):
                answer["counters_waiting"], counters_age = counter_deriver.waiting(backend)
                answer["counters_lag_seconds"] = counters_age and round(counters_age, 3)
                # cells written beside the deriver: an older version's saves still incrementing
                answer["counters_foreign_writes"] = counter_deriver.foreign_writes(backend)["count"]
                lags.append(counters_age)
            lags = [lag for lag in lags if lag is not None]
            answer["derivation_lag_seconds"] = round(max(lags), 3) if lags else None
    if as_json:
        echo_json({"url": parse_url(url_of(ctx)).text, **answer})
        return
    line = f"ok: {parse_url(url_of(ctx)).text} answers ({answer['tables']} tables)"
    if "servers" in answer:
        line += "; servers: " + ", ".join(
            f"{item['server']} ok" if item["ok"] else f"{item['server']} DOWN ({item['error']})"
            for item in answer["servers"])
    click.echo(line)


COMMANDS = [serve, ping]
