"""Row and column layouts of the processing queue's claims and dead letters.

Claims live on the queue rows themselves (table ``crash_reports_index_unprocessed_flag``):

==========================  ==========================================================================
cell                        holds
==========================  ==========================================================================
``processor_state:claim``   on the crash's claim row: its claim history (msgpack records, see
                            :mod:`socorro_store.crashstore.claims`); deleted with the row
``processor_state:dead``    on the claim row of a dead-lettered crash: its failed attempts (ASCII int)
==========================  ==========================================================================

A crash's claim row is its standard queue row (``salt + submitted time + crash id``) when it was
taken from the standard or the legacy queue (the legacy row is only a pointer to it, so a crash in
both queues has one owner), and its priority row when it was taken from the priority queue.

Dead letters are also listed in rows of their own, so an operator can list them without scanning
the queue: ``~dead/`` + crash id, one cell ``processor_state:dead_letter`` (msgpack
``{"attempts", "queue", "claim_row"}``).  ``~`` sorts after every salt and after ``priority/``, so
no queue scan meets them, and they hold no ``ids`` cell, so index scrutiny does not take them for
pointers.  These are our additions to Socorro's schema (it kept processor state elsewhere).
"""

from ..errors import InvalidArgument
from .keys import FAMILY_PROCESSOR_STATE, validate_crash_id

COL_CLAIM = FAMILY_PROCESSOR_STATE + b":claim"
COL_DEAD = FAMILY_PROCESSOR_STATE + b":dead"
COL_DEAD_LETTER = FAMILY_PROCESSOR_STATE + b":dead_letter"
DEAD_LETTER_PREFIX = b"~dead/"


def dead_letter_key(crash_id):
    """``~dead/<crash id>``: the listing row of a dead-lettered crash."""
    return DEAD_LETTER_PREFIX + validate_crash_id(crash_id).encode("ascii")


def parse_dead_letter_key(key):
    """Inverse of :func:`dead_letter_key`: the crash id."""
    if not isinstance(key, bytes) or not key.startswith(DEAD_LETTER_PREFIX):
        raise InvalidArgument(f"not a dead letter row key: {key!r}")
    return validate_crash_id(key[len(DEAD_LETTER_PREFIX):].decode("ascii", "replace"))
