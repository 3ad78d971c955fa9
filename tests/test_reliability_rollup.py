"""Issue 21, defect 11: the first roll-up's cost grows with the data, not the calendar.

Two crashes two years apart walked 1,059 days; one imported crash from 2017 walked every day
since.  The plan now lists only days that hold crashes or counters (:mod:`jobs.data_days`), found
by one-row scans that skip from one day to the next.  Asserted on days walked and calls made.
"""

from datetime import datetime, timedelta, timezone

from store_helpers import counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.jobs import data_days, rollup
from socorro_store.schema import keys as K

UTC = timezone.utc
OLD = datetime(2017, 3, 4, 5, 6, tzinfo=UTC)
NEW = datetime(2019, 2, 1, 10, 0, tzinfo=UTC)
UNTIL = datetime(2019, 2, 3, tzinfo=UTC)


def _save(store, moment, salt):
    cid = crash_id(salt, moment)
    store.save_raw_crashes([(raw_crash(cid, moment), {}, cid)])
    store.save_processed_crashes([processed(cid)])
    return cid


def test_two_crashes_two_years_apart_walk_two_days(store):
    _save(store, OLD, "1")
    _save(store, NEW, "f")
    store.backend.calls.clear()
    report = rollup.run_rollup(store.backend, until=UNTIL, grace_s=0)
    assert report["days"] == 2  # was 700: every day from 2017-03-04
    assert report["crashes_read"] == 2
    scans = store.backend.calls["scan"]
    assert scans < 300, dict(store.backend.calls)  # 3 sources x 16 salts x (days + 1), not x days
    # the counters it wrote are exact: the old crash's day and month are made exact
    day = store.get_metrics(K.metrics_row(OLD, "day"))
    assert day["submitted_crash_reports"] == 1 and day["unique_crash_signatures"] == 1
    assert store.get_metrics(K.metrics_row(OLD, "month"))["submitted_crash_reports"] == 1
    # a second run finds nothing to change and walks only the lookback's days with data
    again = rollup.run_rollup(store.backend, until=UNTIL, grace_s=0)
    assert again["cells_written"] == 0 and again["days"] <= 2


def test_a_day_with_counters_but_no_crash_is_made_exact(store):
    counted_live(store)  # a cut-over store's counters are the deriver's, never a drifted one's
    _save(store, NEW, "a")
    stray = datetime(2018, 6, 7, 8, 0, tzinfo=UTC)  # a drifted counter on a day whose crashes are gone
    from socorro_store.backends import Increment

    store.backend.increment_many([Increment(K.METRICS, K.metrics_row(stray, "day"),
                                            K.counter_column("submitted_crash_reports"), 3)])
    found = data_days.days_with_data(store.backend, datetime(2017, 1, 1).date(), UNTIL.date())
    assert found == [datetime(2018, 6, 7, tzinfo=UTC), datetime(2019, 2, 1, tzinfo=UTC)]
    rollup.run_rollup(store.backend, until=UNTIL, grace_s=0)
    assert store.get_metrics(K.metrics_row(stray, "day")).get("submitted_crash_reports", 0) == 0


def test_days_with_data_skips_from_day_to_day(store):
    for i in range(3):
        _save(store, OLD + timedelta(days=300 * i), "0123456789abcdef"[i])
    store.backend.calls.clear()
    found = data_days.days_with_data(store.backend, OLD.date(), UNTIL.date())
    assert found == [datetime.combine((OLD + timedelta(days=300 * i)).date(), datetime.min.time(), UTC)
                     for i in range(3)]
    # per source: one call per (salt, day held) plus one empty call per salt; metrics: per day
    assert store.backend.calls["scan"] <= 2 * (16 + 3) + 3 * 3 + 4, dict(store.backend.calls)
