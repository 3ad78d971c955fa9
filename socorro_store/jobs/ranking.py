"""The roll-up's side of the daily rankings (:mod:`socorro_store.schema.ranking_keys`).

For a closed day it recounted, :func:`fix_day_rankings` makes the day's ranking rows exact from
the run's :class:`~socorro_store.engine.spilled_counts.SpilledCounts`: each signature's count on the day, for all
crashes and per ranked key (keys mapped by the day's admission, as the signature counters are).
A ranking row that should not exist (a product no longer admitted) is emptied.  Each ranking
row also gets its head and top rows (:func:`~socorro_store.schema.ranking_keys.top_cells`: the
day's ``HEAD_K`` and ``TOP_K`` highest signatures, the ``K``-th count, the total), which reports
read instead of the full rows.  What it holds: one ranking row's exact counts at a time (the
day's are summed per row in the spilled file), and the head and top cells of up to
:attr:`TopRowWriter.CHUNK` ranking rows: memory does not grow with the day's signatures or keys.

:func:`~socorro_store.crashstore.rankings.mark_complete` records the first day whose rankings are
complete (``~rank/since``), after a roll-up that recomputed every day from it.
"""

from ..backends.base import RowMutation
from ..crashstore import counter_deriver
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK

_KEY_PREFIXES = tuple(kind.encode("ascii") + b"=" for kind in RK.RANKED_KINDS)


def _spill_exact_rankings(spilled, day, admission):
    """Sum the recount of ``day`` per ranking row into ``spilled`` (:meth:`~socorro_store.engine.
    spilled_counts.SpilledCounts.rank`): memory stays one ranking row, whatever the signatures."""
    def row_of(key):
        # a process type is capped by a fixed list as it is counted (no registry to map it by)
        return RK.rank_row(day, None if not key else key if DK.is_ranking_only(key) else admission.map_key(key))
    spilled.rank(row_of, _KEY_PREFIXES)


def read_day_slack(backend, day):
    """``{ranking key or None: (added, taken, net)}``: the slack rows of ``day`` (a date) now.

    Read before the day is recounted, and again after: a head or top row records the first as
    its base, and is written only for a key whose slack did not move during the recount (a
    change the recount may or may not have seen would make its total wrong).  The keys whose
    slack moved get no head or top row, so their reports read the full rows until the next
    rollup."""
    first = RK.slack_row(day)
    return {RK.parse_slack_row(row)[1]: RK.parse_slack_cells(cells)
            for row, cells in backend.scan(K.SIGNATURES_SEEN, start=first, stop=first + DK.SEPARATOR + b"\xff")}


def fix_day_rankings(backend, corrector, spilled, day, admission, slack=None):
    """Make the ranking rows of ``day`` (a date, closed and recounted into ``spilled``) exact,
    and write their head and top rows (:class:`TopRowWriter`), each with its base ``slack``
    (:func:`read_day_slack`, read before the recount; compared here with the slack now)."""
    _spill_exact_rankings(spilled, day, admission)
    moved = set()
    if slack is not None:
        # on a cut-over store, a crash the recount read may be derived only now: its change
        # moves the slack, and its keys get no head or top row (they would count it twice)
        counter_deriver.catch_up(backend)
        now = read_day_slack(backend, day)
        moved = {key for key in set(slack) | set(now) if slack.get(key) != now.get(key)}
    tops = TopRowWriter(backend, day, slack, skip=moved)
    first = RK.rank_row(day)
    for row, cells in backend.scan(K.SIGNATURES_SEEN, start=first, stop=first + DK.SEPARATOR + b"\xff",
                                   page_size=4):
        # a signature's cells (the row's own slack, the deriver's, is no count to fix)
        live = {RK.rank_column(sig): n for sig, n in RK.ranking_counts(cells).items()}
        _fix_row(corrector, tops, row, spilled.pop_ranking(row), live)
    for row in spilled.ranking_rows():  # rows with no live cell
        _fix_row(corrector, tops, row, spilled.pop_ranking(row), {})
    tops.finish()


def _fix_row(corrector, tops, row, exact, live):
    """Fix one ranking row to ``exact`` ({signature row: n}) and write its head and top rows."""
    corrector.fix(K.SIGNATURES_SEEN, row, {RK.rank_column(sig): n for sig, n in exact.items()}, live, kind="rankings")
    corrector.flush()
    tops.add(row, exact)


class TopRowWriter:
    """Makes a day's head and top rows those of its exact rankings, :data:`CHUNK` ranking rows at
    a time (memory: that many rows' ``HEAD_K`` + ``TOP_K`` cells, whatever the day's keys and
    signatures).  Only differing cells are written, stale ones deleted; :meth:`finish` deletes
    the head and top rows of keys no longer ranked.  Not drift: they derive from the exact rows."""

    CHUNK = 32

    def __init__(self, backend, day, slack=None, skip=()):
        self.backend, self.day, self.slack, self.skip = backend, day, slack or {}, set(skip)
        self._pending, self._written = {}, set()

    def add(self, row, counts):
        """The exact ``counts`` ({signature row: n}) of ranking row ``row`` (nothing for a key
        in ``skip``: its head and top rows go, with the stale ones, at :meth:`finish`)."""
        key = RK.parse_rank_row(row)[1]
        if key in self.skip:
            return
        slack = self.slack.get(key, (0, 0, 0))
        base = RK.base_cells(slack) if any(slack) else {}
        for head, k in ((True, RK.HEAD_K), (False, RK.TOP_K)):
            self._pending[RK.top_row(self.day, key, head=head)] = {**RK.top_cells(counts, k), **base}
        if len(self._pending) >= 2 * self.CHUNK:
            self._flush()

    def _flush(self):
        if not self._pending:
            return
        found = self.backend.get_rows(K.SIGNATURES_SEEN, list(self._pending))
        mutations = []
        for row, new in self._pending.items():
            cells = found.get(row, {})
            puts = {c: v for c, v in new.items() if cells.get(c) != v}
            stale = [c for c in cells if c not in new]
            if puts or stale:
                mutations.append(RowMutation(row, puts, deletes=stale))
        if mutations:
            self.backend.mutate_rows(K.SIGNATURES_SEEN, mutations)
        self._written.update(self._pending)
        self._pending = {}

    def finish(self):
        """Write what is pending (the day's plain ranking always has its rows, empty when no
        crash has a signature), then delete the day's other head and top rows."""
        if RK.top_row(self.day) not in self._written and RK.top_row(self.day) not in self._pending:
            self.add(RK.rank_row(self.day), {})
        self._flush()
        gone = []
        for head in (True, False):
            first = RK.top_row(self.day, head=head)
            # every head and top row has its total cell: reading it alone lists them
            gone += [row for row, _cells in self.backend.scan(K.SIGNATURES_SEEN, start=first,
                                                              stop=first + DK.SEPARATOR + b"\xff",
                                                              columns=[RK.COL_TOTAL])
                     if row not in self._written]
        if gone:
            self.backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, delete_row=True) for row in gone])

