"""``socorro-store web``: the read-only crash-stats pages (:mod:`socorro_store.web`) until Ctrl-C."""

import click

from ..errors import ConfigError
from .common import AsciiFloat, AsciiInt, local_url_option, open_existing_store


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=AsciiInt(0, 65535),
              help="Port (0 picks a free one; the real port is printed).")
@click.option("--unredacted", is_flag=True,
              help="Show protected fields and serve dump downloads (Socorro's privileged view).")
@click.option("--public-fields", default=None, metavar="FILE", type=click.Path(dir_okay=False),
              help="The allowlist of fields shown without --unredacted (JSON; default: the package's "
                   "public_fields.json, modelled on Socorro's public permissions).")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (no authentication!).")
@click.option("--threads", default=16, show_default=True, type=AsciiInt(1, 1024),
              help="Requests served at once (one thread each); more wait to be accepted.")
@click.option("--request-timeout", default=30.0, show_default=True, type=AsciiFloat(0, min_open=True),
              help="Seconds a request waits for the store before answering 503.")
@click.option("--access-log", default=None, metavar="FILE",
              help="Append one line per request: time, client, method, path, -, ms, status (- for stdout).")
@local_url_option
@click.pass_context
def web(ctx, host, port, unredacted, public_fields, allow_remote, threads, request_timeout, access_log, local_url):
    """Serve crash-stats pages of the store (top crashers, signatures, reports) over HTTP.

    Read-only: the pages read counters and indexes, never write.  The store must exist.
    """
    try:
        from ..gateway.access_log import AccessLog
        from ..web.public_fields import PublicFields
        from ..web.server import check_web_address, make_web_server
    except ImportError as exc:  # Flask is an extra: socorro-store[web]
        raise ConfigError(f"the web view needs Flask ({exc.name} is missing): pip install 'socorro-store[web]'") from None
    check_web_address(host, allow_remote)  # bad usage (exit 2) before a missing store (exit 1)
    allowlist = PublicFields.load(public_fields)  # a bad file: exit 2, before the store is opened
    store = open_existing_store(ctx, local_url)
    log = None
    try:
        log = AccessLog(access_log) if access_log is not None else None  # a bad path fails before listening
        server = make_web_server(store, host, port, unredacted, allow_remote, threads=threads, access_log=log,
                                 request_timeout=request_timeout, public_fields=allowlist)
        click.echo(f"serving http://{host}:{server.server_port}/ (read-only{', unredacted' if unredacted else ''})")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    finally:
        if log is not None:
            log.close()
        store.close()


COMMANDS = [web]
