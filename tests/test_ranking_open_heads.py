"""Open heads: a report over today (no rollup has written its head row) reads today's full
ranking row once, then the head it computed from it, widened by the row's own slack (kept by
the deriver in the row), and gives exactly what the full rows give after any change since.

Every backend kind, on a cut-over store.  The ranking rows are written directly, with their own
slack cells as the deriver writes them (:func:`_count`), so that a day holds many signatures;
each report is compared with the one the full rows give, and the full-row reads are counted.
"""

import random
from datetime import datetime, timedelta, timezone

import pytest

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.crashstore import rankings
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

LIMIT = 10


class FullRowReads:
    """The backend, listing the ranking rows its ``get_rows`` read whole."""

    def __init__(self, backend):
        self._backend, self.whole = backend, []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def get_rows(self, table, rows, columns=None, **kwargs):
        if columns is None:
            self.whole += [row for row in rows if row.startswith(RK.RANK_PREFIX) and row[6:7].isdigit()]
        return self._backend.get_rows(table, rows, columns, **kwargs)


@pytest.fixture
def backend(backend_url):
    with open_store(backend_url, search_url="none") as store:
        store.create_tables()
        store.cut_over_counters()
        yield FullRowReads(store.backend)


def _count(backend, day, changes):
    """Move ``{signature: amount}`` on ``day``'s ranking row and its own slack, as the deriver
    does: absolute values, one row write."""
    row = RK.rank_row(day)
    cells = backend.get_row(K.SIGNATURES_SEEN, row)
    puts = {}
    for signature, amount in changes.items():
        column = RK.rank_column(K.signature_row(signature))
        now = (K.decode_counter(cells[column]) if column in cells else 0) + amount
        puts[column] = K.encode_counter(now)
    slack = RK.parse_slack_cells(cells)
    moved = [sum(max(a, 0) for a in changes.values()), sum(max(-a, 0) for a in changes.values()), sum(changes.values())]
    puts.update({column: K.encode_counter(n + m) for column, n, m in zip(RK.SLACK_COLUMNS, slack, moved)})
    backend._backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, puts)])


def _check(backend, periods):
    expected = rankings._from_full(backend._backend, *periods, None, LIMIT)
    backend.whole.clear()
    assert rankings.read_top(backend, periods, limit=LIMIT) == expected
    return list(backend.whole)


def test_todays_report_reads_its_full_row_once_and_stays_exact_after_every_change(backend):
    rng = random.Random(47)
    today = datetime.now(timezone.utc).date()
    periods = [[today - timedelta(days=1), today], [today - timedelta(days=3), today - timedelta(days=2)]]
    for day in (today - timedelta(days=d) for d in range(4)):  # no rollup: every day read as today is
        _count(backend, day, {f"sig{i}": max(1, int(4000 / (i + 1) ** 1.2) + rng.randrange(3)) for i in range(400)})
    today_row = RK.rank_row(today)
    assert today_row in _check(backend, periods)  # the first report reads today whole
    assert _check(backend, periods) == []  # the next ones read the heads it computed
    _count(backend, today, {"sig1": 7, "sig0": -3})  # the top moves a little: the heads still prove it
    assert _check(backend, periods) == []
    _count(backend, today, {"sig300": 3000})  # a signature outside the head overtakes: read whole again
    assert today_row in _check(backend, periods)
    assert _check(backend, periods) == []
    _count(backend, today, {"new-signature": 5000, "sig2": -500})
    _check(backend, periods)
    # a row rewritten (its slack gone back: not the deriver's doing) is read whole again
    backend._backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(today_row, {c: K.encode_counter(1) for c in RK.SLACK_COLUMNS})])
    assert today_row in _check(backend, periods)


def test_a_row_without_its_own_slack_is_read_whole_every_time(backend):
    """A live writer's row (a store's days before its cut-over) keeps no slack in the row: no
    head is computed from it, since nothing would say when it stopped bounding the row."""
    today = datetime.now(timezone.utc).date()
    counts = {RK.rank_column(K.signature_row(f"sig{i}")): K.encode_counter(500 - i) for i in range(300)}
    backend._backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(RK.rank_row(today), counts)])
    periods = [[today], [today - timedelta(days=1)]]
    for _ in range(2):
        assert RK.rank_row(today) in _check(backend, periods)


def test_the_derivers_own_slack_keeps_todays_report_exact_after_saves_and_reprocessings(backend_url):
    """End to end: saves today, derived; the second report reads no full row; a reprocessing
    moves a crash to another signature, and the report still equals the full rows' (the row's
    own slack, written by the deriver with the counts, widens the kept head)."""
    from store_helpers import crash_id, processed, raw_crash  # noqa: PLC0415

    rng = random.Random(48)
    now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    today = now.date()
    periods = [[today], [today - timedelta(days=1)]]
    with open_store(backend_url, search_url="none") as store:
        store.create_tables()
        store.cut_over_counters()
        ids = []
        for n, signature in enumerate(["A"] * 6 + ["B"] * 4 + ["C"] * 3 + [f"rare{i}" for i in range(8)]):
            cid = crash_id(day=now, rng=rng)
            store.save_raw_crash(raw_crash(cid, submitted=now), {}, cid)
            store.save_processed(processed(cid, signature=signature))
            ids.append(cid)
        store.settle()
        counting = FullRowReads(store.backend)
        cells = store.backend.get_row(K.SIGNATURES_SEEN, RK.rank_row(today))
        assert RK.parse_slack_cells(cells) == (21, 0, 21)  # the deriver's slack of the row
        assert RK.rank_row(today) in _check(counting, periods)
        assert _check(counting, periods) == []
        for cid in ids[:3]:  # three of A's crashes become C's: C leads
            store.save_processed(processed(cid, signature="C"))
        store.settle()
        assert RK.parse_slack_cells(store.backend.get_row(K.SIGNATURES_SEEN, RK.rank_row(today))) == (24, 3, 21)
        _check(counting, periods)
        top = rankings.read_top(store.backend, periods, limit=2)[0]
        assert top == {K.signature_row("C"): (1, 6), K.signature_row("B"): (2, 4)}
