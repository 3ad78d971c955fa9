"""``rollup`` on a cut-over store compares the deriver's signature cells, reading only the cells
its recount names: never a signature row whole, never a scan of the signature table; and the
deriver sets right the cells found wrong while every crash's facts are right (a batch lost or
applied twice).

A busy signature's row holds every interval's dimensioned cells (about 128,000 at 1 M crashes);
reading 1,000 of them whole per chunk made the roll-up of one day time out on a real HBase.
Runs on every backend kind.
"""

from datetime import timedelta

import pytest

from faults import lost_batches
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store.backends import RowMutation
from socorro_store.crashstore import change_records, counter_deriver
from socorro_store.jobs import rollup
from socorro_store.schema import derived_keys as D
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

DAY = BASE_TIME.date()
UNTIL = (BASE_TIME.replace(day=1) + timedelta(days=32)).replace(day=2)  # the crashes' month closed


@pytest.fixture
def store(cut_over_store):
    return cut_over_store


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
    # ...and set right by its one writer, the deriver, whose counted facts agree with the recount
    assert report["derived_repaired"] == 1
    assert K.decode_counter(store.backend.get_row(K.SIGNATURES, row, columns=[column])[column]) == right


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
    # the day's cell, set right before the month is compared: the month summing the days is right
    assert (wrong["derived_differences"], wrong["derived_repaired"]) == (1, 1), wrong


def _counter_cells(backend):
    """``{(table, row, column): int}`` of every counter the deriver writes, but the rankings'
    slack (which records a repair as a change) and the roll-up's head and top rows."""
    out = {}
    for table in (K.METRICS, K.SIGNATURES):
        for row, cells in backend.scan(table, columns=[K.FAMILY_COUNTERS]):
            out.update({(table, row, c): K.decode_counter(v) for c, v in cells.items() if len(v) == 8})
    first = RK.rank_row(DAY)
    for row, cells in backend.scan(K.SIGNATURES_SEEN, start=first, stop=first + DK.SEPARATOR + b"\xff"):
        out.update({(K.SIGNATURES_SEEN, row, c): K.decode_counter(v) for c, v in cells.items()
                    if not c.startswith(b"seen:\xff")})
    return out


def _lose(backend, crash, amount=-1):
    """Move every cell ``crash`` is counted in by ``amount``, as a deriver's batch lost (-1) or
    applied twice (+1) does, the unique counts of the intervals its signature leaves too."""
    facts = D.decode_facts(backend.get_row(K.DERIVED, D.counted_row(crash))[D.COL_COUNTED])
    lost_batches.lose(backend, [(crash, facts)], amount)


def _read(backend, key):
    table, row, column = key
    raw = backend.get_row(table, row, columns=[column]).get(column)
    return K.decode_counter(raw) if raw else 0


def test_cells_of_a_batch_lost_or_applied_twice_are_set_right_at_every_level(store):
    """The lease defect's cells: every crash's counted facts right, its cells not.  Deriving the
    crashes again moves nothing; the roll-up's recount and the deriver's counted facts agree, so
    the deriver sets the day's cells to that, and the month's and year's to their sums."""
    _ingest(store)
    store.save_raw_crash(raw_crash(lone := crash_id(salt="7"), BASE_TIME + timedelta(hours=5)), {}, lone)
    store.save_processed(processed(lone, signature="only once"))
    for n, process_type in enumerate(("plugin", "browser")):  # a hang pair, counted at 18:0n
        side = crash_id(salt="8")
        store.save_raw_crash(raw_crash(side, BASE_TIME + timedelta(hours=6, minutes=n), HangID="hang-1",
                                       ProcessType=process_type), {}, side)
    store.settle()
    first = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert not first.get("derived_differences"), first
    right = _counter_cells(store.backend)

    crashes = sorted(D.parse_counted_row(row) for row, _cells in store.backend.scan(K.DERIVED, columns=[D.COL_COUNTED])
                     if D.is_counted_row(row))
    _lose(store.backend, lone)  # its signature's every cell goes: the unique counts drop too
    _lose(store.backend, crashes[3])
    _lose(store.backend, crashes[5], amount=+1)
    pair = K.counter_column("submitted_crash_report_hang_pairs")
    for row in K.metrics_rows(BASE_TIME + timedelta(hours=6, minutes=1)).values():  # the pair, lost
        assert _read(store.backend, (K.METRICS, row, pair)) == 1
        store.backend.mutate_rows(K.METRICS, [RowMutation(row, deletes=[pair])])
    wrong = _counter_cells(store.backend)
    assert wrong != right

    report = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert report["derived_differences"] > 0 and report["derived_repaired"] > 0, report
    fixed = _counter_cells(store.backend)
    assert {key: (fixed.get(key), right.get(key)) for key in set(fixed) | set(right)
            if fixed.get(key) != right.get(key)} == {}
    again = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert not again.get("derived_differences") and not again.get("derived_repaired"), again


def test_a_cell_the_counted_facts_do_not_agree_on_is_left(store):
    """The deriver sets a cell only to what the day's counted facts sum to: a recount that
    disagrees (a crash saved or deleted between the two) moves nothing, nor does a cell a crash
    with a record waiting counts in (a deletion whose row is gone but not yet derived)."""
    _ingest(store)
    row, column = K.signature_row("A"), K.signature_counter_column("day", K.metrics_row(BASE_TIME, "day"))
    key = (K.SIGNATURES, row, column)
    right = _read(store.backend, key)
    store.backend.mutate_rows(K.SIGNATURES, [RowMutation(row, {column: K.encode_counter(right + 5)})])

    def admit_all(field, value, product):
        return True

    done = counter_deriver.rederive_day(store.backend, DAY, admit_all, {key: right - 1})
    assert (done["read"], done["repaired"], done["coarse"]) == (24, 0, 0)
    assert _read(store.backend, key) == right + 5

    gone = next(cid for cid in (D.parse_counted_row(r) for r, _c in store.backend.scan(K.DERIVED, columns=[D.COL_COUNTED])
                                if D.is_counted_row(r))
                if store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(cid), [K.COL_SIGNATURE]).get(K.COL_SIGNATURE) == b"A")
    store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(gone), delete_row=True)])
    change_records.record_derived_deletions(store.backend, [gone])  # its record waits: nobody derives here
    done = counter_deriver.rederive_day(store.backend, DAY, admit_all, {key: right - 1})
    assert (done["read"], done["repaired"]) == (23, 0)
    assert _read(store.backend, key) == right + 5
    assert counter_deriver.catch_up(store.backend)  # the deletion derived: A has one crash less
    other_day = crash_id(day=BASE_TIME + timedelta(days=3))
    change_records.record_derived_deletions(store.backend, [other_day])  # waiting, of another day: no matter
    done = counter_deriver.rederive_day(store.backend, DAY, admit_all, {key: right - 1})
    assert (done["read"], done["repaired"], done["coarse"]) == (23, 1, 0)
    assert _read(store.backend, key) == right - 1


def test_crashes_an_older_writer_saved_and_counted_beside_the_deriver_are_counted_once(store):
    """An older version's save beside the deriver increments the cells itself and writes no
    record: the deriver never counted the crash.  ``rollup --since`` derives every crash of the
    day from its row (counting it a second time), then finds the cells wrong and sets them right."""
    _ingest(store)
    first = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert not first.get("derived_differences"), first
    right = _counter_cells(store.backend)
    older = [D.counted_row(cid) for cid in (crash_id(salt="3"), crash_id(salt="4"))]
    for i, row in enumerate(older):  # saved by the older version: its own increments, no facts counted
        cid = D.parse_counted_row(row)
        store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=3 + 50 * i)), {}, cid)
        store.save_processed(processed(cid, signature="A"))
    store.settle()
    right_after = _counter_cells(store.backend)
    assert right_after != right
    store.backend.mutate_rows(K.DERIVED, [RowMutation(row, delete_row=True) for row in older])

    report = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert report["derived_differences"] > 0 and report["derived_repaired"] > 0, report
    fixed = _counter_cells(store.backend)
    # the queue counters count events: deriving those crashes enters and leaves the queue once
    # more, and the size (inserts - deletes) stays
    queue = {key: fixed.pop(key) - right_after.pop(key) for key in list(fixed) if key[1] == K.QUEUE_ROW}
    assert sorted(queue.values()) == [2, 2], queue  # inserts and deletes: no size moved
    assert {key: (fixed.get(key), right_after.get(key)) for key in set(fixed) | set(right_after)
            if fixed.get(key) != right_after.get(key)} == {}
    again = rollup.run_rollup(store.backend, until=UNTIL.isoformat(), since=DAY.isoformat(), grace_s=0)
    assert not again.get("derived_differences") and not again.get("derived_repaired"), again


def test_a_month_or_year_is_summed_only_from_cells_expire_left(store):
    """The repair sets a month's (year's) cell to the sum of its days' (months') cells only
    while none of them may have been deleted: ``expire`` marks the month (year) whose cells it
    deleted, and the cuts it recorded say which."""
    from datetime import datetime, timezone  # noqa: PLC0415

    from socorro_store.jobs.corrections import COL_SIG_DAYS_EXPIRED, Corrector  # noqa: PLC0415

    def daily(day):
        return K.signature_counter_column("day", K.metrics_row(datetime(2016, 9, day, tzinfo=timezone.utc), "day"))

    cut = {"signature_day": datetime(2016, 9, 15, tzinfo=timezone.utc)}
    assert not Corrector(store.backend, {}, True, cut).detail_gone(K.SIGNATURES, b"A", daily(1))  # no mark
    store.backend.mutate_rows(K.METRICS, [RowMutation(b"2016-09", {COL_SIG_DAYS_EXPIRED: b"1"})])
    marked = Corrector(store.backend, {}, True, cut)
    assert marked.detail_gone(K.SIGNATURES, b"A", daily(1)) and not marked.detail_gone(K.SIGNATURES, b"A", daily(20))
    assert Corrector(store.backend, {}, True).detail_gone(K.SIGNATURES, b"A", daily(20))  # no cut recorded
