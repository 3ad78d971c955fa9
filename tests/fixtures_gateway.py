"""Session fixtures: ``socorro-store serve`` as a subprocess on a free loopback port.

Each fixture starts ``python -m socorro_store --url embedded://TMP serve --port 0 …`` (a
:class:`servers.gateway.Gateway`), waits for its "serving … on 127.0.0.1:PORT" line and
yields it; ``*_url`` fixtures give ``hbase://127.0.0.1:PORT?transport=…&protocol=…`` (and the framed
gateway's ``max_frame_mb``, so the client splits its requests to the server's limit).  The process
is stopped with SIGTERM at the end of the session.
"""

import pytest
from servers.gateway import Gateway as GatewayProcess


def _start(tmp_path_factory, transport, protocol):
    # The contract suite stores 4 MiB cells: raise the framed limit from HBase's 2 MB default
    # (hbase.regionserver.thrift.framed.max_frame_size_in_mb), as an operator would.
    extra = ["--max-frame-mb", "16"] if transport == "framed" else []
    return GatewayProcess(tmp_path_factory.mktemp(f"gateway-{transport}-{protocol}"), transport, protocol, extra)


@pytest.fixture(scope="session")
def gateway_buffered_binary(tmp_path_factory):
    gateway = _start(tmp_path_factory, "buffered", "binary")
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def gateway_framed_compact(tmp_path_factory):
    gateway = _start(tmp_path_factory, "framed", "compact")
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def gateway_buffered_binary_url(gateway_buffered_binary):
    return gateway_buffered_binary.url()


@pytest.fixture(scope="session")
def gateway_framed_compact_url(gateway_framed_compact):
    return gateway_framed_compact.url(max_frame_mb=16)


def _pool(url):
    # imported here: a plugin module imported by another before pytest loads it is not rewritten
    from fixtures_hbase_real import TablePool  # noqa: PLC0415

    return TablePool(url, compact=True)


# Spec tables reused between the tests asking for them (conftest.backend_url), emptied and
# compacted: creating the store's tables through a gateway costs ~0.5 s a test, and more as the
# session's catalog grows with every prefix.
@pytest.fixture(scope="session")
def gateway_buffered_binary_pool(gateway_buffered_binary_url):
    return _pool(gateway_buffered_binary_url)


@pytest.fixture(scope="session")
def gateway_framed_compact_pool(gateway_framed_compact_url):
    return _pool(gateway_framed_compact_url)
