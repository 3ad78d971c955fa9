"""Deliberate difference: versions beyond a family's VERSIONS, read with a time range.

HBase keeps every version in its memstore until a flush drops the ones beyond the family's
VERSIONS, and a read with a time range (``[0, ts)``) counts versions only among the cells in the
range.  So right after writing 4 versions into a 3-version family, a read below the newest one
sees the oldest, and after a flush (not available through Thrift1) it does not: HBase's answer
depends on when the region server last flushed, which no client can see.  The embedded engine
prunes a cell's excess versions at write, i.e. always answers as HBase does after a flush.
"""

import uuid

import happybase
from test_differential_hbase import hbase_connection

FAMILIES = {"a": {"max_versions": 3}}


def _four_versions(conn):
    conn.create_table("v", FAMILIES)
    table = conn.table("v")
    for ts in (10, 20, 30, 40):
        table.put(b"r", {b"a:q": b"v%d" % ts}, timestamp=ts)
    return table


def test_gateway_prunes_excess_versions_at_write(gateway_buffered_binary):
    conn = happybase.Connection("127.0.0.1", gateway_buffered_binary.port,
                                table_prefix="ver" + uuid.uuid4().hex[:8])
    table = _four_versions(conn)
    assert table.cells(b"r", b"a:q", versions=5) == [b"v40", b"v30", b"v20"]
    assert table.cells(b"r", b"a:q", versions=5, timestamp=35) == [b"v30", b"v20"]
    conn.delete_table("v", disable=True)


def test_hbase_memstore_shows_excess_version_under_a_time_range(hbase_real_url):
    conn = hbase_connection(hbase_real_url, "ver" + uuid.uuid4().hex[:8])
    table = _four_versions(conn)
    assert table.cells(b"r", b"a:q", versions=5) == [b"v40", b"v30", b"v20"]
    # before a flush: the time range drops v40, and the 4th version v10 comes into view
    assert table.cells(b"r", b"a:q", versions=5, timestamp=35) == [b"v30", b"v20", b"v10"]
    conn.delete_table("v", disable=True)
