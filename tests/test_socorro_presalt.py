"""Crash rows in Socorro's pre-salt layout (``YYMMDD + crash id``) on a store (issue 39, item 1).

Socorro's 2013 client still read such rows (``ooid_to_row_id(ooid, old_format=True)``) and its
tables never expired a cell, so a store on Socorro's tables may hold them.  The 2013 client wrote
the crash row and its pointers (``socorro_2013_put_json_dump``); the row is then moved to the
pre-salt key it had before salting.  Every path judges such a row alike, whatever its range.
"""

from datetime import datetime, timezone

import pytest
from socorro_rows import BackendWriter, HappybaseWriter, socorro_2013_put_json_dump

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import retention, rollup, scrutiny
from socorro_store.schema import keys as K
from socorro_store.schema import stored

# Every store here is opened on backend_url and its tables created first: on a real HBase,
# a prefix that already holds them, emptied (conftest.prebuilt_tables).
pytestmark = pytest.mark.usefixtures("prebuilt_tables")

CRASH_ID = "a0000001-0000-4000-8000-000002100918"
DAY = datetime(2010, 9, 18, tzinfo=timezone.utc)


@pytest.fixture(params=["embedded", "gateway-framed-compact", "hbase-real"])
def backend_kind(request):
    return request.param


@pytest.fixture
def presalt_store(backend_url, backend_kind):
    """A store holding one crash of the 2013 client, its crash row under the pre-salt key."""
    with open_store(backend_url) as store:
        store.create_tables()
        writer = BackendWriter(store.backend) if backend_kind == "embedded" else HappybaseWriter(backend_url)
        try:
            socorro_2013_put_json_dump(writer, CRASH_ID, {"ProductName": "Firefox", "uuid": CRASH_ID,
                                                          "legacy_processing": 1,
                                                          "submitted_timestamp": "2010-09-18T10:00:00.500000+00:00"})
        finally:
            writer.close()
        salted, presalt = K.crash_row_key(CRASH_ID), stored.presalt_crash_row_key(CRASH_ID)
        store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(presalt, store.backend.get_row(K.CRASH_REPORTS, salted)),
                                                    RowMutation(salted, delete_row=True)])
        yield store


def _judged(report):
    return {table: {k: v for k, v in counts.items() if v} for table, counts in report.items()}


def test_presalt_keys_name_their_crash():
    presalt = stored.presalt_crash_row_key(CRASH_ID)
    assert presalt == b"100918" + CRASH_ID.encode()
    assert stored.crash_id_of_row(presalt) == stored.crash_id_of_row(K.crash_row_key(CRASH_ID)) == CRASH_ID
    for bad in (b"100919" + CRASH_ID.encode(), b"x" + presalt, presalt[:-1]):
        with pytest.raises(InvalidArgument):
            stored.crash_id_of_row(bad)


def test_verify_indexes_judges_presalt_rows_alike_by_day_and_whole_table(presalt_store):
    """The whole-table check judged the row as ours, then reported MISSING pointers --repair can
    never write (exit 1 for good); a day range never saw it.  Both judge it FOREIGN and keep it."""
    store = presalt_store
    for repair in (False, True, False):
        whole = scrutiny.verify_indexes(store.backend)
        for since, until in (("2010-09-18", "2010-09-19"), ("2010-01-01", None)):
            assert _judged(scrutiny.verify_indexes(store.backend, since=since, until=until)) == _judged(whole)
        assert whole[K.SUBMITTED_TIME]["foreign"] == 1 and whole[K.SUBMITTED_TIME]["missing"] == 0
        if repair:  # its pointers are orphans (no reader finds the crash through them)
            scrutiny.verify_indexes(store.backend, repair=True, orphan_age_s=0, since=DAY.date().isoformat())
    assert scrutiny.problems_left(scrutiny.verify_indexes(store.backend)) == 0
    presalt = stored.presalt_crash_row_key(CRASH_ID)
    assert store.backend.get_row(K.CRASH_REPORTS, presalt)[K.COL_OOID] == CRASH_ID.encode()


def test_expire_crashes_finds_presalt_rows(presalt_store):
    """expire-crashes read only the salted day prefixes: a pre-salt crash was never found, so
    never expired."""
    report = retention.run_expire_crashes(presalt_store.backend, "2016-01-01", dry_run=True)
    assert report["crashes"] == 1


def test_deleting_a_crash_removes_its_presalt_row(presalt_store):
    """Privacy deletion, and so expire-crashes: no row naming the crash may remain."""
    from socorro_store.crashstore.deletion import delete_crashes  # noqa: PLC0415

    delete_crashes(presalt_store.backend, [CRASH_ID], missing_ok=True)
    assert presalt_store.backend.get_row(K.CRASH_REPORTS, stored.presalt_crash_row_key(CRASH_ID)) == {}


def test_rollup_keeps_the_counters_of_a_presalt_crash(presalt_store):
    """The roll-up cannot count a crash whose row it cannot read through its pointer: its minute,
    hour and day keep Socorro's counters (as for a happybase crash with no pointer), not zero."""
    store = presalt_store
    before = store.get_metrics("2010-09-18")
    report = rollup.run_rollup(store.backend, until="2010-10-01T00:00:00Z")
    assert store.get_metrics("2010-09-18") == before and "2010-09-18" in report["kept_examples"]
