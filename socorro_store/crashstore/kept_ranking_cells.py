"""Ranking cells a process read, kept while their row's own slack says the row is unchanged.

A split of a period by process type reads one column per signature shown from every ranking row
of the period (``~rank/<day>|pt=<type>``: 30 days x 16 process types), the same cells request
after request, though only today's rows change.  On a cut-over store each ranking row keeps its
own slack (:mod:`~socorro_store.schema.ranking_keys`: ``\\xffpos``, ``\\xffneg``, written in the
same row write as the counts; the deriver adds to one of them whenever it changes any count), and
both only grow. So the counts read with a slack are still the row's counts while the row's slack
reads the same, and a request reads the rows' three slack cells instead of every signature's cell.

Only rows with a slack of their own are kept: a row counted live (before a cut-over), or not
written yet, is read each time.  Nothing is written: a report writes nothing.
"""

from ..schema import keys as K
from ..schema import ranking_keys as RK
from .process_memo import BackendMemo

#: rows kept per backend, the least recently used going first (30 days x 16 process types is 480)
ROWS_KEPT = 4096

#: ``{row: (slack, {column: value}, columns read and found empty)}`` of each backend: a row's
#: cells of the columns read, with the slack cells read with them
kept_rows = BackendMemo(ROWS_KEPT)


def read_ranking_cells(backend, rows, columns):
    """``{row: {column: value}}`` of ranking ``rows`` (``crash_report_signatures_seen``), each
    restricted to ``columns``, as one multi-row get would answer (rows with none left out).

    Reads: the slack cells of the rows kept (one get), then the rows not kept or changed since,
    their columns and slack cells (one more get, when there are any)."""
    columns = list(columns)
    wanted = set(columns)
    kept = {row: found for row, found in kept_rows.get_many(backend, rows).items()
            if wanted <= found[1].keys() | found[2]}  # every column read with it
    out, stale = {}, [row for row in rows if row not in kept]
    if kept:
        slack = backend.get_rows(K.SIGNATURES_SEEN, list(kept), columns=list(RK.SLACK_COLUMNS))
        for row, (was, cells, _absent) in kept.items():
            if RK.parse_slack_cells(slack.get(row, {})) == was:
                out[row] = {column: cells[column] for column in columns if column in cells}
            else:
                stale.append(row)
    if stale:
        found = backend.get_rows(K.SIGNATURES_SEEN, stale, columns=sorted(wanted | set(RK.SLACK_COLUMNS)))
        keep = []
        for row in stale:
            cells = found.get(row, {})
            slack = RK.parse_slack_cells(cells)
            out[row] = counts = {column: value for column, value in cells.items() if column in wanted}
            if slack[0] > 0:  # a slack of its own: the counts stand while it reads the same
                keep.append((row, (slack, counts, frozenset(wanted - counts.keys()))))
        kept_rows.update(backend, keep, dropped=stale)
    return {row: cells for row, cells in out.items() if cells}
