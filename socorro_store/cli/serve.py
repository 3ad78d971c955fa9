"""``socorro-store serve``: the embedded store behind HBase's Thrift1 protocol."""

import click

from ..config import parse_url
from ..errors import ConfigError
from .common import local_url_option, url_of


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=9090, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 picks a free one; the real port is printed).")
@click.option("--transport", type=click.Choice(["buffered", "framed"]), default="buffered", show_default=True)
@click.option("--protocol", type=click.Choice(["binary", "compact"]), default="binary", show_default=True)
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (no authentication!).")
@click.option("--max-frame-mb", default=2.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Largest framed-transport frame, in MB (HBase's default is 2).")
@click.option("--idle-timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds before an idle connection is closed.")
@click.option("--workers", default=32, show_default=True, type=click.IntRange(min=1),
              help="Connections served at once (one worker thread each).")
@local_url_option
@click.pass_context
def serve(ctx, host, port, transport, protocol, allow_remote, max_frame_mb, idle_timeout, workers, local_url):
    """Serve an embedded:// store over HBase Thrift1 until SIGTERM/SIGINT."""
    from ..gateway import serve as run_gateway  # thriftpy2 only when serving

    url = parse_url(url_of(ctx, local_url))
    if url.scheme != "embedded":
        raise ConfigError(f"serve needs an embedded:// store URL, not {url.text!r}")
    run_gateway(url.path, host=host, port=port, transport=transport, protocol=protocol,
                allow_remote=allow_remote, max_frame_bytes=int(max_frame_mb * 1024 * 1024),
                idle_timeout_s=idle_timeout, max_workers=workers, sync=url.options["sync"])


COMMANDS = [serve]
