"""Reading the daily rankings (:mod:`socorro_store.schema.ranking_keys`): a period's top
crashers in one read, whatever the number of signatures the store holds.

A ranking row lists the signatures of one day (for all crashes, or one ranked key) with their
counts: the live counters keep it with the signature counters, ``rollup`` makes a closed day's
exact.  :func:`read_rankings` sums the rows of a period's days in one multi-row read, when every
day is one whose rankings are complete (from ``~rank/since`` on); otherwise it says so, and the
report scans the signature counters as before.

A period of many days would read every signature of every day (60 rows of 40 k cells for a
30-day report and the 30 days before).  :func:`read_top` reads instead the closed days' head
rows (``HEAD_K`` signatures each, with the day's ``K``-th count; written by ``rollup``; widened
by the day's slack since, :mod:`~socorro_store.schema.ranking_keys`) and the
full rows of the days not over (today), and proves the top ``limit`` by the threshold algorithm
(Fagin's): a signature missing from a day's head row has at most that day's ``K``-th count
there, so its period count is bounded; when the ``limit``-th best lower bound beats the bound of
every signature not seen, the top ``limit`` is among the signatures seen, whose exact counts are
then read from the full rows, column-filtered to them.  When the head rows prove nothing, the
top rows (``TOP_K`` signatures) are tried the same way, and when they prove nothing either (a
flat distribution) the full rows are read, as :func:`read_rankings` does.  A one-day report
(today's top, with yesterday's for the movement) reads yesterday's head row, not its every
signature.

Today has no head row (``rollup`` writes them for closed days).  On a cut-over store the deriver
keeps each ranking row's own slack in the row, so a report reads today's row whole once, keeps
the head and top it computes from it in this process, and the next reports read only the row's
slack and use them as head and top rows, widened by the slack since
(:func:`~socorro_store.schema.ranking_keys.widen_open_head`).
"""

import bisect
from datetime import datetime, timezone

from ..backends.base import RowMutation
from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema import ranking_keys as RK
from .cut_over import enabled
from .process_memo import BackendMemo

FIRST_DAY = RK.FIRST_DAY


def complete_since(backend):
    """The first day whose rankings are complete (a date), or None."""
    value = backend.get_row(K.SIGNATURES_SEEN, RK.SINCE_ROW, columns=[RK.COL_SINCE]).get(RK.COL_SINCE)
    return RK.parse_since(value) if value else None


def mark_complete(backend, day=FIRST_DAY):
    """Record that the rankings are complete from ``day`` on (an earlier day recorded stays)."""
    current = complete_since(backend)
    if current is None or day < current:
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(RK.SINCE_ROW, RK.since_cells(day))])


def read_rankings(backend, periods, key=None):
    """Each period's ``{signature row: count}`` (``periods``: lists of days), summed from the
    ranking rows of its days (dimension ``key``: a product's), in one read; None when ``key``
    has no ranking or a day is before the rankings are complete."""
    if not RK.ranked_key(key):
        return None
    rows = [RK.rank_row(day, key) for days in periods for day in days]
    found = backend.get_rows(K.SIGNATURES_SEEN, [RK.SINCE_ROW] + rows)
    since = found.get(RK.SINCE_ROW, {}).get(RK.COL_SINCE)
    first = min(day for days in periods for day in days)
    if since is None or first < RK.parse_since(since):
        return None
    out = []
    for days in periods:
        counts = {}
        for day in days:
            for sig_row, n in RK.ranking_counts(found.get(RK.rank_row(day, key), {})).items():
                counts[sig_row] = counts.get(sig_row, 0) + n
        out.append(counts)
    return out


def ranked(counts):
    """``{signature row: (rank, count)}`` of ``{signature row: count}``, rank 1 = most crashes
    (ties by signature row); counts of 0 or less are not ranked."""
    order = sorted(((n, row) for row, n in counts.items() if n > 0), key=lambda item: (-item[0], item[1]))
    return {row: (rank, n) for rank, (n, row) in enumerate(order, 1)}


class _Period:
    """What the top rows and full rows read say of one period's signatures: for each signature
    seen, a lower bound of its count (``lower``: the counts read, less what was taken from a
    top row's day since it was computed); its bound (:meth:`upper`) adds, for the days whose top
    row has it, what was added since, and for the days whose top row left it out, their ``K``-th
    count and what was added since; ``unseen``: the bound of a signature seen nowhere (the sum of
    every ``K``-th count and every addition since); ``total``: the crashes of every signature."""

    def __init__(self, days, tops, full):
        self.top_days = [day for day in days if day in tops]
        self.lower, self.total, self.unseen = {}, 0, 0
        self._gap = {}  # signature row -> upper less lower, over the days whose top row has it
        self._present = {}  # signature row -> the bounds of the days whose top row has it
        for day in days:
            if day in tops:
                counts, kth, total, added, taken = tops[day]
                self.total, self.unseen = self.total + total, self.unseen + kth + added
                for row, n in counts.items():
                    low = max(n - taken, 0)
                    self.lower[row] = self.lower.get(row, 0) + low
                    self._gap[row] = self._gap.get(row, 0) + n + added - low
                    self._present[row] = self._present.get(row, 0) + kth + added
            else:
                counts = full.get(day, {})
                self.total += sum(n for n in counts.values() if n > 0)
                for row, n in counts.items():
                    self.lower[row] = self.lower.get(row, 0) + n

    def missing(self, row):
        """The most a signature can have crashed beyond :attr:`lower` (on the days whose top row
        left it out, or since a top row having it was computed)."""
        return self._gap.get(row, 0) + self.unseen - self._present.get(row, 0)

    def upper(self, row):
        return self.lower.get(row, 0) + self.missing(row)


_NOT_PROVEN = object()


def read_top(backend, periods, key=None, limit=50):
    """The top ``limit`` of the first period of ``periods`` ([days, previous days]), exactly as
    the full ranking rows give them, read from the closed days' head rows, else their top rows
    (module docstring).

    Returns None when ``key`` has no ranking or a day is before the rankings are complete, else
    ``(ranks, total, previous)``: ``ranks`` ``{signature row: (rank, count)}`` of the top
    ``limit``, ``total`` the crashes of every signature in the period, ``previous`` ``{signature
    row: (rank, count)}`` in the previous period of each of ``ranks`` that crashed then.  Reads:
    the head rows (and ``~rank/since``), the full rows of the days with none (today), one
    column-filtered read of the candidates' exact counts, and one more when a previous rank
    needs other signatures' exact counts; when the head rows prove nothing, the same from the
    top rows; when they prove nothing either, the full rows.

    A day with no head row from ``rollup`` (today) on a cut-over store is read whole once; the
    head and top this process computed from it (:func:`_full_keeping_heads`) then stand in for
    its head and top rows while they bound it (:func:`_kept_heads`).  When those kept ones are
    what the top-row pass leaned on and it proves nothing, the days are read whole again (and
    their heads kept anew) before the full rows of both periods are."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidArgument(f"limit must be a positive int: {limit!r}")
    if not RK.ranked_key(key):
        return None
    now_days, then_days = (list(days) for days in periods)
    full = {}  # {day: counts} of the full rows read, kept for the top-row pass
    leaned = []  # the days whose kept heads (or tops) the last pass used
    for head, kept in ((True, True), (False, True), (False, False)):
        if not kept and not leaned:
            break
        leaned.clear()
        found = _read_top_rows(backend, now_days, then_days, key, limit, head, full, kept, leaned)
        if found is not _NOT_PROVEN:
            return found
    return _from_full(backend, now_days, then_days, key, limit)


def _read_top_rows(backend, now_days, then_days, key, limit, head, full, kept=False, leaned=None):
    """:func:`read_top` from the head rows (``head``) or the top rows: the answer, None (not
    ranked), or ``_NOT_PROVEN``; ``full``: ``{day: counts}`` of the full rows read so far;
    ``kept``: use the heads (or tops) this process kept of days with none from ``rollup``, and
    list those days in ``leaned``."""
    days = now_days + then_days
    today = datetime.now(timezone.utc).date()  # a day not over has no top row yet: read in full
    rows = {RK.top_row(d, key, head=head): d for d in days if d < today}
    slack_rows = [RK.slack_row(d, key) for d in rows.values()]
    open_heads = enabled(backend)  # the deriver keeps each ranking row's own slack
    unread = [d for d in days if d >= today and d not in full and not open_heads]
    found = backend.get_rows(K.SIGNATURES_SEEN, [RK.SINCE_ROW] + list(rows) + slack_rows
                             + [RK.rank_row(d, key) for d in unread])
    since = found.get(RK.SINCE_ROW, {}).get(RK.COL_SINCE)
    if since is None or min(days) < RK.parse_since(since):
        return None
    slack = {d: found.get(RK.slack_row(d, key), {}) for d in rows.values()}
    full.update({d: RK.ranking_counts(found.get(RK.rank_row(d, key), {})) for d in unread})
    tops = {day: RK.parse_top_cells(found[row], slack[day]) for row, day in rows.items() if row in found}
    older = [d for d in rows.values() if d not in tops and d not in full]
    if head and older:  # a day rolled up before head rows existed has only its top row
        rows = {RK.top_row(d, key): d for d in older}
        found = backend.get_rows(K.SIGNATURES_SEEN, list(rows))
        tops.update({day: RK.parse_top_cells(found[row], slack[day]) for row, day in rows.items() if row in found})
    rest = [d for d in days if d not in tops and d not in full]  # today, and days not rolled up
    if open_heads and kept:
        tops.update(_kept_heads(backend, rest, key, head))
        leaned += [d for d in rest if d in tops]
        rest = [d for d in rest if d not in tops]
    full.update(_full_keeping_heads(backend, rest, key) if open_heads else _full_counts(backend, rest, key))
    now, then = _Period(now_days, tops, full), _Period(then_days, tops, full)
    lows = sorted(((n, row) for row, n in now.lower.items() if n > 0), key=lambda item: (-item[0], item[1]))
    bar = lows[limit - 1][0] if len(lows) >= limit else 1
    if now.unseen and bar <= now.unseen:  # a signature seen nowhere may be in the top: not proven
        return _NOT_PROVEN
    candidates = [row for row in now.lower if now.upper(row) >= bar]
    exact = _exact(backend, now.top_days + then.top_days, key, candidates)
    now_exact = {row: _sum(row, now_days, exact, full) for row in candidates}
    ranks = {row: place for row, place in ranked(now_exact).items() if place[0] <= limit}
    previous = _previous(backend, then, then_days, key, ranks, exact, full)
    if previous is None:
        if head:  # the top rows may prove it
            return _NOT_PROVEN
        # a previous rank not proven: the previous period's full rows
        previous = _ranked_of(ranks, ranked(_sum_rows(_full_counts(backend, then_days, key), then_days)))
    return ranks, now.total, previous


def _previous(backend, then, then_days, key, ranks, exact, full):
    """The previous period's ``{signature row: (rank, count)}`` of ``ranks``' signatures, or
    None when a signature's previous count does not beat the bound of a signature seen nowhere."""
    counts = {row: _sum(row, then_days, exact, full) for row in ranks}
    counts = {row: n for row, n in counts.items() if n > 0}
    if not counts:
        return {}
    if then.unseen and min(counts.values()) <= then.unseen:
        return None
    values = sorted(counts.values())
    # a signature whose bounds straddle one of those counts needs its exact count
    unsure = [row for row, low in then.lower.items() if row not in counts and row not in exact
              and then.missing(row) and _straddles(values, low, low + then.missing(row))]
    if unsure:
        exact.update(_exact(backend, then.top_days, key, unsure))
    known = {row: (_sum(row, then_days, exact, full) if row in exact else low) for row, low in then.lower.items()}
    known.update(counts)
    # an unsure-free signature is above or below every count asked: its lower bound orders it
    return _ranked_of(counts, ranked(known))


def _straddles(values, low, high):
    """True when one of ``values`` (ascending) is in ``[low, high]``."""
    i = bisect.bisect_left(values, low)
    return i < len(values) and values[i] <= high


def _ranked_of(rows, places):
    return {row: places[row] for row in rows if row in places}


def _sum(row, days, exact, full):
    """A signature's exact count over ``days``: the full rows read, and the exact cells read."""
    per_day = exact.get(row, {})
    return sum(full[day].get(row, 0) if day in full else per_day.get(day, 0) for day in days)


def _sum_rows(full, days):
    counts = {}
    for day in days:
        for row, n in full.get(day, {}).items():
            counts[row] = counts.get(row, 0) + n
    return counts


def _exact(backend, days, key, sig_rows):
    """``{signature row: {day: n}}`` from the full ranking rows of ``days``, column-filtered to
    ``sig_rows`` (every one present, ``{}`` when none crashed those days)."""
    out = {row: {} for row in sig_rows}
    if days and sig_rows:
        rows = {RK.rank_row(day, key): day for day in days}
        found = backend.get_rows(K.SIGNATURES_SEEN, list(rows), columns=sorted(RK.rank_column(r) for r in sig_rows))
        for row, cells in found.items():
            for column, value in cells.items():
                if len(value) == 8:
                    out.setdefault(RK.rank_signature_row(column), {})[rows[row]] = K.decode_counter(value)
    return out


def _full_counts(backend, days, key):
    """``{day: {signature row: n}}`` of the full ranking rows of ``days``."""
    if not days:
        return {}
    rows = {RK.rank_row(day, key): day for day in days}
    out = {day: {} for day in days}
    for row, cells in backend.get_rows(K.SIGNATURES_SEEN, list(rows)).items():
        out[rows[row]] = RK.ranking_counts(cells)
    return out


#: the open heads and tops this process computed: ``{(day, key, head): open head}`` of each backend
open_heads_kept = BackendMemo(256)


def _kept_heads(backend, days, key, head):
    """``{day: head as parse_top_cells gives}``: of ``days`` (with no head row from
    ``rollup``: today, a day not rolled up yet), the heads (``head``, else the tops) this process
    computed from their full rows (:func:`_full_keeping_heads`) that still bound them, widened by
    each row's own slack, read in one call.  Kept in this process, not written: a report writes
    nothing."""
    found = open_heads_kept.get_many(backend, [(day, key, head) for day in days])
    kept = {RK.rank_row(day, key): (day, found[(day, key, head)]) for day in days if (day, key, head) in found}
    if not kept:
        return {}
    slack = backend.get_rows(K.SIGNATURES_SEEN, list(kept), columns=list(RK.SLACK_COLUMNS))
    heads = {day: RK.widen_open_head(found, slack.get(row, {})) for row, (day, found) in kept.items()}
    return {day: found for day, found in heads.items() if found is not None}


def _full_keeping_heads(backend, days, key):
    """:func:`_full_counts` of ``days``, keeping each row's open head for :func:`_kept_heads`."""
    if not days:
        return {}
    rows = {RK.rank_row(day, key): day for day in days}
    full = {day: {} for day in days}
    found_rows = backend.get_rows(K.SIGNATURES_SEEN, list(rows))
    heads = []
    for row, day in rows.items():
        # a row not there yet has no count and no slack: whatever the deriver adds is slack
        cells = found_rows.get(row)
        full[day] = RK.ranking_counts(cells or {})
        for head, k in ((True, RK.HEAD_K), (False, RK.TOP_K)):
            heads.append(((day, key, head), RK.open_head(cells, k) if cells is not None else ({}, 0, 0, (0, 0, 0))))
    open_heads_kept.update(backend, heads)
    return full


def _from_full(backend, now_days, then_days, key, limit):
    """:func:`read_top`'s answer from the full rows of both periods (one read)."""
    counts = read_rankings(backend, [now_days, then_days], key)
    if counts is None:
        return None
    now_counts, then_counts = counts
    ranks = {row: place for row, place in ranked(now_counts).items() if place[0] <= limit}
    return ranks, sum(n for n in now_counts.values() if n > 0), _ranked_of(ranks, ranked(then_counts))
