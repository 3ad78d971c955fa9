"""Shared pieces of the happybase-level gateway tests (``test_gateway_*.py``)."""

import sys
import uuid

import happybase
import pytest

Hbase_thrift = sys.modules["Hbase_thrift"]  # the IDL module happybase loads on import


@pytest.fixture(params=["buffered-binary", "framed-compact"])
def gateway(request):
    """Both transport/protocol combinations of the session gateways."""
    name = "gateway_buffered_binary" if request.param == "buffered-binary" else "gateway_framed_compact"
    return request.getfixturevalue(name)


def connect(gateway, **kwargs):
    return happybase.Connection("127.0.0.1", gateway.port, transport=gateway.transport,
                                protocol=gateway.protocol, **kwargs)


@pytest.fixture
def conn(gateway):
    """A connection with a table prefix no other test uses."""
    connection = connect(gateway, table_prefix="t" + uuid.uuid4().hex[:10])
    yield connection
    connection.close()


@pytest.fixture
def table(conn):
    conn.create_table("data", {"cf": {"max_versions": 3}, "other": {"max_versions": 1}})
    return conn.table("data")
