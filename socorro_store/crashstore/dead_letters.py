"""Dead letters: crashes the queue stopped handing out after too many failed attempts.

A dead letter is three marks: the queue row's ``COL_DEAD`` (takes skip it), a ``~dead/`` row
listing it (:func:`dead_lettered_crashes`), and the crash row's ``flags:dead_lettered``.  Saving
the crash processed removes all three (:mod:`processed_saves`), so a processed crash is never a
dead letter; :func:`~.crashes.enqueue_priority` requeues one.

Dead-lettering races saves: a take can judge a crash out of attempts just as a late processor
saves it.  The crash-row flag is therefore put by a check-and-put expecting the crash row's
``flags:processed`` as the take read it (for a standard or legacy crash, ``N``): a save that
stored its ``Y`` first (and whose clean-up may have run before the marks) makes the check fail,
and the marks are taken back; a save that stores it after runs its clean-up after the marks.
A deleted crash fails the check too (no stub row, marks taken back).
"""

import msgpack

from ..backends.base import RowMutation
from ..errors import InvalidArgument
from ..schema.keys import (COL_OOID, COL_PROCESSED, COL_SUBMITTED, CRASH_REPORTS, UNPROCESSED_FLAG,
                           crash_id_from_row_key, crash_row_key)
from ..schema.queue_keys import COL_DEAD, COL_DEAD_LETTER, DEAD_LETTER_PREFIX, dead_letter_key, parse_dead_letter_key
from .claims import now_ms
from .states import COL_DEAD_LETTERED, STATE_COLUMNS, crash_state, out_of_queue

def dead_letter(backend, queue, dead, cleanup=()):
    """Stop handing out ``[(claim row, crash id, attempts[, processed flag as read])]``: mark their
    claim rows, list them under ``~dead/``, and flag their crash rows (``cleanup``: more
    mutations of the queue table).

    The crash-row flag is put only where the crash still exists and is as the take read it (see
    the module docstring): a crash deleted or processed meanwhile gets no flag, and its
    queue-table marks are taken back."""
    dead = [(*item, None) if len(item) == 3 else tuple(item) for item in dead]  # no flag: check ids:ooid
    mutations = list(cleanup)
    for row, crash_id, attempts, _flag in dead:
        mutations.append(RowMutation(row, {COL_DEAD: str(attempts).encode("ascii")}))
        mutations.append(RowMutation(dead_letter_key(crash_id), {COL_DEAD_LETTER: msgpack.packb(
            {"attempts": attempts, "queue": queue, "claim_row": row, "at": now_ms()})}))
    backend.mutate_rows(UNPROCESSED_FLAG, mutations)
    if dead:
        applied = backend.check_and_put_many(CRASH_REPORTS, [
            (crash_row_key(crash_id), *_unchanged(crash_id, flag), {COL_DEAD_LETTERED: str(attempts).encode("ascii")})
            for _row, crash_id, attempts, flag in dead])
        # deleted or processed since the take read them: a processed crash's queue row is gone
        # (or going), so its mark goes with the whole row, as a deleted crash's does
        gone = [(row, crash_id) for (row, crash_id, _a, _f), ok in zip(dead, applied) if not ok]
        if gone:
            backend.mutate_rows(UNPROCESSED_FLAG, [
                m for row, crash_id in gone
                for m in (RowMutation(row, delete_row=True), RowMutation(dead_letter_key(crash_id), delete_row=True))])


def _unchanged(crash_id, flag):
    """``(column, expected)`` of a check that the crash row is as a take read it: its N/Y
    processed flag, else (rows of Socorro's happybase storage) that it still names its crash."""
    if flag in (b"N", b"Y"):
        return COL_PROCESSED, flag
    return COL_OOID, crash_id.encode("ascii")


def put_if_crash_exists(backend, mutations):
    """Apply ``mutations`` of crash rows only where the row still names its crash; return the
    crash ids of the rows that do not (deleted), where nothing of the mutation is written.

    The puts are one check-and-put per row on ``ids:ooid`` (the crash id, written with the row
    and removed by a deletion); the deletes follow (a delete never brings anything back).  On
    HBase's Thrift1 only the first cell is atomic with the check (the backend contract): put the
    cell that matters most first (a processed crash's JSON), so a deletion landing between the
    check and the other cells can leave only those (a stub row without ``ids:ooid``, which no
    reader takes for a crash).
    """
    if not mutations:
        return set()
    crash_id_of = {m.row: crash_id_from_row_key(m.row) for m in mutations}
    applied = backend.check_and_put_many(CRASH_REPORTS, [
        (m.row, COL_OOID, crash_id_of[m.row].encode("ascii"), m.puts) for m in mutations])
    later = [RowMutation(m.row, deletes=list(m.deletes)) for m, ok in zip(mutations, applied) if ok and m.deletes]
    if later:
        backend.mutate_rows(CRASH_REPORTS, later)
    return {crash_id_of[m.row] for m, ok in zip(mutations, applied) if not ok}


def dead_lettered_crashes(backend, limit=None):
    """The dead-lettered crashes, ``[{"crash_id", "attempts", "queue", "dead_lettered_at"}]`` in
    crash id order (one scan of the ``~dead/`` rows, bounded by the dead letters, and one read of
    their crash rows; ``limit`` caps the rows scanned).  ``dead_lettered_at`` is in ms since the
    epoch.  A crash of the standard or legacy queue processed since (a late save; its mark is
    left to a cut-over store's deriver, :mod:`.dequeue`) is no dead letter, and is not listed."""
    out = []
    for row, cells in backend.scan(UNPROCESSED_FLAG, prefix=DEAD_LETTER_PREFIX, columns=[COL_DEAD_LETTER],
                                   limit=limit):
        record = read_dead_letter_cells(cells)
        if record is not None:
            out.append({"crash_id": parse_dead_letter_key(row), "attempts": record.get("attempts"),
                        "queue": record.get("queue"), "dead_lettered_at": record.get("at")})
    if not out:
        return out
    rows = backend.get_rows(CRASH_REPORTS, [crash_row_key(d["crash_id"]) for d in out], columns=STATE_COLUMNS)
    return [d for d in out if d["queue"] == "priority"
            or not _processed_since(rows.get(crash_row_key(d["crash_id"])), d["crash_id"])]


def _processed_since(cells, crash_id):
    try:
        return bool(cells) and COL_SUBMITTED in cells and out_of_queue(crash_state(cells, crash_id))
    except InvalidArgument:  # an unreadable crash row: listed, for an operator to look at
        return False


def read_dead_letter_cells(cells):
    """The record of a dead letter row's cells; None for no (or a foreign) dead letter."""
    raw = cells.get(COL_DEAD_LETTER)
    if not raw:
        return None
    try:
        record = msgpack.unpackb(raw, raw=False)
    except (ValueError, msgpack.UnpackException):
        return None
    return record if isinstance(record, dict) else None
