"""Batch jobs in bounded memory at any volume, and jobs that touch the same rows exclude each other.

Memory is measured with tracemalloc (Python allocations: every row a job reads is a Python object)
on a real embedded store, for the same day holding 1x and 4x the crashes: every minute of the day
holds a crash in both and the crashes are alike (one signature, one process type), so the counters
have the same cells; a job whose held state depends only on intervals, signatures and one page
peaks the same, one that held the crashes of the day would peak ~4x.
"""

import tracemalloc
from datetime import datetime, timedelta, timezone

import pytest
from bench.bulk_crashes import load_direct
from click.testing import CliRunner
from store_helpers import counted_live

from socorro_store import open_store
from socorro_store.cli import main
from socorro_store.jobs import expiry, recount, rollup, runs, scrutiny
from socorro_store.schema import keys as K

DAY = datetime(2016, 9, 1, tzinfo=timezone.utc)
BASE = 1440  # one crash a minute


def _store(tmp_path, name, per_day):
    store = open_store(f"embedded://{tmp_path / name}")
    store.create_tables()
    # rows written past the store's saves, as an older version's store holds them: counted by
    # the roll-up's recount, whose memory these tests bound (not cut over to the deriver)
    counted_live(store)
    assert load_direct(store.backend, 1, per_day, seed=3, start=DAY, uniform=True) == per_day
    return store


def _peak(fn):
    tracemalloc.start()
    try:
        result = fn()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("scale")
    small, large = _store(tmp_path, "x1", BASE), _store(tmp_path, "x4", 4 * BASE)
    yield small, large
    small.close()
    large.close()


def test_recount_holds_one_page_and_per_interval_state(stores):
    peaks, tallies = [], []
    for store in stores:
        peak, tally = _peak(lambda store=store: recount.count_day(store.backend, DAY, DAY + timedelta(days=1),
                                                                  page_size=50))
        peaks.append(peak)
        tallies.append(tally)
    assert [t.crashes for t in tallies] == [BASE, 4 * BASE]
    assert tallies[0].held_peak == tallies[1].held_peak == 50  # one page of crash rows
    assert [len(t.signature_counts.minutes_of(b"", b"\xff")) for t in tallies] == [1440, 1440]  # on disk
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_rollup_memory_does_not_grow_with_crashes_and_each_key_is_written_once(stores):
    peaks, reports = [], []
    for store in stores:
        peak, report = _peak(lambda store=store: rollup.run_rollup(store.backend, until=DAY + timedelta(days=1),
                                                                     grace_s=0, page_size=50))
        peaks.append(peak)
        reports.append(report)
    assert [r["crashes_read"] for r in reports] == [BASE, 4 * BASE]
    assert peaks[1] < 1.5 * peaks[0], peaks
    large = stores[1]
    assert large.get_metrics("2016-09-01")["submitted_crash_reports"] == 4 * BASE
    again = rollup.run_rollup(large.backend, until=DAY + timedelta(days=1), grace_s=0, since=DAY)
    assert again["cells_written"] == 0 and again["cells_deleted"] == 0


def test_verify_indexes_memory_does_not_grow_with_crashes(stores):
    peaks = []
    for store, n in zip(stores, (BASE, 4 * BASE)):
        peak, report = _peak(lambda store=store: scrutiny.verify_indexes(store.backend, page_size=50,
                                                                         since="2016-09-01", until="2016-09-02"))
        peaks.append(peak)
        assert report[K.SUBMITTED_TIME]["valid"] == n and report[K.SIGNATURE_OOID]["valid"] == n
        # the loader writes no queue pointers for these processed crashes, and no orphans
        assert all(t["missing"] == 0 and t["orphan"] == 0 for t in report.values())
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_rollup_is_refused_while_expire_holds_the_counters(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        backend = store.backend
        holder = runs.start_run(backend, "expire", locks=(runs.COUNTERS_LEASE,))
        before = [row for row, _cells in backend.scan(K.JOBS, prefix=b"run")]
        with pytest.raises(runs.JobLeaseHeld) as refused:
            rollup.run_rollup(backend, until="2016-09-02")
        assert refused.value.holder["job"] == "expire" and refused.value.lock == "counters"
        assert "expire" in str(refused.value) and holder.run.run_id in str(refused.value)
        with pytest.raises(runs.JobLeaseHeld):
            scrutiny.run_reconcile_queue(backend)
        assert [row for row, _cells in backend.scan(K.JOBS, prefix=b"run")] == before  # no run recorded
        assert runs.read_lease(backend, "rollup") is None and runs.read_lease(backend, "reconcile-queue") is None
        assert list(backend.scan(K.METRICS)) == []
        # verify-indexes without --repair only reads: it runs; with --repair it takes 'indexes'
        scrutiny.run_verify_indexes(backend)
        repair = runs.start_run(backend, "verify-indexes", locks=(runs.INDEXES_LEASE,))
        with pytest.raises(runs.JobLeaseHeld) as indexes:
            scrutiny.run_verify_indexes(backend, repair=True)
        assert indexes.value.holder["job"] == "verify-indexes"
        runs.finish_run(repair, runs.SUCCEEDED)
        runs.finish_run(holder, runs.SUCCEEDED)
        assert rollup.run_rollup(backend, until="2016-09-02")["days"] == 0
        expiry.run_expire(backend)


def test_cli_says_who_holds_the_lease(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        holder = runs.start_run(store.backend, "rollup", locks=(runs.COUNTERS_LEASE,))
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    result = runner.invoke(main, ["--url", embedded_url, "expire"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "'rollup' holds the 'counters' lease" in result.stderr
    assert holder.run.run_id in result.stderr and "Traceback" not in result.stderr


def test_rollup_memory_does_not_grow_with_the_signatures_of_a_day(tmp_path):
    """A day's per-signature counts go to a temporary file, and signatures are fixed a chunk at a
    time: rolling up a day of 4x the signatures peaks about the same (issue 32: it held every
    signature's counts, its live cells and every differing cell of the day at once)."""
    peaks, distinct = [], []
    for name, n in (("s1", 3000), ("s4", 12000)):
        store = open_store(f"embedded://{tmp_path / name}", background_counters=False)
        try:
            store.create_tables()
            counted_live(store)  # bulk-loaded rows, counted by the recount (see _store)
            load_direct(store.backend, 1, n, seed=5, start=DAY, signatures=n)
            peak, report = _peak(lambda store=store: rollup.run_rollup(
                store.backend, until=DAY + timedelta(days=1), grace_s=0, since=DAY))
            peaks.append(peak)
            distinct.append(sum(1 for _ in store.backend.scan(K.SIGNATURES, columns=[K.FAMILY_COUNTERS])))
        finally:
            store.close()
    assert distinct[1] > 3 * distinct[0], distinct  # the second day holds > 3x the signatures
    assert peaks[1] < 1.5 * peaks[0], peaks
