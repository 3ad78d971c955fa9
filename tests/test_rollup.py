"""Roll-up: corrupted counters become exact, reruns change nothing, resume, single run, expiry."""

import pytest
from jobs_helpers import UNTIL, expected_counters, ingest, live_counters, make_crashes
from store_helpers import counted_live

from socorro_store import open_store
from socorro_store.backends import Increment, RowMutation
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import rollup
from socorro_store.jobs import runs as jobs
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK


@pytest.fixture
def loaded(backend_url, prebuilt_tables):
    # the counters of the ingest in the saving thread: these tests are about the roll-up, which
    # reads them through the backend (the background sender has tests of its own)
    # a store not cut over: its counters are incremented live, and these tests are about the
    # roll-up repairing them (a cut-over store's: tests/test_derivation_deriver.py)
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        counted_live(store)
        specs = make_crashes()
        ingest(store, specs)
        yield store.backend, specs


def _corrupt(backend):
    day, hour, minute = b"2016-12-31", b"2016-12-31T05", b"2016-12-30T22:17"
    backend.mutate_rows(K.METRICS, [
        RowMutation(day, {b"counters:submitted_crash_reports": K.encode_counter(999)}),
        RowMutation(hour, deletes=[b"counters"]),
        RowMutation(minute, {b"counters:submitted_oop_bogus_crash_reports": K.encode_counter(3)}),
        RowMutation(b"2016-12", deletes=[b"counters:unique_crash_signatures"]),
        RowMutation(b"2016", {b"counters:unique_crash_signatures": K.encode_counter(77)}),
    ])
    backend.increment_many([Increment(K.METRICS, b"2017-01-01T03", b"counters:crash_report_processing_errors", 5)])
    mark = K.signature_row("js::GC::Mark")
    open_ = (b"counters:yearly_2017", b"counters:monthly_2017-01")  # open intervals: live counters only
    closed = [c for c in backend.get_row(K.SIGNATURES, mark) if c not in open_]
    backend.mutate_rows(K.SIGNATURES, [
        RowMutation(mark, deletes=closed),
        RowMutation(K.signature_row("nsFoo::Bar"), {b"counters:daily_2016-12-31": K.encode_counter(40)}),
        RowMutation(K.signature_row("never::seen"), {b"counters:hourly_2016-12-31T01": K.encode_counter(2)}),
    ])


def test_rollup_makes_corrupted_counters_exact_and_rerun_changes_nothing(loaded):
    backend, specs = loaded
    expected = expected_counters(specs)
    _corrupt(backend)
    assert live_counters(backend) != expected
    report = rollup.run_rollup(backend, until=UNTIL)
    assert live_counters(backend) == expected
    assert report["drift"]["metrics"] > 0 and report["drift"]["signatures"] > 0
    assert report["crashes_read"] == len(specs) and report["cells_written"] > 0
    example = {(e["row"], e["column"]) for e in report["drift_examples"]}
    assert ("2016-12-31", "counters:submitted_crash_reports") in example
    # rolled-up intervals are marked
    marks = backend.get_rows(K.METRICS, [b"2016-12-31", b"2016-12-31T05", b"2016-12", b"2016"],
                             columns=[rollup.COL_ROLLED_UP])
    assert len(marks) == 4
    again = rollup.run_rollup(backend, until=UNTIL, since="2016-12-01")
    assert again["drift"] == {} and again["cells_written"] == 0 and again["cells_deleted"] == 0
    assert live_counters(backend) == expected


def test_open_intervals_are_left_to_live_counters(loaded):
    backend, specs = loaded
    # cutoff in the middle of 2016-12-31: that day, its month and year stay open
    backend.mutate_rows(K.METRICS, [RowMutation(b"2016-12-31", {b"counters:submitted_crash_reports":
                                                                K.encode_counter(999)})])
    rollup.run_rollup(backend, until="2016-12-31T12:00:00Z", grace_s=0)
    cells = backend.get_row(K.METRICS, b"2016-12-31")
    assert K.decode_counter(cells[b"counters:submitted_crash_reports"]) == 999
    assert rollup.COL_ROLLED_UP not in cells
    assert rollup.COL_ROLLED_UP in backend.get_row(K.METRICS, b"2016-12-31T11")
    assert rollup.COL_ROLLED_UP not in backend.get_row(K.METRICS, b"2016-12-31T12")


def test_late_crash_is_counted_at_the_next_run(loaded):
    backend, specs = loaded
    rollup.run_rollup(backend, until=UNTIL)
    first = min(specs, key=lambda spec: spec["submitted"])  # 2016-12-30: before the lookback days
    late = dict(first, id="0" + first["id"][1:], hang=None)
    store = open_store.__globals__["CrashStore"](backend)  # not closed: that would close `backend`
    ingest(store, [late])
    # its increment of the hour row was lost; the day row's arrived, so the day's digest differs
    backend.increment_many([Increment(K.METRICS, K.metrics_row(late["submitted"], "hour"),
                                      b"counters:submitted_crash_reports", -1)])
    report = rollup.run_rollup(backend, until=UNTIL)
    assert report["days"] == rollup.DEFAULT_LOOKBACK_DAYS + 1  # the lookback days + the changed day
    assert live_counters(backend) == expected_counters(specs + [late])


def test_resume_after_failure_gives_the_same_result(loaded, monkeypatch):
    backend, specs = loaded
    _corrupt(backend)
    real = rollup.rollup_day
    calls = []

    def failing(backend_, day, *args, **kwargs):
        calls.append(day)
        if len(calls) == 2:
            raise OSError("injected: killed midway")
        return real(backend_, day, *args, **kwargs)

    monkeypatch.setattr(rollup, "rollup_day", failing)
    with pytest.raises(jobs.JobFailed):
        rollup.run_rollup(backend, until=UNTIL, max_attempts=1)
    monkeypatch.setattr(rollup, "rollup_day", real)
    report = rollup.run_rollup(backend, until=UNTIL)
    assert live_counters(backend) == expected_counters(specs)
    runs = jobs.list_runs(backend, "rollup")
    assert [r.status for r in runs] == [jobs.SUCCEEDED, jobs.FAILED]
    assert "injected: killed midway" in runs[1].error
    assert runs[0].resumed_from == runs[1].run_id and runs[1].checkpoint["next"] == 1
    assert report["days"] == len(runs[1].checkpoint["days"])


def test_two_rollups_at_once_one_runs(loaded):
    backend, _specs = loaded
    holder = jobs.start_run(backend, "rollup")
    with pytest.raises(jobs.JobLeaseHeld) as info:
        rollup.run_rollup(backend, until=UNTIL)
    assert holder.run.run_id in str(info.value)
    jobs.finish_run(holder, jobs.SUCCEEDED)


def test_bad_arguments_write_nothing(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        for kwargs in ({"until": "yesterday"}, {"grace_s": -1}, {"since": 5}, {"lookback_days": -2}):
            with pytest.raises(InvalidArgument):
                rollup.run_rollup(store.backend, **kwargs)
        assert list(store.backend.scan(K.JOBS)) == [] and list(store.backend.scan(K.METRICS)) == []


def test_expiry_keeps_coarser_levels_and_only_deletes_rolled_up_detail(loaded):
    from socorro_store.jobs import expiry

    backend, specs = loaded
    now = "2017-06-15T00:00:00Z"
    untouched = expiry.expire(backend, now=now)  # nothing rolled up yet: nothing may go
    assert untouched["metrics_minute_rows"] == 0 and untouched["signature_columns"] == 0
    assert untouched["kept_unmarked"] > 0
    rollup.run_rollup(backend, until=UNTIL)
    before_metrics, before_sigs = live_counters(backend)
    report = expiry.run_expire(backend, now=now)
    assert report["metrics_minute_rows"] > 0 and report["signature_columns"] > 0
    metrics, sigs = live_counters(backend)
    assert report["metrics_hour_rows"] > 0
    # coarser levels are intact; minute (> 7 days) and hour rows (> 90 days), rolled up, are gone
    for row, values in before_metrics.items():
        level = K.parse_metrics_row(row)[0]
        if level in ("minute", "hour"):
            assert row not in metrics
        else:
            assert metrics[row] == values
    # hourly and daily columns are past retention and their days/months rolled up: gone.  monthly
    # 2016-12 went (year 2016 is rolled up); daily and monthly 2017-01 stay: 2017-01 is still open.
    for row, values in sigs.items():
        kept = (b"counters:yearly_", b"counters:monthly_2017-", b"counters:daily_2017-")
        assert values == {c: v for c, v in before_sigs[row].items() if c.startswith(kept)}
    # the first-seen markers went with the signature columns of their intervals
    seen = [K.parse_metrics_row(row) for row, _cells in backend.scan(K.SIGNATURES_SEEN)
            if not row.startswith((DK.REGISTRY_PREFIX, RK.RANK_PREFIX))]  # the dimension registry rows stay
    assert report["first_seen_rows"] > 0 and seen
    assert all(level == "year" or (level in ("month", "day") and start.year == 2017) for level, start in seen)
    # and the rankings with the daily columns they sum
    ranked = [RK.parse_rank_row(row)[0] for row, _cells in backend.scan(K.SIGNATURES_SEEN, start=RK.RANK_PREFIX,
                                                                          stop=RK.SINCE_ROW)]
    assert report["ranking_rows"] > 0 and ranked and all(day.year == 2017 for day in ranked)
    # the month rows were flagged, so rolling them up again recounts the crashes
    assert rollup.COL_SIG_DAYS_EXPIRED in backend.get_row(K.METRICS, b"2016-12")
    rollup.run_rollup(backend, until=UNTIL, since="2016-12-01")
    metrics, sigs = live_counters(backend)  # coarse rows unchanged; the re-created detail is exact
    assert (metrics, sigs) == (before_metrics, before_sigs)
    assert expiry.run_expire(backend, now=now)["metrics_minute_rows"] == report["metrics_minute_rows"]


def test_retention_keeps_hour_rows_at_least_as_long_as_minute_rows():
    from socorro_store.jobs.expiry import Retention

    with pytest.raises(InvalidArgument):
        Retention(metrics_minute_days=30, metrics_hour_days=7)
    assert Retention(metrics_minute_days=7, metrics_hour_days=7).metrics_hour_days == 7
