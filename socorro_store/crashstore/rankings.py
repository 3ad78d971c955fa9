"""Reading the daily rankings (:mod:`socorro_store.schema.ranking_keys`): a period's top
crashers in one read, whatever the number of signatures the store holds.

A ranking row lists the signatures of one day (for all crashes, or for one product) with their
counts: the live counters keep it with the signature counters, ``rollup`` makes a closed day's
exact.  :func:`read_rankings` sums the rows of a period's days in one multi-row read, when every
day is one whose rankings are complete (from ``~rank/since`` on); otherwise it says so, and the
report scans the signature counters as before.
"""

from ..backends.base import RowMutation
from ..schema import keys as K
from ..schema import ranking_keys as RK

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
            for column, value in found.get(RK.rank_row(day, key), {}).items():
                if len(value) == 8:
                    sig_row = RK.rank_signature_row(column)
                    counts[sig_row] = counts.get(sig_row, 0) + K.decode_counter(value)
        out.append(counts)
    return out
