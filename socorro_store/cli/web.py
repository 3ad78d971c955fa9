"""``socorro-store web``: the read-only crash-stats pages (:mod:`socorro_store.web`) until Ctrl-C."""

import click

from ..errors import ConfigError
from .common import local_url_option, open_existing_store


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 picks a free one; the real port is printed).")
@click.option("--unredacted", is_flag=True,
              help="Show protected fields and serve dump downloads (Socorro's privileged view).")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (no authentication!).")
@local_url_option
@click.pass_context
def web(ctx, host, port, unredacted, allow_remote, local_url):
    """Serve crash-stats pages of the store (top crashers, signatures, reports) over HTTP.

    Read-only: the pages read counters and indexes, never write.  The store must exist.
    """
    try:
        from ..web.app import check_web_address, make_web_server
    except ImportError as exc:  # Flask is an extra: socorro-store[web]
        raise ConfigError(f"the web view needs Flask ({exc.name} is missing): pip install 'socorro-store[web]'") from None
    check_web_address(host, allow_remote)  # bad usage (exit 2) before a missing store (exit 1)
    store = open_existing_store(ctx, local_url)
    try:
        server = make_web_server(store, host, port, unredacted, allow_remote)
        click.echo(f"serving http://{host}:{server.server_port}/ (read-only{', unredacted' if unredacted else ''})")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    finally:
        store.close()


COMMANDS = [web]
