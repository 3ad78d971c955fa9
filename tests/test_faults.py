"""Transient faults between happybase and the gateway (a :class:`FaultProxy` in the middle).

* idempotent calls (reads, puts) are retried on a fresh connection and succeed within the budget;
* past the budget the caller gets :class:`BackendUnavailable`, never a raw socket/Thrift error;
* increments and check-and-put are never replayed: after an ambiguous failure the server ran them
  exactly as often as the request reached it (0 or 1 times);
* a crash store under random faults loses no acknowledged crash, shows no crash without its
  queue pointer, and its counters are exact after a rollup.
"""

import random
import socket
import uuid

from faults import chaos_harness as chaos
import pytest
from faults.faultproxy import FAULTS, FaultProxy

from socorro_store.backends import Increment, RowMutation, open_backend
from socorro_store.errors import BackendUnavailable, TableNotFound
from socorro_store.schema import keys as K
from socorro_store.schema.specs import FamilySpec, TableSpec

RETRIES = 2
REACHES_SERVER = {"drop_before": False, "drop_after": True, "delay": True, "truncate": True}


@pytest.fixture
def proxied(gateway_buffered_binary):
    """``(backend through the proxy, backend direct, proxy)`` sharing a fresh table prefix."""
    prefix = "f" + uuid.uuid4().hex[:10]
    proxy = FaultProxy(("127.0.0.1", gateway_buffered_binary.port), delay_s=1.0).start()
    direct_url = gateway_buffered_binary.url(table_prefix=prefix)
    via = open_backend(f"hbase://127.0.0.1:{proxy.port}?table_prefix={prefix}&timeout_ms=300&retries={RETRIES}")
    direct = open_backend(direct_url)
    direct.create_table(TableSpec("t", (FamilySpec("cf"),)))
    direct.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"1"})])
    via.get_row("t", b"r", columns=[b"cf"])  # warm the pool and the family cache: faults hit the call itself
    yield via, direct, proxy
    proxy.stop()
    via.close()
    direct.close()


@pytest.mark.parametrize("fault", FAULTS)
def test_idempotent_read_is_retried_and_succeeds(proxied, fault):
    via, _direct, proxy = proxied
    proxy.inject(fault)
    assert via.get_row("t", b"r") == {b"cf:a": b"1"}
    assert proxy.injected[fault] == 1


@pytest.mark.parametrize("fault", FAULTS)
def test_idempotent_put_is_retried_and_lands_once(proxied, fault):
    via, direct, proxy = proxied
    proxy.inject(fault)
    via.mutate_rows("t", [RowMutation(b"p", {b"cf:x": b"v"})])
    assert proxy.injected[fault] == 1
    assert direct.get_cells("t", b"p", b"cf:x") and direct.get_row("t", b"p") == {b"cf:x": b"v"}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_page_lost_mid_scan_is_read_again_not_skipped(proxied, fault, reverse):
    """A fetch whose reply is lost is never replayed on the same scanner (that would return the
    next page); a new scanner resumes after the last row yielded."""
    via, direct, proxy = proxied
    rows = [b"s%03d" % i for i in range(45)]
    direct.mutate_rows("t", [RowMutation(r, {b"cf:a": r}) for r in rows])
    # open + first fetch pass, then the second fetch (rows 10-19) breaks
    proxy.inject(fault, after=2)
    got = [row for row, _cells in via.scan("t", prefix=b"s", page_size=10, reverse=reverse)]
    assert got == (rows[::-1] if reverse else rows)
    assert proxy.injected[fault] == 1


@pytest.mark.parametrize("fault", FAULTS)
def test_exhausted_budget_is_backend_unavailable(proxied, fault):
    via, _direct, proxy = proxied
    proxy.inject(fault, RETRIES + 1)
    with pytest.raises(BackendUnavailable):
        via.get_row("t", b"r")
    assert proxy.injected[fault] == RETRIES + 1
    assert via.get_row("t", b"r") == {b"cf:a": b"1"}  # and the backend recovers afterwards


@pytest.mark.parametrize("fault", FAULTS)
def test_increment_is_never_replayed(proxied, fault):
    via, direct, proxy = proxied
    proxy.inject(fault)
    with pytest.raises(BackendUnavailable):
        via.increment_many([Increment("t", b"c", b"cf:n", 1)])
    cells = direct.get_row("t", b"c")
    value = K.decode_counter(cells[b"cf:n"]) if cells else 0
    assert value == int(REACHES_SERVER[fault])  # ran at most once: never replayed blindly


@pytest.mark.parametrize("fault", ["drop_after", "truncate"])
def test_check_and_put_is_never_replayed(proxied, fault):
    via, direct, proxy = proxied
    proxy.inject(fault)
    with pytest.raises(BackendUnavailable):
        via.check_and_put("t", b"k", b"cf:m", None, {b"cf:m": b"1"})
    assert direct.get_row("t", b"k") == {b"cf:m": b"1"}  # applied by the one request that reached it


def test_fault_after_some_calls_hits_a_later_call(proxied):
    via, _direct, proxy = proxied
    proxy.inject("drop_after", count=1, after=1)
    via.get_row("t", b"r")
    assert proxy.injected["drop_after"] == 0
    via.get_row("t", b"r")
    assert proxy.injected["drop_after"] == 1
    with pytest.raises(ValueError):
        proxy.inject("explode")


def test_unreachable_server_is_backend_unavailable():
    with socket.socket() as holder:  # a port nobody listens on
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
    with open_backend(f"hbase://127.0.0.1:{port}?timeout_ms=200&retries=1") as backend:
        with pytest.raises(BackendUnavailable):
            backend.list_tables()


def test_crash_store_under_random_faults_loses_nothing(tmp_path):
    result = chaos.fault_trial(tmp_path / "store", seed=11, count=40, rng=random.Random(3), fault_rate=0.5)
    assert result["faults"] > 0 and result["acknowledged"] > 0, result
    problems = {k: result[k] for k in ("lost", "lost_processed", "duplicates", "half_visible", "missing_after",
                                       "orphan_after", "drift_before", "queue_drift_before", "drift_after", "queue_drift_after", "raw_errors",
                                       "integrity")}
    assert problems == dict.fromkeys(problems, 0), result


@pytest.mark.parametrize("fault", ["drop_after", "delay", "truncate"])  # the delete reached the server
def test_a_drop_whose_reply_is_lost_is_retried_and_reports_the_table_dropped(proxied, fault, caplog):
    """Before: the retry's first call answered TableNotFound for a drop that worked."""
    via, direct, proxy = proxied
    direct.create_table(TableSpec("d", (FamilySpec("cf"),)))
    proxy.inject(fault, after=2)  # isTableEnabled and disableTable answer; deleteTable's reply is lost
    with caplog.at_level("WARNING", logger="socorro_store"):
        via.drop_table("d")
    assert proxy.injected[fault] == 1
    assert "d" not in direct.list_tables()
    assert "already gone on the retry" in caplog.text
    with pytest.raises(TableNotFound):  # a table that was never there is still not found
        via.drop_table("d")
