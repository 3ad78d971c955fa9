"""Several Thrift servers in one store URL (issue 31, part 2), on real sockets.

``hbase://H1:P1,H2:P2?…``: the backends' pool (``backends/hbase/servers.py``) spreads calls and
connections over the servers, leaves a server that stops answering out and tries it again later,
fails idempotent calls over to another server, and never replays a call that may have applied.

Servers here are ``socorro-store serve`` gateways (child processes, SIGKILLed to make a server
die), and :class:`FaultProxy` instances in front of one gateway (two "servers" with the same data,
so a call's effect can be counted wherever it went).
"""

import signal
import socket

import pytest
from faults.faultproxy import FaultProxy
from servers.gateway import Gateway

from socorro_store.backends import RowMutation, open_backend
from socorro_store.backends.hbase import HBaseBackend, HBaseThrift2Backend
from socorro_store.backends.hbase.servers import LEAVE_OUT_AFTER, ServerList, parse_servers
from socorro_store.backends.hbase.thrift2_idl import hbase2
from socorro_store.errors import BackendUnavailable, ConfigError
from socorro_store.schema.specs import FamilySpec, TableSpec

TABLE = TableSpec("t", (FamilySpec("cf"),))


# -- the URL ---------------------------------------------------------------------------------

@pytest.mark.parametrize("url, servers", [
    ("hbase://h1", [("h1", 9090)]),
    ("hbase://h1:9091", [("h1", 9091)]),
    ("hbase://h1:1,h2:2,h3?transport=framed", [("h1", 1), ("h2", 2), ("h3", 9090)]),
    ("hbase://[::1]:9090,10.0.0.2:9091", [("::1", 9090), ("10.0.0.2", 9091)]),
    ("hbase://[::1]", [("::1", 9090)]),  # no port: the default, as for a name
    ("hbase://[::1],h2:7", [("::1", 9090), ("h2", 7)]),
    ("h1:1, h2:2", [("h1", 1), ("h2", 2)]),
])
def test_a_url_names_one_or_several_servers(url, servers):
    assert parse_servers(url) == servers


@pytest.mark.parametrize("url, says", [
    ("hbase://h1:1,,h2:2", "empty server"),
    ("hbase://h1:1,", "empty server"),
    ("hbase://h1:x,h2:2", "bad port"),
    ("hbase://h1:1,h2:70000", "not in 1..65535"),
    ("hbase://h1:0", "not in 1..65535"),
    ("hbase://h1:,h2:2", "empty port"),
    ("hbase://h1:1,H1:1", "twice"),
    ("hbase://u@h1:1", "user info"),
    ("hbase://h1:1,:2", "needs a host"),
    ("hbase://::1:9090", "IPv6"),
    ("hbase://[::1", "malformed store URL"),  # urlsplit's bare ValueError before
    ("[::1", "IPv6 host is \\[ADDRESS\\]"),
    ("hbase://[::1]x", "IPv6 host is"),
    ("hbase://a:9_090", "ASCII digits"),  # int() takes each of these
    ("hbase://a:+90", "ASCII digits"),
    ("hbase://a: 90", "ASCII digits"),
    ("hbase://a:\u0669\u0660", "ASCII digits"),
    ("hbase://a:\uff19\uff10", "ASCII digits"),
])
def test_a_bad_server_list_is_a_config_error_naming_it(url, says):
    with pytest.raises(ConfigError, match=says):
        parse_servers(url)
    for backend in (HBaseBackend, HBaseThrift2Backend):  # nothing is opened, nothing written
        with pytest.raises(ConfigError, match=says):
            backend(servers=url)


def test_a_multi_server_url_opens_one_backend_over_every_server():
    """Through the store URL (``socorro_store.config``), both APIs."""
    with open_backend("hbase://127.0.0.1:1,127.0.0.1:2?timeout_ms=500") as backend:
        assert backend.servers.names() == ["127.0.0.1:1", "127.0.0.1:2"]
    with open_backend("hbase://127.0.0.1:1,127.0.0.1:2?api=thrift2") as backend:
        assert backend.servers.names() == ["127.0.0.1:1", "127.0.0.1:2"]


def test_left_out_servers_come_back_in_turn_after_their_pause():
    servers = ServerList([("a", 1), ("b", 2), ("c", 3)], retry_down_s=3600)
    a, b, c = servers.servers
    firsts = [servers.order()[0] for _ in range(6)]
    assert firsts == [a, b, c, a, b, c]  # each call starts one further along
    servers.failed(b, OSError("refused"))
    assert all(servers.order()[-1] is b for _ in range(3))  # left out: tried last
    assert servers.order(exclude=[a])[:2] in ([c, b], [b, c])  # tried by the call: after the others up
    servers.failed(a, OSError("refused"))
    servers.failed(c, OSError("refused"))
    assert servers.order()[0] is b  # all down: the soonest retry first
    servers.succeeded(b)
    assert servers.order()[0] is b and servers.status()[1]["up"]
    assert b.failures == 0 and a.failures == 1


def test_calls_that_fail_after_they_were_sent_leave_a_server_out_only_several_in_a_row():
    servers = ServerList([("a", 1), ("b", 2)], retry_down_s=3600)
    a, b = servers.servers
    for _ in range(LEAVE_OUT_AFTER - 1):
        assert not servers.call_failed(a, TimeoutError("timed out"))
        assert servers.is_up(a)
    servers.succeeded(a)  # an answer in between: the count starts again
    for _ in range(LEAVE_OUT_AFTER - 1):
        assert not servers.call_failed(a, TimeoutError("timed out"))
    assert servers.call_failed(a, TimeoutError("timed out"))
    assert not servers.is_up(a) and servers.order()[-1] is a
    servers.failed(b, OSError("refused"))  # a refused connection leaves it out at once
    assert not servers.is_up(b)


# -- real sockets ------------------------------------------------------------------------------

def _gateway(directory, port=None):
    return Gateway(directory, extra_args=["--port", str(port)] if port else ())


@pytest.fixture
def two_gateways(tmp_path):
    gateways = [_gateway(tmp_path / "g0"), _gateway(tmp_path / "g1")]
    for gateway in gateways:
        with open_backend(gateway.url()) as direct:
            direct.create_table(TABLE)
    yield gateways
    for gateway in gateways:
        gateway.stop()


def _rows(gateway):
    with open_backend(gateway.url(retries=0)) as direct:
        return {row for row, _cells in direct.scan("t")}


def _servers(*ports):
    return [("127.0.0.1", port) for port in ports]


def test_calls_and_connections_spread_over_the_servers(two_gateways):
    g0, g1 = two_gateways
    with HBaseBackend(servers=_servers(g0.port, g1.port), pool_size=4) as backend:
        for i in range(20):
            backend.mutate_rows("t", [RowMutation(b"r%02d" % i, {b"cf:a": b"x"})])
        status = {s["server"]: s for s in backend.servers.status()}
        opened = {conn.server.port for conn in backend._pool._idle.queue}
    on0, on1 = _rows(g0), _rows(g1)
    assert on0 and on1 and not on0 & on1 and len(on0 | on1) == 20
    assert opened == {g0.port, g1.port}
    assert all(s["up"] and s["calls"] > 0 for s in status.values())


def test_a_dead_server_is_left_out_and_idempotent_calls_go_on_through_the_other(two_gateways):
    g0, g1 = two_gateways
    with HBaseBackend(servers=_servers(g0.port, g1.port), pool_size=4, retries=1) as backend:
        backend.servers.retry_down_s = 3600  # left out for the whole test once it fails
        for i in range(4):  # pooled connections to both
            backend.mutate_rows("t", [RowMutation(b"before%d" % i, {b"cf:a": b"x"})])
        g0.proc.send_signal(signal.SIGKILL)
        g0.proc.wait()
        for i in range(20):  # every call succeeds: failed over, then the dead one is left out
            backend.mutate_rows("t", [RowMutation(b"after%02d" % i, {b"cf:a": b"y"})])
            assert backend.get_row("t", b"after%02d" % i) == {b"cf:a": b"y"}
        assert "t" in backend.list_tables()
        dead, alive = backend.servers.status()
        assert not dead["up"] and dead["failures"] >= 1 and dead["last_error"]
        assert alive["up"]
        assert {c.server.port for c in backend._pool._idle.queue} == {g1.port}  # its connections went
    assert {b"after%02d" % i for i in range(20)} <= _rows(g1)


def test_a_server_left_out_is_tried_again_later_and_used_once_it_answers(tmp_path):
    g0, g1 = _gateway(tmp_path / "g0"), _gateway(tmp_path / "g1")
    try:
        for gateway in (g0, g1):
            with open_backend(gateway.url()) as direct:
                direct.create_table(TABLE)
        port0 = g0.port
        with HBaseBackend(servers=_servers(port0, g1.port), pool_size=2, retries=1) as backend:
            backend.servers.retry_down_s = 0.2
            g0.stop()
            backend.mutate_rows("t", [RowMutation(b"a", {b"cf:a": b"1"})])
            backend.mutate_rows("t", [RowMutation(b"b", {b"cf:a": b"1"})])
            assert backend.servers.status()[0]["failures"] >= 1  # found down
            g0 = _gateway(tmp_path / "g0", port=port0)  # back on its port, with its data
            i = 0
            while b"c%d" % (i - 1) not in _rows(g0):  # calls go on; one lands on it again
                backend.mutate_rows("t", [RowMutation(b"c%d" % i, {b"cf:a": b"1"})])
                i += 1
                assert i < 10_000, "the server that came back was never used again"
            assert backend.servers.status()[0]["up"] and backend.servers.status()[0]["failures"] == 0
    finally:
        g0.stop()
        g1.stop()


@pytest.fixture
def two_proxies(tmp_path):
    """Two "servers" (fault proxies) in front of one gateway: the same data behind both."""
    gateway = _gateway(tmp_path / "g")
    proxies = [FaultProxy(("127.0.0.1", gateway.port)).start() for _ in range(2)]
    with open_backend(gateway.url()) as direct:
        direct.create_table(TABLE)
        yield gateway, proxies, direct
    for proxy in proxies:
        proxy.stop()
    gateway.stop()


def test_an_idempotent_call_whose_reply_is_lost_fails_over_and_lands_once(two_proxies):
    _gateway_, (p0, p1), direct = two_proxies
    with HBaseBackend(servers=_servers(p0.port, p1.port), pool_size=2, retries=1) as backend:
        assert backend.get_row("t", b"r0") == {}  # the family cache is warm: one call per put next
        p0.inject("drop_after")
        for i in range(2):  # one of them goes through p0 (calls alternate), whose reply is lost
            backend.mutate_rows("t", [RowMutation(b"r%d" % i, {b"cf:n": b"%d" % i})])
        assert p0.injected["drop_after"] == 1
        assert backend.get_row("t", b"r0") == {b"cf:n": b"0"} and backend.get_row("t", b"r1") == {b"cf:n": b"1"}
        p0_status = backend.servers.status()[0]
        assert p0_status["up"] and p0_status["last_error"]  # one failed call does not leave it out
    assert direct.get_row("t", b"r0") == {b"cf:n": b"0"} and direct.get_row("t", b"r1") == {b"cf:n": b"1"}


def _until_injected(backend, proxy, fault, count):
    """Reads until ``proxy`` has injected ``count`` faults (calls alternate over the
    servers); each read still answers (failed over)."""
    for _ in range(50):
        if proxy.injected[fault] >= count:
            return
        assert backend.get_row("t", b"r") == {b"cf:a": b"1"}
    raise AssertionError(f"{fault} injected {proxy.injected[fault]} times, not {count}")


def test_one_slow_answer_leaves_a_healthy_server_in_the_rotation(two_proxies):
    """A read that times out (a proxy that delays its reply past ``timeout_ms``) fails over, and
    its server stays in: before, one slow query took it out for a second, doubled each time."""
    _gateway_, (p0, p1), direct = two_proxies
    direct.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"1"})])
    p0.delay_s = 1.5
    with HBaseBackend(servers=_servers(p0.port, p1.port), pool_size=2, retries=1, timeout_ms=300) as backend:
        backend.servers.retry_down_s = 3600  # a server left out stays out for the test
        assert backend.get_row("t", b"r") == {b"cf:a": b"1"}
        p0.inject("delay")
        _until_injected(backend, p0, "delay", 1)
        slow = backend.servers.status()[0]
        assert slow["up"] and slow["failures"] == 1 and "timed out" in slow["last_error"]
        calls = slow["calls"]
        for _ in range(4):  # it still gets its turn, and answers
            assert backend.get_row("t", b"r") == {b"cf:a": b"1"}
        assert backend.servers.status()[0]["calls"] > calls and backend.servers.status()[0]["failures"] == 0


def test_a_server_that_fails_several_calls_in_a_row_is_left_out(two_proxies):
    _gateway_, (p0, p1), direct = two_proxies
    direct.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"1"})])
    p0.delay_s = 1.5
    with HBaseBackend(servers=_servers(p0.port, p1.port), pool_size=2, retries=1, timeout_ms=300) as backend:
        backend.servers.retry_down_s = 3600
        p0.inject("delay", count=LEAVE_OUT_AFTER)
        _until_injected(backend, p0, "delay", LEAVE_OUT_AFTER - 1)
        assert backend.servers.status()[0]["up"]
        _until_injected(backend, p0, "delay", LEAVE_OUT_AFTER)
        slow = backend.servers.status()[0]
        assert not slow["up"] and slow["failures"] == LEAVE_OUT_AFTER
        p0.clear()
        calls = slow["calls"]
        for _ in range(4):  # left out: every call goes to the other
            assert backend.get_row("t", b"r") == {b"cf:a": b"1"}
        assert backend.servers.status()[0]["calls"] == calls


def test_a_server_that_refuses_connections_is_left_out_at_once(two_proxies):
    _gateway_, (_p0, p1), direct = two_proxies
    direct.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"1"})])
    with socket.socket() as refusing:  # bound, not listening: connections to it are refused
        refusing.bind(("127.0.0.1", 0))
        port = refusing.getsockname()[1]
        with HBaseBackend(servers=_servers(port, p1.port), pool_size=2, retries=1, timeout_ms=2000) as backend:
            backend.servers.retry_down_s = 3600
            for _ in range(4):
                assert backend.get_row("t", b"r") == {b"cf:a": b"1"}
            refused = backend.servers.status()[0]
            assert not refused["up"] and refused["failures"] == 1 and refused["calls"] == 0


def test_a_call_that_may_have_applied_is_never_replayed(two_proxies):
    """An increment whose reply is lost raised BackendUnavailable ("not idempotent") and ran
    exactly once, whichever server it went to; the next calls go on through the other server."""
    _gateway_, (p0, p1), direct = two_proxies
    with HBaseBackend(servers=_servers(p0.port, p1.port), pool_size=2, retries=3) as backend:
        assert backend.get_cells("t", b"counter", b"cf:n") == []  # the family cache is warm: one call next
        p0.inject("drop_after")
        p1.inject("drop_after")
        with pytest.raises(BackendUnavailable, match="not retried because it is not idempotent"):
            backend.increment("t", b"counter", b"cf:n", 1)
        assert p0.injected["drop_after"] + p1.injected["drop_after"] == 1
        p0.clear()
        p1.clear()
        assert backend.increment("t", b"counter", b"cf:n", 1) == 2  # the lost one applied, once
    assert direct.get_row("t", b"counter")[b"cf:n"] == (2).to_bytes(8, "big")


def test_the_thrift2_backend_follows_the_same_rules_over_several_servers(two_proxies):
    """The Thrift2 backend's pool is the same :class:`ServerPool`.  Its client's requests reach a
    Thrift1 gateway here, so only what the proxies do to them is looked at: a lost reply to an
    increment is never replayed; an idempotent call whose connection is cut is tried on every
    server, and then fails naming them all."""
    _gateway_, (p0, p1), _direct = two_proxies
    backend = HBaseThrift2Backend(servers=_servers(p0.port, p1.port), pool_size=2, retries=1, timeout_ms=5000)
    try:
        p0.inject("drop_after")
        p1.inject("drop_after")
        with pytest.raises(BackendUnavailable, match="Thrift2 server at 127.0.0.1:.*not idempotent"):
            backend._pool.call("increment", lambda c: c.increment(b"t", hbase2.TIncrement(
                row=b"r", columns=[hbase2.TColumnIncrement(family=b"cf", qualifier=b"n")])), idempotent=False)
        assert p0.injected["drop_after"] + p1.injected["drop_after"] == 1
        p0.clear()
        p1.clear()
        p0.inject("drop_before")
        p1.inject("drop_before")
        with pytest.raises(BackendUnavailable, match=f"Thrift2 server at 127.0.0.1:{p0.port} or 127.0.0.1:{p1.port}"):
            backend._pool.call("list_tables", lambda c: c.getTableNamesByNamespace("default"))
        assert p0.injected["drop_before"] == 1 and p1.injected["drop_before"] == 1  # one try on each
    finally:
        backend.close()


def test_a_server_that_refuses_connections_costs_no_attempt(two_gateways):
    """retries=0 (one attempt, as `ping` makes): a refused connection moves on to the next server."""
    g0, g1 = two_gateways
    port0 = g0.port
    g0.stop()
    with HBaseBackend(servers=_servers(port0, g1.port), retries=0) as backend:
        for _ in range(4):
            assert "t" in backend.list_tables()
        assert backend.calls == {"list_tables": 4}  # nothing was counted as sent to the dead one


def test_no_server_answering_is_backend_unavailable_naming_every_server(tmp_path):
    gateways = [_gateway(tmp_path / "g0"), _gateway(tmp_path / "g1")]
    ports = [g.port for g in gateways]
    for gateway in gateways:
        gateway.stop()
    with HBaseBackend(servers=_servers(*ports), retries=1, timeout_ms=2000) as backend:
        with pytest.raises(BackendUnavailable, match=f"127.0.0.1:{ports[0]} or 127.0.0.1:{ports[1]}"):
            backend.list_tables()
        assert backend.calls == {}


def test_ping_and_describe_say_which_servers_answer(two_gateways):
    from socorro_store.schema import table_admin

    g0, g1 = two_gateways
    port0 = g0.port
    with HBaseBackend(servers=_servers(port0, g1.port), retries=0, timeout_ms=2000) as backend:
        answer = table_admin.ping(backend)
        assert answer["ok"] and answer["servers_down"] == 0
        assert [s["server"] for s in answer["servers"]] == [f"127.0.0.1:{port0}", f"127.0.0.1:{g1.port}"]
        g0.stop()
        answer = table_admin.ping(backend)
        assert answer["ok"] and answer["tables"] > 0 and answer["servers_down"] == 1
        assert not answer["servers"][0]["ok"] and answer["servers"][0]["error"] and answer["servers"][1]["ok"]
        described = table_admin.describe_table(backend, "t")
        assert [s["ok"] for s in described["servers"]] == [False, True]
        assert described["regions"] == [{"start": "", "end": "", "server": f"127.0.0.1:{g1.port}"}]
        assert described["region_servers"] == {f"127.0.0.1:{g1.port}": 1}


def test_a_scan_pages_through_the_server_that_opened_its_scanner(tmp_path):
    """Two Thrift servers of one store (two ``serve`` processes on one directory, as two Thrift
    servers of one HBase): a Thrift1 scanner lives in the server that opened it, so every page
    of a scan is fetched there, and each row is read once, in order."""
    g0 = _gateway(tmp_path / "one")
    try:
        g1 = _gateway(tmp_path / "one")
    except Exception:
        g0.stop()
        raise
    try:
        with open_backend(g0.url()) as direct:
            direct.create_table(TABLE)
            rows = [b"r%03d" % i for i in range(40)]
            direct.mutate_rows("t", [RowMutation(r, {b"cf:a": r}) for r in rows])
        with HBaseBackend(servers=_servers(g0.port, g1.port), pool_size=2) as backend:
            for _ in range(3):
                assert [row for row, _cells in backend.scan("t", page_size=5)] == rows
                assert [row for row, _cells in backend.scan("t", page_size=7, limit=9)] == rows[:9]
            assert all(s["calls"] > 0 for s in backend.servers.status())
    finally:
        g0.stop()
        g1.stop()
