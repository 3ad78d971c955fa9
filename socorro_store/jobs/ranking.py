"""The roll-up's side of the daily rankings (:mod:`socorro_store.schema.ranking_keys`).

For a closed day it recounted, :func:`fix_day_rankings` makes the day's ranking rows exact from
the run's :class:`~socorro_store.engine.spilled_counts.SpilledCounts`: each signature's count on the day, for all
crashes and per product (keys mapped by the day's admission, as the signature counters are).
A ranking row that should not exist (a product no longer admitted) is emptied.  What it holds:
one ranking row's exact counts and live cells at a time.

:func:`~socorro_store.crashstore.rankings.mark_complete` records the first day whose rankings are
complete (``~rank/since``), after a roll-up that recomputed every day from it.
"""

import collections

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
    """Make the ranking rows of ``day`` (a date, closed and recounted into ``spilled``) exact."""
    exact = _exact_rankings(spilled, day, admission)
    first = RK.rank_row(day)
    for row, cells in backend.scan(K.SIGNATURES_SEEN, start=first, stop=first + DK.SEPARATOR + b"\xff",
                                   page_size=4):
        live = {c: K.decode_counter(v) for c, v in cells.items() if len(v) == 8}
        corrector.fix(K.SIGNATURES_SEEN, row, dict(exact.pop(row, {})), live, kind="rankings")
        corrector.flush()
    for row, counts in exact.items():
        corrector.fix(K.SIGNATURES_SEEN, row, dict(counts), {}, kind="rankings")
        corrector.flush()
