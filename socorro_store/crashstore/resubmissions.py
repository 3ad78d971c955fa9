"""A crash id saved again: collector retries are no-ops, other payloads are conflicts.

A collector retries a save whose reply it did not get, although the save may have succeeded.
Writing the crash again would list it twice in ``submitted_time`` (when the retry carries a new
``submitted_timestamp``), queue it again, count it again, and put ``flags:processed=N`` back on a
crash already processed.  So before a batch of raw crashes is written, :func:`sort_out` reads
the crash rows' state cells (``ids:ooid``, ``timestamps:submitted``, ``flags:processed``: small
columns, one multi-row get per batch) and sorts each crash into:

* :data:`NEW`: no crash row yet; written as usual (pointers first, then the row);
* :data:`RETRY`: the stored crash has the same annotations (``submitted_timestamp`` aside: a
  re-stamped retry keeps the first submission time) and the same dumps; nothing is written and
  the save succeeds;
* a :class:`CrashConflict`: the id is stored with other annotations or dumps; nothing is
  written for it.

Only crashes found stored have their payload read back (a second get, of those rows alone), so
a batch of new crashes pays one small read.  A crash saved twice within one batch is sorted the
same way against its first occurrence.

Why the pointer-first order still holds: a crash row is written only after its pointers, so a
crash row found here has its queue and index pointers, and the retry may skip them.  A save that
failed before its crash row leaves no row, and its retry writes everything again (puts are
idempotent).

The window that stays open: two saves of one id racing from two processes (or two stores) can
both find no row and both write.  With the same submission time they write the same pointer
rows (listed and queued once) and the live counters count the crash twice until the next
``rollup`` recomputes them; with different submission times the crash is also listed under
both.  Saves through one store are serialised per group (:mod:`group_commit`), so races within
one process are closed.
"""

import json

from ..errors import CrashConflict
from ..schema import keys as K

NEW = "new"
RETRY = "retry"


def sort_out(backend, prepared):
    """One outcome per prepared raw crash, in order: :data:`NEW`, :data:`RETRY` or a :class:`CrashConflict`."""
    rows = list(dict.fromkeys(c.row for c in prepared))
    found = backend.get_rows(K.CRASH_REPORTS, rows, columns=[K.COL_SUBMITTED])  # stored or not
    stored = [row for row in rows if K.COL_SUBMITTED in found.get(row, {})]
    payloads = {}
    if stored:
        cells = backend.get_rows(K.CRASH_REPORTS, stored, columns=[K.COL_META, K.FAMILY_RAW])
        payloads = {row: _payload(cells.get(row, {})) for row in stored}
    outcomes = []
    for crash in prepared:
        mine = _payload(crash.puts)
        if crash.row not in payloads:
            payloads[crash.row] = mine
            outcomes.append(NEW)
        elif mine == payloads[crash.row]:
            outcomes.append(RETRY)
        else:
            outcomes.append(CrashConflict(
                f"crash {crash.crash_id} is already stored with other annotations or dumps; nothing written"))
    return outcomes


def _payload(cells):
    """What makes two saves of one id the same crash: annotations (bar the submission time) and dumps."""
    dumps = {column: value for column, value in cells.items() if column.startswith(K.FAMILY_RAW + b":")}
    try:
        annotations = json.loads(cells[K.COL_META])
    except (KeyError, ValueError):  # stored data is read tolerantly: unreadable differs from anything
        return ("unreadable", object())
    if isinstance(annotations, dict):
        annotations.pop("submitted_timestamp", None)
    return annotations, dumps
