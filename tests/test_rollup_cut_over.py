"""``rollup`` on a cut-over store compares the deriver's signature cells, reading only the cells
its recount names: never a signature row whole, never a scan of the signature table.

A busy signature's row holds every interval's dimensioned cells (about 128,000 at 1 M crashes);
reading 1,000 of them whole per chunk made the roll-up of one day time out on a real HBase.
Runs on every backend kind.
"""

from datetime import timedelta

import pytest

from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.jobs import rollup
from socorro_store.schema import keys as K

DAY = BASE_TIME.date()
UNTIL = (BASE_TIME.replace(day=1) + timedelta(days=32)).replace(day=2)  # the crashes' month closed


@pytest.fixture
def store(backend_url):
    with open_store(backend_url, search_url="none") as s:
        s.create_tables()
        assert s.cut_over_counters()["crashes"] == 0
        yield s


def _ingest(store, n=24):
    for i in range(n):
        cid = crash_id(salt="0123456789abcdef"[i % 16])
        store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=7 * i), ProductName="Firefox",
                                       Version=["1.0", "2.0"][i % 2]), {}, cid)
        store.save_processed(processed(cid, signature="ABC"[i % 3], os_name=["Linux", "Windows NT"][i % 2]))
    store.settle()


class SignatureReads:
    """Counts the signature-table cells a backend instance returns, and its whole-family reads
    and scans of that table."""

    def __init__(self, backend):
        self.cells, self.whole_rows, self.scans = 0, 0, 0
        get_rows, get_rows_columns, scan = backend.get_rows, backend.get_rows_columns, backend.scan

        def counted_get_rows(table, rows, columns=None, *args, **kw):
            found = get_rows(table, rows, columns, *args, **kw)
            if table == K.SIGNATURES:
                self.whole_rows += columns is None or any(b":" not in c or c.endswith(b":") for c in columns)
                self.cells += sum(len(cells) for cells in found.values())
            return found

        def counted_get_rows_columns(table, columns_by_row):
            before = self.cells
            found = get_rows_columns(table, columns_by_row)
            if table == K.SIGNATURES and self.cells == before:  # not read by get_rows (counted there)
                self.cells += sum(len(cells) for cells in found.values())
            return found

        def counted_scan(table, *args, **kw):
            self.scans += table == K.SIGNATURES
            return scan(table, *args, **kw)

        backend.get_rows, backend.get_rows_columns, backend.scan = counted_get_rows, counted_get_rows_columns, counted_scan


def test_rollup_reads_only_the_cells_its_recount_names_and_reports_a_wrong_one(store):
    _ingest(store)
    row, column = K.signature_row("A"), K.signature_counter_column("day", K.metrics_row(BASE_TIME, "day"))
    right = K.decode_counter(store.backend.get_row(K.SIGNATURES, row, columns=[column])[column])
    store.backend.mutate_rows(K.SIGNATURES, [RowMutation(row, {column: K.encode_counter(right + 5)})])
    every_cell = sum(len(cells) for _row, cells in store.backend.scan(K.SIGNATURES))

    reads = SignatureReads(store.backend)
    report = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)

    assert report["days"] == 1 and report["months"] == 1
    assert (reads.whole_rows, reads.scans) == (0, 0)
    assert 0 < reads.cells < every_cell  # the day's hourly and daily cells, not the month's or year's
    assert report["derived_differences"] == 1  # the wrong cell, found...
    # ...and left to its one writer, the deriver (a repair is a rederivation, not the roll-up's)
    assert K.decode_counter(store.backend.get_row(K.SIGNATURES, row, columns=[column])[column]) == right + 5


def test_detail_expire_deleted_is_no_difference_and_a_wrong_count_still_is(store):
    """After ``expire`` deleted a day's minute rows, hourly and daily signature cells and
    rankings, a roll-up of that day finds them missing: retention, not a lost count (it reported
    every one as a difference).  A wrong count in what expire kept is still reported."""
    from socorro_store.jobs import expiry, runs  # noqa: PLC0415

    _ingest(store)
    first = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert not first.get("derived_differences"), first
    expired = expiry.run_expire(store.backend, now="2017-06-15T00:00:00Z")
    assert expired["metrics_minute_rows"] > 0 and expired["signature_columns"] > 0 and expired["ranking_rows"] > 0
    assert runs.list_runs(store.backend, "expire")[0].params["now"] == "2017-06-15T00:00:00+00:00"

    again = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert again["crashes_read"] == 24 and not again.get("derived_differences"), again

    day_row, column = K.metrics_row(BASE_TIME, "day"), b"counters:submitted_crash_reports"
    store.backend.mutate_rows(K.METRICS, [RowMutation(day_row, {column: K.encode_counter(25)})])
    wrong = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert wrong["derived_differences"] == 2, wrong  # the day's cell, and the month summing the days
