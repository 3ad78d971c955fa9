"""Reliability of ``socorro-store serve`` against concurrent scans and hostile requests (issue 21,
defects 6 and 7).  Each test runs its own gateway process, so what it measures (errors, resident
memory) is that test's alone.  Nothing here measures time.
"""

import socket
import struct
import sys
import threading
import uuid
from contextlib import closing

import happybase
import pytest
from servers.gateway import Gateway
from thriftpy2.protocol import TBinaryProtocol, TCompactProtocol
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.transport import TMemoryBuffer, TTransportException

from socorro_store.gateway.wire import GuardedBinaryProtocol

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


# -- defect 7: memory amplification from hostile Thrift ----------------------------------------

MB = 1024
#: Resident memory a refused request may add to the gateway, at its peak and after.  The request
#: is refused at its list header, before any element is decoded, so the gateway holds only its
#: receive buffer (256 KB) and the frame it drains; 32 MB is above the most a request can
#: decode under the cap (262,144 empty structs, about 27 MB) and far below what these requests
#: took before (a 200 MB peak for the 2 MB frame, 1 GB for the 10 MB buffered request).
RSS_BOUND_KB = 32 * MB


def mutate_rows_of_empty_structs(count, table=b"t"):
    """A binary ``mutateRows`` call whose ``rowBatches`` holds ``count`` empty structs (one STOP
    byte each): about ``count`` bytes on the wire."""
    name = b"mutateRows"
    message = struct.pack("!iI", -2147418111, len(name)) + name + struct.pack("!i", 7)  # CALL, seqid 7
    message += struct.pack("!bhI", 11, 1, len(table)) + table  # 1: tableName
    message += struct.pack("!bhbi", 15, 2, 12, count) + b"\x00" * count  # 2: list<BatchMutation>
    return message + b"\x00"  # end of the arguments


def send_raw(gateway, message):
    """Send one request; the ``(type, message)`` of the TApplicationException it got back, or
    None if the server closed the connection before a whole reply came."""
    if gateway.transport == "framed":
        message = struct.pack("!i", len(message)) + message
    sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=120)
    try:
        sock.sendall(message)
        reply = GuardedBinaryProtocol(sock.makefile("rb", buffering=0))  # raises on a short reply
        if gateway.transport == "framed":
            reply._take(4)  # the frame header
        _name, message_type, seqid = reply.read_message_begin()
        assert (message_type, seqid) == (TMessageType.EXCEPTION, 7)
        exc = TApplicationException()
        reply.read_struct(exc)
        return exc.type, exc.message
    except (ConnectionResetError, BrokenPipeError, TTransportException):
        return None
    finally:
        sock.close()


@pytest.fixture(params=[("framed", 2_000_000), ("buffered", 10_000_000)], ids=["framed-2MB", "buffered-10MB"])
def hostile(request, tmp_path):
    """A fresh gateway (HBase's default 2 MB frames when framed) and the size of the request to
    send it: each test measures that gateway's memory alone."""
    transport, size = request.param
    process = Gateway(tmp_path / "store", transport, "binary")
    yield process, size
    process.stop()


def test_a_request_of_millions_of_empty_structs_is_refused_and_costs_no_memory(hostile):
    gateway, size = hostile
    with closing(connect(gateway)) as conn:  # the server's resident set once it has served
        conn.create_table("t", {"cf": {}})
    rss_before, peak_before = gateway.rss_kb(), gateway.rss_kb("VmHWM")

    error = send_raw(gateway, mutate_rows_of_empty_structs(size - 40))

    assert gateway.rss_kb("VmHWM") - peak_before < RSS_BOUND_KB
    assert gateway.rss_kb() - rss_before < RSS_BOUND_KB
    if gateway.transport == "framed":  # the client sent the whole frame: it gets the error
        kind, message = error  # (buffered: the unread rest of the request may reset the socket)
        assert kind == TApplicationException.PROTOCOL_ERROR
        assert "262144" in message
    with closing(connect(gateway)) as conn:  # still serving
        conn.table("t").put(b"row", {b"cf:q": b"v"})
        assert conn.table("t").row(b"row") == {b"cf:q": b"v"}
    assert gateway.proc.poll() is None


def test_big_legitimate_requests_still_work(hostile):
    """What the store sends stays well inside the cap: a cell of HBase's largest KeyValue
    (10 MiB, buffered; a framed gateway's 2 MB frame cannot carry it), and a batch of thousands
    of rows in one request."""
    gateway, _size = hostile
    with closing(connect(gateway)) as conn:
        conn.create_table("t", {"cf": {}})
        table = conn.table("t")
        rows = 3000 if gateway.transport == "framed" else 6000
        with table.batch(batch_size=rows) as batch:  # one mutateRows of rows x 10 columns
            for i in range(rows):
                batch.put(b"r%05d" % i, {b"cf:c%d" % c: b"v" for c in range(10)})
        assert sum(1 for _ in table.scan(columns=[b"cf:c9"])) == rows
        assert len(table.rows([b"r%05d" % i for i in range(rows)])) == rows
        if gateway.transport == "buffered":
            cell = bytes(range(256)) * (40 * 1024 - 4)  # 10 MiB, less the KeyValue's key overhead
            table.put(b"big", {b"cf:q": cell})
            assert table.row(b"big") == {b"cf:q": cell}


def test_the_cap_counts_every_container_of_a_request():
    """Unit level, both request decoders: a request's lists and maps add up (a batch of 3 rows
    of 3 mutations is 12 elements), and the count starts again with each request."""
    from socorro_store.gateway.handler import Hbase
    from socorro_store.gateway.wire import GuardedBinaryProtocol, GuardedCompactProtocol, TooManyElements

    args = Hbase.Hbase.mutateRows_args(
        tableName=b"t", attributes={},
        rowBatches=[Hbase.BatchMutation(row=b"r%d" % i, mutations=[
            Hbase.Mutation(column=b"cf:%d" % c, value=b"v") for c in range(3)]) for i in range(3)])

    for encoder, decoder in ((TBinaryProtocol, lambda data, cap: GuardedBinaryProtocol(
                                 _Stream(data), max_elements=cap)),
                             (TCompactProtocol, lambda data, cap: GuardedCompactProtocol(
                                 TMemoryBuffer(data), max_elements=cap))):
        out = TMemoryBuffer()
        writer = encoder(out)
        writer.write_message_begin("mutateRows", TMessageType.CALL, 7)
        writer.write_struct(args)
        one = out.getvalue()

        reader = decoder(one + one, 12)
        for _ in range(2):  # exactly the cap, twice on one connection
            assert reader.read_message_begin() == ("mutateRows", TMessageType.CALL, 7)
            decoded = Hbase.Hbase.mutateRows_args()
            reader.read_struct(decoded)
            assert decoded.rowBatches == args.rowBatches
        reader = decoder(one, 11)
        reader.read_message_begin()
        with pytest.raises(TooManyElements) as refused:
            reader.read_struct(Hbase.Hbase.mutateRows_args())
        assert (refused.value.message_name, refused.value.seqid) == ("mutateRows", 7)


class _Stream:
    """The byte stream the binary decoder reads: at most ``n`` bytes a call."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def read(self, n):
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk
