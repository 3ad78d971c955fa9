"""The Thrift2 backend's retry rules on a real HBase, through a :class:`FaultProxy` in front of
the session's Thrift2 server (nothing is killed, so the session's HBase is safe to use).

The rules are those of ``backends/hbase/thrift2_conn.py`` (the same as Thrift1's): idempotent calls
(reads, puts, deletes) are retried on a fresh connection and land once; past the budget the
caller gets ``BackendUnavailable``; increments, appends and check-and-put are never replayed
(HBase ran them exactly as often as a request reached it); a lost scan page, one
``getScannerResults`` call, is read again, never skipped.
"""

import uuid

import pytest
from faults.faultproxy import FAULTS, FaultProxy

from socorro_store.backends import Increment, RowMutation, open_backend
from socorro_store.errors import BackendUnavailable
from socorro_store.schema import keys as K
from socorro_store.schema.specs import FamilySpec, TableSpec

RETRIES = 2
REACHES_SERVER = {"drop_before": False, "drop_after": True, "delay": True, "truncate": True}


@pytest.fixture
def proxied(hbase_real_thrift2_url):
    """``(backend through the proxy, backend direct, proxy)`` on a fresh table prefix."""
    prefix = "f2" + uuid.uuid4().hex[:8]
    host, port = hbase_real_thrift2_url.split("://", 1)[1].split("?", 1)[0].rsplit(":", 1)
    proxy = FaultProxy((host, int(port)), delay_s=3.0).start()
    # a timeout far above HBase's ms replies and below the proxy's delay: only a delay times out
    via = open_backend(f"hbase://127.0.0.1:{proxy.port}?api=thrift2&table_prefix={prefix}"
                       f"&timeout_ms=1500&retries={RETRIES}")
    direct = open_backend(f"{hbase_real_thrift2_url}&table_prefix={prefix}")
    direct.create_table(TableSpec("t", (FamilySpec("cf"),)))
    direct.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"1"})])
    via.get_row("t", b"r", columns=[b"cf"])  # warm the pool and the family cache: faults hit the call itself
    yield via, direct, proxy
    proxy.stop()
    via.close()
    direct.drop_table("t")
    direct.close()


@pytest.mark.parametrize("fault", FAULTS)
def test_idempotent_read_and_put_are_retried_and_land_once(proxied, fault):
    via, direct, proxy = proxied
    proxy.inject(fault)
    assert via.get_row("t", b"r") == {b"cf:a": b"1"}
    proxy.inject(fault)
    via.mutate_rows("t", [RowMutation(b"p", {b"cf:x": b"v"})])
    assert proxy.injected[fault] == 2
    assert direct.get_row("t", b"p") == {b"cf:x": b"v"}


@pytest.mark.parametrize("fault", ["drop_before", "drop_after", "truncate"])  # "delay": 3 s a try
def test_exhausted_budget_is_backend_unavailable_then_recovers(proxied, fault):
    via, _direct, proxy = proxied
    proxy.inject(fault, RETRIES + 1)
    with pytest.raises(BackendUnavailable, match="Thrift2 server"):
        via.get_row("t", b"r")
    assert proxy.injected[fault] == RETRIES + 1
    assert via.get_row("t", b"r") == {b"cf:a": b"1"}


@pytest.mark.parametrize("fault", FAULTS)
def test_increment_and_append_are_never_replayed(proxied, fault):
    via, direct, proxy = proxied
    proxy.inject(fault)
    with pytest.raises(BackendUnavailable, match="not idempotent"):
        via.increment_many([Increment("t", b"c", b"cf:n", 1), Increment("t", b"c", b"cf:m", 1)])
    cells = direct.get_row("t", b"c")
    reached = int(REACHES_SERVER[fault])
    assert {c: K.decode_counter(v) for c, v in cells.items()} == ({b"cf:n": 1, b"cf:m": 1} if reached else {})
    proxy.inject(fault)
    with pytest.raises(BackendUnavailable):
        via.append("t", b"a", {b"cf:log": b"x"})
    assert direct.get_row("t", b"a") == ({b"cf:log": b"x"} if REACHES_SERVER[fault] else {})


@pytest.mark.parametrize("fault", ["drop_after", "truncate"])
def test_check_and_put_is_never_replayed(proxied, fault):
    """Replayed, the check-and-put would fail its own check and report "not applied" for a put
    HBase did apply; not replayed, the caller learns the outcome is unknown."""
    via, direct, proxy = proxied
    proxy.inject(fault)
    with pytest.raises(BackendUnavailable):
        via.check_and_put("t", b"k", b"cf:m", None, {b"cf:m": b"1", b"cf:o": b"2"})
    assert direct.get_row("t", b"k") == {b"cf:m": b"1", b"cf:o": b"2"}  # both cells, atomically


@pytest.mark.parametrize("fault", ["drop_after", "truncate"])
def test_scan_page_lost_mid_scan_is_read_again_not_skipped(proxied, fault):
    via, direct, proxy = proxied
    rows = [b"s%03d" % i for i in range(45)]
    direct.mutate_rows("t", [RowMutation(r, {b"cf:a": r}) for r in rows])
    proxy.inject(fault, after=1)  # the first page passes, the second (one call) breaks
    spent = via.calls.copy()
    got = [row for row, _cells in via.scan("t", prefix=b"s", page_size=10)]
    assert got == rows
    assert proxy.injected[fault] == 1
    assert (via.calls - spent)["scan"] == 5 + 1  # five pages, one of them sent twice


@pytest.mark.parametrize("fault", ["drop_after", "truncate"])  # the delete reached HBase
def test_a_drop_whose_reply_is_lost_is_retried_and_reports_the_table_dropped(proxied, fault, caplog):
    """Before: not retried at all (BackendUnavailable, outcome unknown) for a drop that worked."""
    via, direct, proxy = proxied
    direct.create_table(TableSpec("d", (FamilySpec("cf"),)))
    proxy.inject(fault, after=1)  # disableTable answers; deleteTable's reply is lost
    with caplog.at_level("WARNING", logger="socorro_store"):
        via.drop_table("d")
    assert proxy.injected[fault] == 1
    assert "d" not in direct.list_tables()
    assert "already gone on the retry" in caplog.text
