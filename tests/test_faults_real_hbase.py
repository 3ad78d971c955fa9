"""Faults on a real Apache HBase (tools/servers/local_hbase.py): its processes killed, its replies lost.

The module starts a private HBase of its own (never the session's, which other tests share):
its processes are SIGKILLed here.

* HBase's Thrift server SIGKILLed mid-ingest (writer and processor child processes acknowledging
  crashes, ``tools/faults/chaos_harness.py``), then restarted on the same port: every acknowledged crash
  reads back, no crash row lacks its queue pointer, the queue yields no crash twice and none that
  was acknowledged as processed, counters are exact after rollup.
* The HBase JVM (master, region server and ZooKeeper) SIGKILLed mid-ingest, restarted on the same
  rootdir: the same holds, so what was acknowledged was in the WAL and replayed.
* Through a :class:`FaultProxy` in front of HBase's Thrift port: idempotent calls are retried on a
  fresh connection and succeed; past the budget the caller gets ``BackendUnavailable``;
  increments, appends and check-and-put are never replayed (HBase ran them exactly as often as a
  request reached it); a lost scanner page is read again by a new scanner, never skipped.  These
  are the rules of README "hbase backend" and ``backends/hbase/thrift1.py``.

Runtime is dominated by HBase: ~15-20 s to start, ~20 s to restart after the JVM is killed.
"""

import random
import time
import uuid

from faults import chaos_harness as chaos
import pytest
from faults.faultproxy import FAULTS, FaultProxy

from socorro_store.backends import Increment, RowMutation, open_backend
from socorro_store.errors import BackendUnavailable
from socorro_store.schema import keys as K
from socorro_store.schema.specs import FamilySpec, TableSpec

RETRIES = 2
REACHES_SERVER = {"drop_before": False, "drop_after": True, "delay": True, "truncate": True}
RESTART_TIMEOUT_S = 240  # a deadline for HBase to come back, not a figure asserted on


@pytest.fixture(scope="module")
def hbase(tmp_path_factory):
    """A LocalHBase of this module's own (its processes get killed)."""
    from servers.hbase_jars import HBaseUnavailable, require_tools
    from servers.hbase_standalone import LocalHBase

    try:
        require_tools()
    except HBaseUnavailable as exc:
        pytest.skip(f"no real HBase: {exc}")
    local = LocalHBase(tmp_path_factory.mktemp("hbase-faults"), log=print)
    try:
        local.start(timeout_s=180)
    except HBaseUnavailable as exc:
        pytest.fail(f"real HBase did not start: {exc}", pytrace=False)
    yield local
    local.stop(grace_s=5)  # its data is thrown away: no need to wait for a clean shutdown


def _prefixed(hbase, tag):
    return f"{hbase.url}&table_prefix={tag}{uuid.uuid4().hex[:8]}"


def _assert_survived(result):
    print({k: v for k, v in result.items() if not k.endswith("_examples")})  # the figures, with -s
    assert result["killed_mid_ingest"], result  # the kill landed while every child was working
    assert result["acknowledged"] > 0 and result["processed_acknowledged"] > 0, result
    problems = {k: result[k] for k in ("lost", "lost_processed", "duplicates", "half_visible", "missing_before",
                                       "missing_after", "orphan_after", "drift_before", "queue_drift_before", "drift_after", "queue_drift_after",
                                       "raw_errors", "drained_twice", "drained_processed", "drained_absent")}
    assert problems == dict.fromkeys(problems, 0), result
    assert result["stored"] >= result["acknowledged"]
    # every child stopped on the outage with a typed error, not by finishing its work first
    assert result["typed_errors"] >= 1, result


def test_thrift_server_sigkill_mid_ingest_loses_nothing_queues_nothing_twice(hbase, tmp_path):
    def restart():
        began = time.monotonic()
        hbase.start_thrift()
        hbase.wait_ready(began + RESTART_TIMEOUT_S, ddl=False)
        print(f"Thrift server back in {time.monotonic() - began:.1f} s")

    result = chaos.server_kill_trial(_prefixed(hbase, "kt"), hbase.kill_thrift, restart, tmp_path, seed=601,
                                     rng=random.Random(1))
    _assert_survived(result)


def test_hbase_jvm_sigkill_mid_ingest_keeps_every_acknowledged_crash(hbase, tmp_path):
    def kill():
        hbase.kill_master()
        # The Thrift server's own HBase client keeps retrying the calls it was running when the
        # region server died (for minutes), and would apply them at some moment after the
        # restart, racing the checks.  Ending it too fixes the store's content before the check.
        hbase.kill_thrift()

    def restart():
        began = time.monotonic()
        hbase.start_master()
        hbase.start_thrift()
        hbase.wait_ready(began + RESTART_TIMEOUT_S)  # DDL answers: regions reassigned, WAL replayed
        print(f"HBase back in {time.monotonic() - began:.1f} s")

    result = chaos.server_kill_trial(_prefixed(hbase, "km"), kill, restart, tmp_path, seed=602,
                                     rng=random.Random(2))
    _assert_survived(result)


# -- retries through a fault proxy ----------------------------------------------------------------

@pytest.fixture
def proxied(hbase):
    """``(backend through the proxy, backend direct, proxy)`` on a fresh table prefix."""
    prefix = "fp" + uuid.uuid4().hex[:8]
    proxy = FaultProxy(("127.0.0.1", hbase.thrift_port), delay_s=3.0).start()
    # a timeout far above HBase's ms replies and below the proxy's delay: only a delay times out
    via = open_backend(f"hbase://127.0.0.1:{proxy.port}?table_prefix={prefix}&timeout_ms=1500&retries={RETRIES}")
    direct = open_backend(f"{hbase.url}&table_prefix={prefix}")
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
    # a put replayed after its reply was lost stores the same cell again, never another value
    assert direct.get_row("t", b"p") == {b"cf:x": b"v"}


@pytest.mark.parametrize("fault", FAULTS)
def test_exhausted_budget_is_backend_unavailable_then_recovers(proxied, fault):
    via, _direct, proxy = proxied
    proxy.inject(fault, RETRIES + 1)
    with pytest.raises(BackendUnavailable):
        via.get_row("t", b"r")
    assert proxy.injected[fault] == RETRIES + 1
    assert via.get_row("t", b"r") == {b"cf:a": b"1"}


@pytest.mark.parametrize("fault", FAULTS)
def test_increment_and_append_are_never_replayed(proxied, fault):
    via, direct, proxy = proxied
    proxy.inject(fault)
    with pytest.raises(BackendUnavailable):
        via.increment_many([Increment("t", b"c", b"cf:n", 1)])
    cells = direct.get_row("t", b"c")
    assert (K.decode_counter(cells[b"cf:n"]) if cells else 0) == int(REACHES_SERVER[fault])
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
        via.check_and_put("t", b"k", b"cf:m", None, {b"cf:m": b"1"})
    assert direct.get_row("t", b"k") == {b"cf:m": b"1"}


@pytest.mark.parametrize("fault", ["drop_after", "truncate"])
def test_scan_page_lost_mid_scan_is_read_again_not_skipped(proxied, fault):
    via, direct, proxy = proxied
    rows = [b"s%03d" % i for i in range(45)]
    direct.mutate_rows("t", [RowMutation(r, {b"cf:a": r}) for r in rows])
    proxy.inject(fault, after=2)  # open + first fetch pass, the second fetch (rows 10-19) breaks
    got = [row for row, _cells in via.scan("t", prefix=b"s", page_size=10)]
    assert got == rows
    assert proxy.injected[fault] == 1


@pytest.mark.parametrize("fault", ["drop_after", "truncate"])  # the delete reached HBase
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
