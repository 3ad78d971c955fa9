"""The process-type split keeps the ranking cells it read while each row's own slack is
unchanged (:mod:`socorro_store.crashstore.kept_ranking_cells`): a second report reads only the
slack of those rows, and any change since (a late crash, a reprocessing, a deletion) is seen.
Every backend kind; the reads are counted, never timed."""

import random
from datetime import datetime, timedelta, timezone

import pytest
from store_helpers import crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends.base import RowMutation
from socorro_store.crashstore import kept_ranking_cells, reports
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

DAYS = [datetime(2016, 9, d, 10, tzinfo=timezone.utc) for d in (16, 17, 18)]
START, END = datetime(2016, 9, 16, tzinfo=timezone.utc), datetime(2016, 9, 19, tzinfo=timezone.utc)
#: (signature, ProcessType or None, crashes a day)
CRASHES = [("A", "content", 3), ("A", None, 1), ("B", "gpu", 2), ("B", "content", 1)]


@pytest.fixture
def store(backend_url):
    with open_store(backend_url, search_url="none") as opened:
        opened.create_tables()
        yield opened


def _save(store, rng, day, signature, ptype, i=0):
    cid = crash_id(K.SALTS[i % 16], day=day, rng=rng)
    extra = {"ProcessType": ptype} if ptype else {}
    store.save_raw_crash(raw_crash(cid, day + timedelta(minutes=i), **extra), {}, cid)
    store.save_processed(processed(cid, signature=signature))
    return cid


def _truth(saved, deleted=(), moved=None):
    out = {}
    for cid, (signature, ptype) in saved.items():
        if cid in deleted:
            continue
        signature = (moved or {}).get(cid, signature)
        split = out.setdefault(signature, {})
        name = ptype or "parent"
        split[name] = split.get(name, 0) + 1
    return {s: dict(sorted(split.items(), key=lambda kv: (-kv[1], kv[0]))) for s, split in out.items()}


class _Reads:
    """The columns each ranking row was read with, by ``get_rows`` of ``crash_report_signatures_seen``."""

    def __init__(self, backend):
        self.backend, self.real, self.rows = backend, backend.get_rows, []
        backend.get_rows = self

    def __call__(self, table, rows, columns=None, *args, **kw):
        if table == K.SIGNATURES_SEEN:
            self.rows += [(row, tuple(columns or ())) for row in rows]
        return self.real(table, rows, columns, *args, **kw)

    def close(self):
        del self.backend.get_rows


def _split(store):
    store.settle()
    return reports.process_type_splits(store.backend, ["A", "B"], START, END)


def test_a_second_split_reads_only_the_slack_of_the_rows_it_kept_and_sees_every_change(store):
    rng, saved, i = random.Random(4), {}, 0
    for day in DAYS:
        for signature, ptype, n in CRASHES:
            for _ in range(n):
                saved[_save(store, rng, day, signature, ptype, i)] = (signature, ptype)
                i += 1
    assert _split(store) == _truth(saved)
    reads = _Reads(store.backend)
    try:
        assert _split(store) == _truth(saved)
        written = {RK.rank_row(day.date(), key) for day in DAYS for key in (b"pt=content", b"pt=gpu", b"pt=parent")}
        asked = {row: columns for row, columns in reads.rows if row in written}
        assert set(asked) == written and all(columns == RK.SLACK_COLUMNS for columns in asked.values()), asked
        # a late crash on the first day, a reprocessing and a deletion on the others
        saved[_save(store, rng, DAYS[0], "B", "gpu", 99)] = ("B", "gpu")
        moved_id = next(cid for cid, (s, p) in saved.items() if s == "A" and p == "content" and cid[-6:] == "160917")
        store.save_processed(processed(moved_id, signature="B"))
        gone = next(cid for cid, (s, p) in saved.items() if s == "B" and p == "content" and cid[-6:] == "160918")
        store.delete_crashes([gone])
        reads.rows.clear()
        assert _split(store) == _truth(saved, deleted={gone}, moved={moved_id: "B"})
        reread = {row for row, columns in reads.rows if row in written and columns != RK.SLACK_COLUMNS}
        assert reread == {RK.rank_row(DAYS[0].date(), b"pt=gpu"), RK.rank_row(DAYS[1].date(), b"pt=content"),
                          RK.rank_row(DAYS[2].date(), b"pt=content")}
    finally:
        reads.close()


def test_a_row_with_no_slack_of_its_own_is_read_each_time(store):
    """A ranking row counted live (before a cut-over) has no slack cells: nothing says when it
    changed, so its cells are never kept."""
    backend = store.backend
    row, column = RK.rank_row(DAYS[0].date(), b"pt=content"), RK.rank_column(b"A")
    backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, {column: K.encode_counter(2)})])
    assert kept_ranking_cells.read_ranking_cells(backend, [row], [column]) == {row: {column: K.encode_counter(2)}}
    backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, {column: K.encode_counter(5)})])
    assert kept_ranking_cells.read_ranking_cells(backend, [row], [column]) == {row: {column: K.encode_counter(5)}}
