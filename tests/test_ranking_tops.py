"""Top rows (issue 33, part 1's bound): a multi-day top-crashers report reads each closed day's
top K signatures, not every signature of every day, and gives exactly what the full rows give.

The ranking rows are written directly (a day of many signatures without saving its crashes),
the top rows by the roll-up's own writer; each report is compared with the one the full rows
give, and the cells it read are counted (never time).
"""

import random
from datetime import date, timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.crashstore import rankings, reports
from socorro_store.jobs import ranking, rollup
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

FIRST = date(2016, 9, 1)
LIMIT = 10


class CellCounting:
    """The backend, counting the calls to ``get_rows``/``scan`` and the cells they return."""

    def __init__(self, backend):
        self._backend, self.calls, self.cells = backend, 0, 0

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def get_rows(self, table, rows, *args, **kwargs):
        found = self._backend.get_rows(table, rows, *args, **kwargs)
        self.calls += 1
        self.cells += sum(len(cells) for cells in found.values())
        return found

    def scan(self, table, *args, **kwargs):
        self.calls += 1
        for row, cells in self._backend.scan(table, *args, **kwargs):
            self.cells += len(cells)
            yield row, cells


def _write_days(backend, days, k, key=None, rolled=None, head_k=None):
    """Write each day's ``{signature: n}`` as its ranking row, and for the days in ``rolled``
    (default every day) the top row keeping ``k`` signatures and, with ``head_k``, the head row
    keeping ``head_k`` (none: a day rolled up before head rows existed)."""
    rolled = set(days) if rolled is None else rolled
    mutations = [RowMutation(RK.SINCE_ROW, RK.since_cells(RK.FIRST_DAY))]
    for day, counts in days.items():
        by_sig = {K.signature_row(s): n for s, n in counts.items()}
        mutations.append(RowMutation(RK.rank_row(day, key), {RK.rank_column(r): K.encode_counter(n)
                                                              for r, n in by_sig.items()}))
        if day in rolled:
            mutations.append(RowMutation(RK.top_row(day, key), RK.top_cells(by_sig, k)))
            if head_k is not None:
                mutations.append(RowMutation(RK.top_row(day, key, head=True), RK.top_cells(by_sig, head_k)))
    backend.mutate_rows(K.SIGNATURES_SEEN, mutations)


def _full(backend, now_days, then_days, key=None, limit=LIMIT):
    return rankings._from_full(backend, now_days, then_days, key, limit)


def _skewed(rng, day_index, signatures=300):
    """A few signatures crash a lot, most a little (Zipf-like), shuffled a bit each day."""
    return {f"sig{i}": max(1, int(5000 / (i + 1) ** 1.2) + rng.randrange(3)) for i in range(signatures)
            if rng.random() < 0.9 or i < 20}


def _flat(rng, day_index, signatures=300):
    """Every signature crashes about as often: no top K proves anything."""
    return {f"sig{i}": 5 + rng.randrange(3) for i in range(signatures)}


def _periods(days):
    now = [FIRST + timedelta(days=7 + d) for d in range(days)]
    return now, [d - timedelta(days=days) for d in now]


@pytest.fixture
def backend(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        yield store.backend


def test_a_skewed_month_is_proven_from_the_head_rows_and_reads_a_fraction_of_the_cells(backend):
    rng = random.Random(33)
    now_days, then_days = _periods(7)
    days = {day: _skewed(rng, i) for i, day in enumerate(then_days + now_days)}
    _write_days(backend, days, k=150, head_k=40)
    full_counting, top_counting = CellCounting(backend), CellCounting(backend)
    expected = _full(full_counting, now_days, then_days)
    assert rankings.read_top(top_counting, [now_days, then_days], limit=LIMIT) == expected
    assert len(expected[0]) == LIMIT and expected[2]  # the top 10, and their previous ranks
    assert full_counting.cells > 14 * 250  # every signature of every day
    # the head rows (40 + 2 cells a day) and the candidates' exact cells: a fraction
    assert top_counting.cells <= 14 * 42 + 14 * 3 * LIMIT and top_counting.calls <= 3
    assert top_counting.cells * 4 < full_counting.cells


def test_when_the_head_rows_prove_nothing_the_top_rows_are_read(backend):
    """Head rows of 2 signatures leave the top 10 unproven; the top rows of 60 prove it."""
    rng = random.Random(36)
    now_days, then_days = _periods(7)
    days = {day: _skewed(rng, i) for i, day in enumerate(then_days + now_days)}
    _write_days(backend, days, k=60, head_k=2)
    counting = CellCounting(backend)
    assert rankings.read_top(counting, [now_days, then_days], limit=LIMIT) == _full(backend, now_days, then_days)
    assert 14 * 62 <= counting.cells <= 14 * (4 + 62) + 14 * 3 * LIMIT  # the head rows, then the top rows


def test_a_day_rolled_up_before_head_rows_is_read_from_its_top_row(backend):
    """A store rolled up by a version writing only top rows: its closed days' top rows are read
    (one call more), not their full rows; the last day, with no top row either, in full."""
    rng = random.Random(37)
    now_days, then_days = _periods(7)
    days = {day: _skewed(rng, i) for i, day in enumerate(then_days + now_days)}
    _write_days(backend, days, k=40, rolled=set(days) - {now_days[-1]})
    counting = CellCounting(backend)
    assert rankings.read_top(counting, [now_days, then_days], limit=LIMIT) == _full(backend, now_days, then_days)
    assert counting.cells <= 13 * 42 + len(days[now_days[-1]]) + 14 * 3 * LIMIT and counting.calls <= 5


def test_a_single_day_reads_the_previous_day_s_head_row_not_its_full_row(backend):
    """Today's top (``/``): today's full row (open: no head row), yesterday's head row and the
    candidates' exact cells of yesterday, not yesterday's every signature."""
    rng = random.Random(38)
    now_days, then_days = _periods(1)
    days = {day: _skewed(rng, i) for i, day in enumerate(then_days + now_days)}
    _write_days(backend, days, k=150, head_k=40, rolled=set(then_days))
    counting = CellCounting(backend)
    assert rankings.read_top(counting, [now_days, then_days], limit=LIMIT) == _full(backend, now_days, then_days)
    assert counting.cells <= 42 + len(days[now_days[0]]) + 3 * LIMIT
    assert counting.cells < len(days[now_days[0]]) + len(days[then_days[0]])


def test_a_flat_distribution_falls_back_to_the_full_rows_and_agrees(backend):
    rng = random.Random(34)
    now_days, then_days = _periods(7)
    days = {day: _flat(rng, i) for i, day in enumerate(then_days + now_days)}
    _write_days(backend, days, k=20)
    counting = CellCounting(backend)
    assert rankings.read_top(counting, [now_days, then_days], limit=LIMIT) == _full(backend, now_days, then_days)
    # nothing proven: the top rows, then the full rows
    assert counting.cells >= 14 * 300


@pytest.mark.parametrize("seed", range(12))
def test_random_periods_agree_with_the_full_rows(backend, seed):
    """Mixed shapes: skewed and flat days, an open day (no top row), ties, days with no crash,
    a signature only in the previous period: the top 10, their counts, the total and the
    previous ranks are those of the full rows."""
    rng = random.Random(seed)
    length = rng.choice([1, 2, 3, 7, 12])
    now_days, then_days = _periods(length)
    days = {}
    for i, day in enumerate(then_days + now_days):
        shape = rng.choice([_skewed, _flat, lambda r, i: {}, lambda r, i: {f"sig{j}": r.choice([1, 2, 50])
                                                                           for j in range(r.randrange(1, 80))}])
        days[day] = shape(rng, i)
    open_days = {now_days[-1]} if rng.random() < 0.7 else set()
    k = rng.choice([3, 10, 25])
    _write_days(backend, days, k=k, rolled=set(days) - open_days, head_k=rng.choice([None, 1, 2, k // 2]))
    expected = _full(backend, now_days, then_days)
    assert rankings.read_top(backend, [now_days, then_days], limit=LIMIT) == expected


def test_a_report_of_days_reads_the_top_rows_and_matches_the_scan(backend, monkeypatch):
    """top_signatures over 7 days: the same report from the top rows as from the full rows."""
    rng = random.Random(35)
    now_days, then_days = _periods(7)
    days = {day: _skewed(rng, i) for i, day in enumerate(then_days + now_days)}
    _write_days(backend, days, k=100, head_k=30, rolled=set(days) - {now_days[-1]})
    start = BASE_TIME.replace(year=2016, month=9, day=now_days[0].day, hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(days=7)
    counting = CellCounting(backend)
    from_tops = reports.top_signatures(counting, start, end, limit=LIMIT)
    monkeypatch.setattr(rankings, "read_top", lambda b, periods, key, limit: rankings._from_full(b, *periods, key, limit))
    full_counting = CellCounting(backend)
    from_full = reports.top_signatures(full_counting, start, end, limit=LIMIT)
    assert from_tops == from_full and from_tops["total"] == sum(sum(days[d].values()) for d in now_days)
    assert counting.cells * 3 < full_counting.cells


def test_bad_limits_are_refused(backend):
    from socorro_store.errors import InvalidArgument

    for bad in (0, -1, "5", True, 2.5):
        with pytest.raises(InvalidArgument):
            rankings.read_top(backend, _periods(3), limit=bad)


def test_top_cells_parse_back():
    counts = {K.signature_row(f"s{i}"): n for i, n in enumerate([9, 7, 7, 3, 1])}
    kept, kth, total, added, taken = RK.parse_top_cells(RK.top_cells(counts, 3))
    assert kept == {b"s0": 9, b"s1": 7, b"s2": 7} and kth == 7 and total == 27 and added == taken == 0
    assert RK.parse_top_cells(RK.top_cells(counts, 5)) == (counts, 0, 27, 0, 0)  # all kept: nothing unseen
    # the slack since the row was computed: 4 added and 2 taken, net +2, after a base of 1 added
    slack = {**RK.slack_amounts(5), **{RK.SLACK_COLUMNS[1]: K.encode_counter(2)}}
    slack = {c: n if isinstance(n, bytes) else K.encode_counter(n) for c, n in slack.items()}
    slack[RK.SLACK_COLUMNS[2]] = K.encode_counter(3)
    cells = {**RK.top_cells(counts, 3), **RK.base_cells((1, 0, 1))}
    assert RK.parse_top_cells(cells, slack)[1:] == (7, 27 + 2, 4, 2)
    for head in (False, True):
        row = RK.top_row(FIRST, RK.product_key("Fire fox"), head=head)
        assert RK.parse_top_row(row) == (FIRST, RK.product_key("Fire fox"), head)


def test_rollup_writes_the_top_rows_and_rewrites_a_corrupted_one(embedded_url, monkeypatch):
    monkeypatch.setattr(RK, "TOP_K", 2)
    monkeypatch.setattr(RK, "HEAD_K", 1)
    day = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        i = 0
        for signature, n in (("a::A", 4), ("b::B", 3), ("c::C", 2), ("d::D", 1)):
            for _ in range(n):
                cid = crash_id(K.SALTS[i % 16], day, random.Random(i))
                store.save_raw_crash(raw_crash(cid, day + timedelta(minutes=i), ProcessType="content"), {}, cid)
                store.save_processed(processed(cid, signature=signature, product="Firefox"))
                i += 1
        store.flush_counters()
        backend = store.backend
        rollup.run_rollup(backend, until=day + timedelta(days=1), grace_s=0)
        top = RK.top_row(day.date())
        expected = RK.top_cells({b"a::A": 4, b"b::B": 3, b"c::C": 2, b"d::D": 1}, 2)
        head = RK.top_cells({b"a::A": 4, b"b::B": 3, b"c::C": 2, b"d::D": 1}, 1)
        for key in (None, RK.product_key("Firefox"), DK.process_type_key("content")):
            assert _without_base(backend.get_row(K.SIGNATURES_SEEN, RK.top_row(day.date(), key))) == expected
            assert _without_base(backend.get_row(K.SIGNATURES_SEEN, RK.top_row(day.date(), key, head=True))) == head
        assert RK.parse_top_cells(expected)[1:] == (3, 10, 0, 0)
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(top, {RK.rank_column(b"zz"): K.encode_counter(99)},
                                                            deletes=[RK.COL_KTH])])
        again = rollup.run_rollup(backend, until=day + timedelta(days=1), grace_s=0)
        assert _without_base(backend.get_row(K.SIGNATURES_SEEN, top)) == expected and "rankings" not in again["drift"]


def test_rollup_deletes_the_head_and_top_rows_of_a_key_no_longer_ranked(embedded_url):
    day = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
    gone = RK.product_key("Gone")
    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        cid = crash_id(K.SALTS[0], day, random.Random(0))
        store.save_raw_crash(raw_crash(cid, day), {}, cid)
        store.save_processed(processed(cid, signature="a::A", product="Firefox"))
        store.flush_counters()
        backend = store.backend
        stale = [RK.top_row(day.date(), gone, head=head) for head in (True, False)]
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, RK.top_cells({b"x::X": 3}, 2)) for row in stale])
        rollup.run_rollup(backend, until=day + timedelta(days=1), grace_s=0)
        assert backend.get_rows(K.SIGNATURES_SEEN, stale) == {}
        kept = RK.top_row(day.date(), RK.product_key("Firefox"), head=True)
        slack = backend.get_row(K.SIGNATURES_SEEN, RK.slack_row(day.date(), RK.product_key("Firefox")))
        assert RK.parse_top_cells(backend.get_row(K.SIGNATURES_SEEN, kept), slack)[:3] == ({b"a::A": 1}, 0, 1)


def _without_base(cells):
    """A top row's cells less its slack base (written when the day changed before its rollup:
    the crashes here are of a day long over)."""
    return {c: v for c, v in cells.items() if c not in RK.BASE_COLUMNS}


def _late_changes(backend, rng, days, rolled):
    """Random changes to rolled-up days, as the live counters write them: moves between
    signatures (reprocessing), a backlog of a new signature, deletions; the ranking cells and the
    day's slack row in one increment call.  Counts never go below zero, as crashes cannot."""
    from socorro_store.backends import Increment  # noqa: PLC0415
    from socorro_store.crashstore import counters  # noqa: PLC0415

    increments = []
    for day in sorted(rolled):
        counts = days[day]
        for _ in range(rng.randrange(0, 6)):
            kind = rng.choice(["move", "backlog", "delete"])
            names = sorted(n for n, c in counts.items() if c > 0)
            if kind == "backlog" or not names:
                name, amount = f"late{rng.randrange(5)}", rng.choice([1, 5, 40, 400])
                moves = [(name, amount)]
            else:
                source = rng.choice(names)
                amount = rng.randrange(1, counts[source] + 1)
                moves = [(source, -amount)] + ([(rng.choice(names + ["moved"]), amount)] if kind == "move" else [])
            for name, amount in moves:
                counts[name] = counts.get(name, 0) + amount
                increments.append(Increment(K.SIGNATURES_SEEN, RK.rank_row(day), RK.rank_column(K.signature_row(name)),
                                            amount))
    increments = counters.coalesce(increments)
    if increments:
        backend.increment_many(increments + counters.slack_increments(increments))


@pytest.mark.parametrize("seed", range(16))
def test_late_changes_to_rolled_up_days_keep_the_report_exact(backend, seed):
    """After the head and top rows are written, crashes of those days are reprocessed, processed
    late or deleted (the slack rows record it): the report is still the full rows' report."""
    rng = random.Random(1000 + seed)
    length = rng.choice([1, 2, 3, 7])
    now_days, then_days = _periods(length)
    days = {day: (_skewed if rng.random() < 0.7 else _flat)(rng, i) for i, day in enumerate(then_days + now_days)}
    open_days = {now_days[-1]} if rng.random() < 0.5 else set()
    k = rng.choice([5, 10, 25, 60])
    rolled = set(days) - open_days
    _write_days(backend, days, k=k, rolled=rolled, head_k=rng.choice([None, 2, k // 2]))
    _late_changes(backend, rng, days, rolled)
    expected = _full(backend, now_days, then_days)
    assert rankings.read_top(backend, [now_days, then_days], limit=LIMIT) == expected
    assert expected[1] == sum(n for day in now_days for n in days[day].values() if n > 0)
