"""First appearances of the top crashers (the web view's column): read a level at a time, each
row its own columns, and equal to what a whole-row read of each signature's counters says.

Every backend kind.  The counters are written directly (the cells a crash counts in at every
level, or only the coarser ones where expiry took the finer), so the cases cover years, months,
days and hours, intervals counted down to 0, and signatures with no crash.
"""

import random
from datetime import datetime, timedelta, timezone

import pytest

from socorro_store import open_store
from socorro_store.backends import Increment
from socorro_store.crashstore import signature_reports
from socorro_store.schema import keys as K

NOW = datetime(2026, 11, 27, 15, 30, tzinfo=timezone.utc)


@pytest.fixture
def store(backend_url):
    with open_store(backend_url, search_url="none") as s:
        s.create_tables()
        yield s


def _count(backend, signature, moment, amount=1, levels=("hour", "day", "month", "year")):
    row = K.signature_row(signature)
    columns = K.signature_counter_columns(moment)
    backend.increment_many([Increment(K.SIGNATURES, row, columns[level], amount) for level in levels])


def _whole_row_first(backend, signature):
    """The first appearance by a read of the signature's whole row: every interval column
    above 0 (what the page showed before it read a level at a time)."""
    columns = signature_reports._first_seen_columns(NOW)
    cells = backend.get_row(K.SIGNATURES, K.signature_row(signature))
    first = signature_reports._first_seen(signature_reports._by_level(cells, columns, positive=True))
    return {"level": first[0], "start": first[1].isoformat()} if first else None


def test_first_appearances_equal_a_whole_row_read_at_every_level(store):
    rng = random.Random(47)
    backend = store.backend
    ages = [timedelta(hours=2), timedelta(hours=30), timedelta(days=5), timedelta(days=50),
            timedelta(days=200), timedelta(days=800), timedelta(days=4000)]
    signatures = [f"sig{i}" for i in range(24)]
    for signature in signatures[:-2]:  # the last two never crash
        for _ in range(rng.randint(1, 4)):
            age = rng.choice(ages) + timedelta(minutes=rng.randint(0, 600))
            moment = NOW - age
            # expiry keeps 49 hours, 31 days and 3 years of the finer levels: older crashes keep
            # only their coarser columns
            levels = [level for level, kept in (("hour", timedelta(hours=49)), ("day", timedelta(days=31)),
                                                ("month", timedelta(days=3 * 365)), ("year", None))
                      if kept is None or age < kept]
            _count(backend, signature, moment, levels=levels)
    _count(backend, signatures[-2], NOW - timedelta(days=3))
    _count(backend, signatures[-2], NOW - timedelta(days=3), amount=-1)  # deleted: down to 0
    _count(backend, signatures[0], NOW - timedelta(days=9000), levels=("year",))
    before = sum(backend.calls.values())
    found = signature_reports.first_appearances(backend, signatures, NOW)
    assert sum(backend.calls.values()) - before <= 4  # one read a level at most
    assert found == {s: _whole_row_first(backend, s) for s in signatures}
    assert found[signatures[-1]] is None and found[signatures[-2]] is None
    assert {first["level"] for first in found.values() if first} >= {"hour", "day", "month", "year"}


def test_first_appearances_descend_one_level_a_read(store):
    backend = store.backend
    _count(backend, "busy", NOW - timedelta(days=20), levels=("day", "month", "year"))  # its hours expired
    for hours in range(0, 24 * 19, 5):  # a crash every 5 hours since: every later interval has one
        _count(backend, "busy", NOW - timedelta(hours=hours))
    before = backend.calls.get("get_rows", 0)
    found = signature_reports.first_appearances(backend, ["busy"], NOW)
    day = (NOW - timedelta(days=20)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert found == {"busy": {"level": "day", "start": day.isoformat()}}
    # the years, the first year's months, its first month's days, its first day's hours (gone)
    assert backend.calls.get("get_rows", 0) - before == 4
