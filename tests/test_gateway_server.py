"""Gateway, happybase level: admin calls, errors, pools, prefixes, bad bytes, limits and shutdown."""

import os
import socket
import subprocess
import sys
import threading

import happybase
import pytest
from fixtures_gateway import GatewayProcess
from gateway_helpers import Hbase_thrift, conn, connect, gateway, table  # noqa: F401 - fixtures
from thriftpy2.thrift import TApplicationException
from thriftpy2.transport import TTransportException


def test_admin_calls(conn):
    conn.create_table("admin", {"cf": {"max_versions": 2, "compression": "gz", "bloom_filter_type": "ROW",
                                       "in_memory": True, "block_cache_enabled": True}, "b": {}})
    assert conn.tables() == [b"admin"]
    families = conn.table("admin").families()
    assert families[b"cf"]["max_versions"] == 2 and families[b"cf"]["compression"] == b"GZ"
    assert families[b"cf"]["bloom_filter_type"] == b"ROW" and families[b"cf"]["in_memory"] is True
    assert families[b"b"]["time_to_live"] == 2147483647  # happybase's -1 means forever
    regions = conn.table("admin").regions()
    assert len(regions) == 1 and regions[0]["start_key"] == b"" and regions[0]["end_key"] == b""
    assert conn.client.getTableRegions(b"no-such-table") == []
    with pytest.raises(Hbase_thrift.AlreadyExists):
        conn.create_table("admin", {"cf": {}})
    conn.compact_table("admin", major=True)
    with pytest.raises(Hbase_thrift.IOError):  # still enabled
        conn.delete_table("admin")
    conn.delete_table("admin", disable=True)
    assert conn.tables() == []


@pytest.mark.parametrize("families, error", [
    ({"cf": {"compression": "nosuch"}}, "IllegalArgument"),
    ({"cf": {"bloom_filter_type": "row"}}, "IllegalArgument"),  # BloomType.valueOf is case-sensitive
    ({"cf": {"max_versions": 0}}, "IllegalArgument"),
])
def test_create_table_rejections(conn, families, error):
    with pytest.raises(getattr(Hbase_thrift, error)):
        conn.create_table("bad", families)
    assert conn.tables() == []


def test_invalid_table_name_is_internal_error(conn):
    with pytest.raises(TApplicationException) as err:
        conn.create_table("bad name!", {"cf": {}})
    assert err.value.type == TApplicationException.INTERNAL_ERROR
    assert conn.tables() == []


def test_missing_table_and_family_are_io_errors(conn, table):
    missing = conn.table("missing")
    for call in (lambda: missing.row(b"r"), lambda: missing.put(b"r", {b"cf:a": b"1"}),
                 lambda: list(missing.scan()), lambda: missing.counter_inc(b"r", b"cf:n"),
                 lambda: missing.families(), lambda: conn.is_table_enabled("missing"),
                 lambda: table.row(b"r", columns=[b"nope:q"]), lambda: list(table.scan(columns=[b"nope"]))):
        with pytest.raises(Hbase_thrift.IOError):
            call()
    missing.put(b"r", {})  # an empty put sends nothing to a table: no error, as on HBase
    assert table.row(b"r") == {}


def test_disabled_table_refuses_data_operations(conn, table):
    table.put(b"r", {b"cf:a": b"1"})
    conn.disable_table("data")
    assert conn.is_table_enabled("data") is False
    for call in (lambda: table.row(b"r"), lambda: table.put(b"r", {b"cf:a": b"2"}), lambda: list(table.scan()),
                 lambda: table.counter_inc(b"r", b"cf:n")):
        with pytest.raises(Hbase_thrift.IOError) as err:
            call()
        assert b"TableNotEnabledException" in err.value.message
    with pytest.raises(Hbase_thrift.IOError):
        conn.disable_table("data")
    conn.enable_table("data")
    assert table.row(b"r") == {b"cf:a": b"1"}


def test_connection_pool_with_threads(gateway):
    pool = happybase.ConnectionPool(4, host="127.0.0.1", port=gateway.port, transport=gateway.transport,
                                    protocol=gateway.protocol, table_prefix="pool" + os.urandom(4).hex())
    with pool.connection() as c:
        c.create_table("hits", {"cf": {}})
    errors = []

    def work(worker):
        try:
            for i in range(50):
                with pool.connection() as c:
                    t = c.table("hits")
                    t.put(b"w%d-%03d" % (worker, i), {b"cf:v": b"%d" % i})
                    t.counter_inc(b"total", b"cf:n")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with pool.connection() as c:
        t = c.table("hits")
        assert t.counter_get(b"total", b"cf:n") == 300
        assert sum(1 for _ in t.scan(row_prefix=b"w")) == 300


def test_table_prefixes_isolate_tables(gateway):
    tag = os.urandom(4).hex()
    one = connect(gateway, table_prefix=f"one{tag}")
    two = connect(gateway, table_prefix=f"two{tag}", table_prefix_separator=b".")
    try:
        one.create_table("t", {"cf": {}})
        two.create_table("t", {"cf": {}})
        one.table("t").put(b"r", {b"cf:a": b"one"})
        assert two.table("t").row(b"r") == {}
        assert one.tables() == [b"t"] and two.tables() == [b"t"]
        assert f"one{tag}_t".encode() in connect(gateway).tables()
    finally:
        one.close()
        two.close()


def test_unknown_method_keeps_connection(conn, table):
    with pytest.raises(TApplicationException) as err:
        conn.client.getRowOrBefore(conn._table_name("data"), b"r", b"cf")
    assert err.value.type == TApplicationException.UNKNOWN_METHOD
    assert table.row(b"r") == {}


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x05hello",  # no version header / tiny frame
    os.urandom(4096),
    b"\x80\x01\x00\x01\x00\x00\x00\x0agetTableNa",  # truncated call
    b"\xff\xff\xff\xff" * 64,
    b"\x7f\xff\xff\xff" + b"x" * 100,  # claims a 2 GB frame / string
])
def test_garbage_costs_only_that_connection(gateway, garbage):
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        try:  # the server may close the connection before all of it is sent
            sock.sendall(garbage)
            sock.shutdown(socket.SHUT_WR)
            sock.recv(65536)
        except OSError:
            pass
    c = connect(gateway)
    try:
        assert isinstance(c.tables(), list)
    finally:
        c.close()


def test_framed_frame_limit_is_hbase_default_2mb(tmp_path):
    gateway = GatewayProcess(tmp_path / "store", "framed", "compact")
    try:
        c = connect(gateway)
        c.create_table("big", {"cf": {}})
        c.table("big").put(b"ok", {b"cf:a": b"x" * (1024 * 1024)})
        with pytest.raises((TTransportException, OSError)):  # 3 MB > 2 MB frame: the server closes it
            c.table("big").put(b"r", {b"cf:a": b"x" * (3 * 1024 * 1024)})
        c.close()
        c = connect(gateway)
        assert c.table("big").row(b"r") == {} and len(c.table("big").row(b"ok")[b"cf:a"]) == 1024 * 1024
        c.close()
    finally:
        gateway.stop()


def test_sigterm_lets_the_call_in_flight_finish(tmp_path):
    gateway = GatewayProcess(tmp_path / "store", extra_args=["--idle-timeout", "5"])
    try:
        c = connect(gateway)
        c.create_table("t", {"cf": {}})
        with c.table("t").batch(batch_size=1000) as batch:
            for i in range(3000):
                batch.put(b"r%05d" % i, {b"cf:a": b"x" * 500})
        idle = connect(gateway)  # an idle connection must not hold up the stop
        idle.tables()
        assert gateway.stop() == 0
    finally:
        gateway.stop()
    from socorro_store.engine import Engine

    engine = Engine(str(tmp_path / "store"))
    try:
        assert engine.integrity_check() == []
        assert sum(1 for _ in engine.scan("t")) == 3000
    finally:
        engine.close()


def test_sigterm_during_a_large_call_is_all_or_nothing(tmp_path):
    gateway = GatewayProcess(tmp_path / "store")
    outcome = {}
    try:
        c = connect(gateway)
        c.create_table("t", {"cf": {}})
        rows = [Hbase_thrift.BatchMutation(row=b"r%06d" % i, mutations=[
            Hbase_thrift.Mutation(column=b"cf:a", value=b"x" * 200)]) for i in range(20000)]

        def call():
            try:
                c.client.mutateRows(b"t", rows, {})
                outcome["ok"] = True
            except Exception as exc:  # noqa: BLE001 - the server may stop before reading the call
                outcome["error"] = exc

        caller = threading.Thread(target=call)
        caller.start()
        threading.Event().wait(0.3)  # let the call get under way (not an assertion)
        assert gateway.stop() == 0
        caller.join()
    finally:
        gateway.stop()
    from socorro_store.engine import Engine

    engine = Engine(str(tmp_path / "store"))
    try:
        stored = sum(1 for _ in engine.scan("t"))
    finally:
        engine.close()
    assert stored in (0, 20000)
    if outcome.get("ok"):
        assert stored == 20000  # a call that was answered is durable


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "socorro_store", *args], capture_output=True, text=True, timeout=60)


def test_serve_refuses_remote_hosts_and_other_urls(tmp_path):
    result = _cli("--url", f"embedded://{tmp_path}", "serve", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2 and "non-loopback" in result.stderr
    result = _cli("--url", "hbase://localhost:9090", "serve", "--port", "0")
    assert result.returncode == 2 and "embedded://" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_serve_takes_its_own_url_option(tmp_path):
    """``socorro-store serve --url …`` (the issue's form) overrides the global --url."""
    result = _cli("--url", f"embedded://{tmp_path}", "serve", "--url", "hbase://localhost:9090", "--port", "0")
    assert result.returncode == 2 and "hbase://localhost:9090" in result.stderr
    gateway = subprocess.Popen([sys.executable, "-m", "socorro_store", "serve", "--create", "--url", f"embedded://{tmp_path}/own",
                                "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert f"embedded://{tmp_path}/own" in gateway.stdout.readline()
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)


def test_a_pooled_connection_the_server_closed_for_idleness_is_reopened(tmp_path):
    """The server drops connections idle past --idle-timeout; the backend reopens a connection
    idle that long before using it, so a non-idempotent call (an append) after a pause succeeds.
    Without the reopening the same append fails: it was sent on a closed connection."""
    import time

    from socorro_store import BackendUnavailable
    from socorro_store.backends import open_backend
    from socorro_store.schema.specs import FamilySpec, TableSpec

    gateway = GatewayProcess(tmp_path / "store", extra_args=["--idle-timeout", "1"])
    try:
        backend = open_backend(gateway.url(pool_size=1))
        try:
            backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
            assert backend.append("t", b"r", {b"cf:a": b"x"}) == {b"cf:a": b"x"}
            backend.reopen_idle_s = float("inf")  # the failure the reopening prevents
            time.sleep(1.6)
            with pytest.raises(BackendUnavailable, match="not retried"):
                backend.append("t", b"r", {b"cf:a": b"y"})
            backend.reopen_idle_s = 0.5
            assert backend.append("t", b"r", {b"cf:a": b"z"}) == {b"cf:a": b"xz"}  # reconnected after the failure
            time.sleep(1.6)
            assert backend.append("t", b"r", {b"cf:a": b"w"}) == {b"cf:a": b"xzw"}  # reopened, not failed
            assert backend.get_row("t", b"r") == {b"cf:a": b"xzw"}  # the failed append was not applied
        finally:
            backend.close()
    finally:
        gateway.stop()
