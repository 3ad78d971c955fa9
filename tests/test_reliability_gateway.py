"""Reliability of ``socorro-store serve`` against concurrent scans and hostile requests (issue 21,
defects 6 and 7).  Each test runs its own gateway process, so what it measures (errors, resident
memory) is that test's alone.  Nothing here measures time.
"""

import sys
import threading
import uuid

import happybase
import pytest
from chaos_harness import Gateway

Hbase_thrift = sys.modules["Hbase_thrift"]  # the IDL module happybase loads on import

ROWS = 2000
ENGINE_PAGE = 100  # the gateway reads a scan from SQLite 100 rows at a time at least (caching)
PAGE = 25


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    process = Gateway(tmp_path_factory.mktemp("gateway-reliability"), "buffered", "binary")
    yield process
    process.stop()


def connect(gateway, prefix=None):
    return happybase.Connection("127.0.0.1", gateway.port, transport=gateway.transport,
                                protocol=gateway.protocol, table_prefix=prefix)


# -- defect 6: a scanner's pages on other workers ----------------------------------------------

def test_scanner_pages_fetched_by_other_workers_while_the_first_reads(gateway):
    """HBase's scanner ids are server-wide, so a client may fetch a scanner's pages on any of its
    connections (a pooled client does, after a reconnect).  Each connection has a worker thread of
    its own.  Here a scanner is opened and its first page fetched on connection A; its other pages
    are fetched on connection B while A keeps reading with ``getRowsWithColumns``.  A scanner used
    to keep A's SQLite connection, so B's pages ran on the connection A's worker was reading with
    at the same moment: INTERNAL_ERROR ("cannot start a transaction within a transaction")."""
    prefix = "t" + uuid.uuid4().hex[:10]
    setup = connect(gateway, prefix)
    setup.create_table("data", {"cf": {"max_versions": 1}})
    table = setup.table("data")
    with table.batch() as batch:
        for i in range(ROWS):
            batch.put(b"r%04d" % i, {b"cf:a": b"a%d" % i})
    name = f"{prefix}_data".encode()
    wanted = [b"r%04d" % i for i in range(0, ROWS, 7)]
    errors = []

    def pair():
        a, b = connect(gateway), connect(gateway)
        try:
            for _round in range(2):
                scanner = a.client.scannerOpenWithScan(name, Hbase_thrift.TScan(caching=ENGINE_PAGE), {})
                first = a.client.scannerGetList(scanner, PAGE)
                done = threading.Event()
                fetched = [row.row for row in first]

                def rest():
                    try:
                        while True:
                            page = b.client.scannerGetList(scanner, PAGE)
                            if not page:
                                break
                            fetched.extend(row.row for row in page)
                        b.client.scannerClose(scanner)
                    except Exception as exc:  # noqa: BLE001 - reported below
                        errors.append(("scannerGetList", repr(exc)))
                    finally:
                        done.set()

                thread = threading.Thread(target=rest)
                thread.start()
                while not done.is_set():
                    try:
                        found = a.client.getRowsWithColumns(name, wanted, [b"cf:a"], {})
                        if [row.row for row in found] != wanted:
                            errors.append(("getRowsWithColumns", "wrong rows"))
                    except Exception as exc:  # noqa: BLE001 - reported below
                        errors.append(("getRowsWithColumns", repr(exc)))
                thread.join()
                if fetched != [b"r%04d" % i for i in range(ROWS)]:
                    errors.append(("scan", f"{len(fetched)} rows, not the {ROWS} stored"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(("pair", repr(exc)))
        finally:
            a.close()
            b.close()

    pairs = [threading.Thread(target=pair) for _ in range(4)]
    for thread in pairs:
        thread.start()
    for thread in pairs:
        thread.join()
    setup.close()
    assert errors == []
