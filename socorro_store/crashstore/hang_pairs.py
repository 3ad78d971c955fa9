"""Hang pairs on a cut-over store: the hang-id rows and the pair counts, derived by the deriver.

A crash of this store's collector with a hang id (``ids:hang``) is one side of a pair: its
column ``ids:ooid:<ProcessType>`` in the hang-id row names it.  A pair counts once
(``submitted_crash_report_hang_pairs``, every interval), at its later side's submission, while
two or more sides have crash rows: the rule ``rollup`` recounts by (:mod:`~socorro_store.jobs.recount`).

On a cut-over store the saves write neither the hang-id column nor the count.  For each batch,
the deriver (:mod:`.counter_deriver`) gives :func:`derive_hang_pairs` the crashes whose counted
facts moved; for every hang id they touch it reads the hang-id row, moves the sides, reads the
other sides' crash rows and the time the pair is counted at now (``~hang/<hang id>`` in the
deriver's own table: a deletion removes the hang-id row, and the count must still be taken
back), and returns the counter change and the rows to write, which the deriver journals with
the rest of its batch.  One writer, absolute state: a pair is counted at most once, and moves
when its sides do.

A pair counted live before the cut-over carries the live marker (``ids:paired`` in the hang-id
row) and no time: it is taken to be counted at its time now, so a pair that comes apart after
the cut-over keeps that count (``rollup`` reports it in ``derived_differences``).
"""

from datetime import datetime

from ..errors import InvalidArgument
from ..schema import derived_keys as D
from ..schema import keys as K
from ..schema.stored import stored_time
from .counters import HANG_PAIRS, metric_increments


def hang_side(facts):
    """``(hang-id row, column)`` of the crash counted under ``facts``, or None: only a raw crash
    of this store's collector with a hang id is a side."""
    if facts is None or facts["raw"] is None or not facts.get("hang"):
        return None
    return facts["hang"], K.hang_column(facts["raw"][1])


def pair_time(side_times):
    """When a hang pair counts: at its later side's submission, once two or more of its sides
    have crash rows (``side_times``: their submitted times); None while it is no pair.  The one
    rule the deriver, the saves of a store not cut over and ``rollup``'s recount count by."""
    alive = sorted(side_times)
    return alive[-1] if len(alive) >= 2 else None


def derive_hang_pairs(backend, moved, cells_of):
    """``(increments, rows)`` bringing the hang-id rows and pair counts of ``moved`` (``[(crash
    id, facts counted under, facts now)]``) to what the crash rows say; ``cells_of`` {crash id:
    its crash row as the batch read it, or None when gone}.  ``rows``: ``[(table, row, puts or
    None, columns deleted or None)]`` as :func:`~socorro_store.schema.derived_keys.encode_journal`
    journals them."""
    moves = {}  # hang-id row -> [(crash id, side column before or None, after or None)]
    for crash_id, was, now in moved:
        before, after = hang_side(was), hang_side(now)
        if before != after:
            for side in {before, after} - {None}:
                moves.setdefault(side[0], [])
            if before is not None:
                moves[before[0]].append((crash_id, before[1], None))
            if after is not None:
                moves[after[0]].append((crash_id, None, after[1]))
    if not moves:
        return [], []
    hang_rows = sorted(moves)
    found, counted = {}, {}
    backend.overlap([
        lambda: found.update(backend.get_rows(K.HANG_ID, hang_rows, columns=[b"ids"])),
        lambda: counted.update(backend.get_rows(K.DERIVED, [D.hang_pair_row(r) for r in hang_rows],
                                                columns=[D.COL_PAIRED]))])
    sides, rows = {}, []
    for hang_row, row_moves in moves.items():
        cells = found.get(hang_row, {})
        was = {column: value.decode("ascii", "replace") for column, value in cells.items() if K.is_hang_column(column)}
        now = dict(was)
        for crash_id, before, after in row_moves:
            if before is not None and now.get(before) == crash_id:  # it may name another crash by now
                del now[before]
            if after is not None:
                now[after] = crash_id
        # one mutation of the row: a delete and a put of one cell in one batch could share a
        # timestamp, and HBase's delete marker would then hide the put
        puts = {column: crash_id.encode("ascii") for column, crash_id in now.items() if was.get(column) != crash_id}
        deletes = sorted(column for column in was if column not in now)
        if puts or deletes:
            rows.append((K.HANG_ID, hang_row, puts or None, deletes or None))
        sides[hang_row] = now
    times = _side_times(backend, {c for now in sides.values() for c in now.values()}, cells_of)
    increments = []
    for hang_row, now in sides.items():
        at = pair_time(times[c] for c in now.values() if c in times)
        stored = counted.get(D.hang_pair_row(hang_row), {}).get(D.COL_PAIRED)
        counted_at = parse_pair_time(stored) if stored else (at if K.COL_PAIRED in found.get(hang_row, {}) else None)
        if counted_at == at:
            continue
        if counted_at is not None:
            increments += metric_increments(counted_at, [HANG_PAIRS], -1)
        if at is not None:
            increments += metric_increments(at, [HANG_PAIRS])
        pair_row = D.hang_pair_row(hang_row)
        rows.append((K.DERIVED, pair_row, {D.COL_PAIRED: at.isoformat().encode("ascii")}, None) if at is not None
                    else (K.DERIVED, pair_row, None, None))
    return increments, rows


def _side_times(backend, crash_ids, cells_of):
    """{crash id: submitted time} of the sides whose crash rows exist: the batch's rows as read,
    the others read now."""
    others = sorted(c for c in crash_ids if c not in cells_of and K.CRASH_ID_RE.match(c))  # Socorro's rows: any text
    rows = {}
    if others:
        rows = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(c) for c in others],
                                columns=[K.COL_OOID, K.COL_SUBMITTED])
    out = {}
    for crash_id in crash_ids:
        cells = cells_of[crash_id] if crash_id in cells_of else rows.get(K.crash_row_key(crash_id))
        if cells and K.COL_OOID in cells:
            try:
                out[crash_id] = stored_time(cells[K.COL_SUBMITTED])
            except (KeyError, InvalidArgument):
                continue  # unreadable: no side (rollup reports it)
    return out


def parse_pair_time(raw):
    """The time a pair is counted at, as the deriver recorded it (``~hang/<hang id>``), or None."""
    try:
        return datetime.fromisoformat(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
