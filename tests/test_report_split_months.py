"""The OS split of a period of days reads the period's last month as the month less the days
after the period (:func:`reports._signed_columns`): the split equals the crashes of the period,
whatever falls before it, after it, or in the month's other days.  Every backend kind."""

import random
from datetime import datetime, timedelta, timezone

import pytest
from store_helpers import crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore import reports
from socorro_store.schema import keys as K

#: (day, crashes, OS names cycled): days before, inside and after the periods asked
DAYS = [("2016-08-30", 2), ("2016-08-31", 3), ("2016-09-01", 4), ("2016-09-04", 1), ("2016-09-15", 5),
        ("2016-09-28", 2), ("2016-09-29", 3), ("2016-09-30", 1)]
OSES = ["Windows NT", "Linux", "Mac OS X"]


@pytest.fixture
def store(backend_url):
    with open_store(backend_url, search_url="none") as opened:
        opened.create_tables()
        yield opened


def _save_days(store):
    rng, crashes = random.Random(3), []
    for day, n in DAYS:
        at = datetime.fromisoformat(day).replace(hour=10, tzinfo=timezone.utc)
        for i in range(n):
            cid = crash_id(day=at, rng=rng)
            os_name = OSES[(i + len(crashes)) % len(OSES)]
            store.save_raw_crash(raw_crash(cid, submitted=at + timedelta(minutes=i)), {}, cid)
            store.save_processed(processed(cid, signature="A", product="Firefox", version="120.0", os_name=os_name))
            crashes.append((at, os_name))
    store.settle()
    return crashes


def _truth(crashes, start, end):
    out = {}
    for at, os_name in crashes:
        if start <= at < end:
            out[os_name] = out.get(os_name, 0) + 1
    return out


#: periods (first day, day after the last), each in a way of its own
PERIODS = [("2016-08-31", "2016-09-29"),  # from before the month to its 28th: the month less the 29th, 30th
           ("2016-09-01", "2016-09-30"),  # the month but its last day
           ("2016-09-05", "2016-09-29"),  # from inside the month: a column a day
           ("2016-08-30", "2016-09-02")]  # the month's first day only


def test_the_os_split_of_days_is_the_crashes_of_those_days(store):
    crashes = _save_days(store)
    for first, last in PERIODS:
        start, end = (datetime.fromisoformat(d).replace(tzinfo=timezone.utc) for d in (first, last))
        truth = _truth(crashes, start, end)
        assert truth and sum(truth.values()) < len(crashes)
        split = reports.os_splits(store.backend, ["A"], start, end)
        assert split == {"A": dict(sorted(truth.items(), key=lambda kv: (-kv[1], kv[0])))}, (first, last)


def test_the_month_is_read_only_where_the_period_holds_its_first_day_and_most_of_it():
    def days(first, n):
        start = datetime.fromisoformat(first).replace(tzinfo=timezone.utc)
        return [start + timedelta(days=i) for i in range(n)]

    month = K.signature_counter_column("month", b"2016-09")
    thirty = reports._signed_columns("day", days("2016-08-31", 29))  # to the 28th
    assert (month, 1) in thirty and len(thirty) == 4  # Aug 31, the month, less the 29th and 30th
    assert sum(sign for _column, sign in thirty) == 0
    assert all(sign == 1 for _column, sign in reports._signed_columns("day", days("2016-09-05", 24)))
    assert all(sign == 1 for _column, sign in reports._signed_columns("day", days("2016-08-25", 10)))
