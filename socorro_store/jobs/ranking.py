"""The roll-up's side of the daily rankings (:mod:`socorro_store.schema.ranking_keys`).

For a closed day it recounted, :func:`fix_day_rankings` makes the day's ranking rows exact from
the run's :class:`~socorro_store.engine.spilled_counts.SpilledCounts`: each signature's count on the day, for all
crashes and per product (keys mapped by the day's admission, as the signature counters are).
A ranking row that should not exist (a product no longer admitted) is emptied.  Each ranking
row also gets its head and top rows (:func:`~socorro_store.schema.ranking_keys.top_cells`: the
day's ``HEAD_K`` and ``TOP_K`` highest signatures, the ``K``-th count, the total), which reports
read instead of the full rows.  What it holds: the day's exact rankings (as before), and one head
row and one top row (``HEAD_K`` and ``TOP_K`` cells) per ranking row of the day.

:func:`~socorro_store.crashstore.rankings.mark_complete` records the first day whose rankings are
complete (``~rank/since``), after a roll-up that recomputed every day from it.
"""

import collections

from ..backends.base import RowMutation
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK

_KEY_PREFIXES = tuple(kind.encode("ascii") + b"=" for kind in RK.RANKED_KINDS)


def _exact_rankings(spilled, day, admission):
    """``{ranking row: {column: n}}`` of ``day`` from the recount."""
    out = collections.defaultdict(collections.Counter)
    for key, sig_row, n in spilled.totals_by_key(_KEY_PREFIXES):
        # a process type is capped by a fixed list as it is counted (no registry to map it by)
        row = RK.rank_row(day, None if not key else key if DK.is_ranking_only(key) else admission.map_key(key))
        out[row][RK.rank_column(sig_row)] += n
    return out


def fix_day_rankings(backend, corrector, spilled, day, admission):
    """Make the ranking rows of ``day`` (a date, closed and recounted into ``spilled``) exact,
    and write their top rows (:func:`write_top_rows`)."""
    exact = _exact_rankings(spilled, day, admission)
    tops = {}  # ranking row -> its exact {signature row: n}, of which the head and top rows are made
    first = RK.rank_row(day)
    for row, cells in backend.scan(K.SIGNATURES_SEEN, start=first, stop=first + DK.SEPARATOR + b"\xff",
                                   page_size=4):
        live = {c: K.decode_counter(v) for c, v in cells.items() if len(v) == 8}
        counts = dict(exact.pop(row, {}))
        corrector.fix(K.SIGNATURES_SEEN, row, counts, live, kind="rankings")
        corrector.flush()
        tops[row] = _by_signature(counts)
    for row, counts in exact.items():
        corrector.fix(K.SIGNATURES_SEEN, row, dict(counts), {}, kind="rankings")
        corrector.flush()
        tops[row] = _by_signature(counts)
    write_top_rows(backend, day, tops)


def _by_signature(columns):
    """``{signature row: n}`` of one ranking row's ``{ranking column: n}``."""
    return {RK.rank_signature_row(column): n for column, n in columns.items()}


def write_top_rows(backend, day, counts):
    """Make the head and top rows of ``day`` those of ``counts`` ({ranking row: {signature row:
    n}}, exact; the day's plain ranking always has them, empty when no crash has a signature):
    stale cells and rows of keys no longer ranked are deleted.  Not drift: they are derived from
    the exact rankings."""
    counts.setdefault(RK.rank_row(day), {})
    mutations = []
    for head, k in ((True, RK.HEAD_K), (False, RK.TOP_K)):
        wanted = {RK.top_row(*RK.parse_rank_row(row), head=head): RK.top_cells(by_sig, k)
                  for row, by_sig in counts.items()}
        first = RK.top_row(day, head=head)
        for row, cells in backend.scan(K.SIGNATURES_SEEN, start=first, stop=first + DK.SEPARATOR + b"\xff",
                                       page_size=4):
            new = wanted.pop(row, None)
            if new is None:
                mutations.append(RowMutation(row, delete_row=True))
                continue
            puts = {c: v for c, v in new.items() if cells.get(c) != v}
            stale = [c for c in cells if c not in new]
            if puts or stale:
                mutations.append(RowMutation(row, puts, deletes=stale))
        mutations += [RowMutation(row, cells) for row, cells in wanted.items()]
    if mutations:
        backend.mutate_rows(K.SIGNATURES_SEEN, mutations)
