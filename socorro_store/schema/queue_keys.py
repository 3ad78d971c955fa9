"""Row and column layouts of the processing queue's claims and dead letters.

Claims are kept beside the queue rows, in the same table (``crash_reports_index_unprocessed_flag``),
in one claim row per queue and minute of queue time:

==================================  =====================================================================
row / cell                          holds
==================================  =====================================================================
``~claims/`` + minute               the claims of the standard (and legacy) queue rows of that minute of
                                    submission: ``~claims/2016-09-18T12:04``
``~claims/priority/`` + minute      the claims of the priority rows of that minute of request
``processor_state:claim/<R>``       in the claim row of queue row ``R``: the claim history of ``R``'s
                                    crash (msgpack records, :mod:`socorro_store.crashstore.claims`),
                                    ended by a ``done`` record when the crash is processed
``processor_state:dead``            on a queue row of a dead-lettered crash: its failed attempts (ASCII)
==================================  =====================================================================

A crash's claim row is chosen by its queue row ``R``: its standard queue row (``salt + submitted
time + crash id``) when it was taken from the standard or the legacy queue (the legacy row is only
a pointer to it, so a crash in both queues has one owner), and its priority row when it was taken
from the priority queue.  The crashes a processor takes at once sit side by side in the queue, so
their claims share one or two claim rows: a group is claimed with one atomic Append per claim row,
not one per crash (HBase's Thrift1 has no multi-row Append).  A claim row holds the crashes of one
minute (about 2,000 at 3 M crashes a day), like the per-minute counter rows: it is bounded by the
submission rate, never by how many crashes the store ever processed, and an Append reads only its
own columns.

Dead letters are also listed in rows of their own, so an operator can list them without scanning
the queue: ``~dead/`` + crash id, one cell ``processor_state:dead_letter`` (msgpack
``{"attempts", "queue", "claim_row"}``).  ``~`` sorts after every salt and after ``priority/``, so
no queue scan meets either kind of row, and they hold no ``ids`` cell, so index scrutiny does not
take them for pointers.  These are our additions to Socorro's schema (it kept processor state
elsewhere).
"""

from ..errors import InvalidArgument
from .keys import FAMILY_PROCESSOR_STATE, PRIORITY_PREFIX, validate_crash_id

COL_DEAD = FAMILY_PROCESSOR_STATE + b":dead"
COL_DEAD_LETTER = FAMILY_PROCESSOR_STATE + b":dead_letter"
DEAD_LETTER_PREFIX = b"~dead/"
CLAIMS_PREFIX = b"~claims/"
_CLAIM_QUALIFIER = b"claim/"
_MINUTE_LEN = len(b"2016-09-18T12:04")


def claim_row_key(queue_row):
    """The claim row holding the claim history of queue row ``queue_row`` (either key layout:
    ours, or Socorro's 19-character stamps; standard, legacy or priority)."""
    prefix = PRIORITY_PREFIX if queue_row.startswith(PRIORITY_PREFIX) else b""
    minute = queue_row[len(prefix) + 1:len(prefix) + 1 + _MINUTE_LEN]
    if len(minute) != _MINUTE_LEN:
        raise InvalidArgument(f"not a queue row key: {queue_row!r}")
    return CLAIMS_PREFIX + prefix + minute


def parse_claim_row_key(key):
    """Inverse of :func:`claim_row_key` (for one minute): ``(queue prefix, minute bytes)``."""
    if not isinstance(key, bytes) or not key.startswith(CLAIMS_PREFIX):
        raise InvalidArgument(f"not a claim row key: {key!r}")
    rest = key[len(CLAIMS_PREFIX):]
    prefix = PRIORITY_PREFIX if rest.startswith(PRIORITY_PREFIX) else b""
    minute = rest[len(prefix):]
    if len(minute) != _MINUTE_LEN:
        raise InvalidArgument(f"not a claim row key: {key!r}")
    return prefix, minute


def claim_column(queue_row):
    """``processor_state:claim/<queue row>``: the claim history cell of ``queue_row``."""
    return FAMILY_PROCESSOR_STATE + b":" + _CLAIM_QUALIFIER + queue_row


def parse_claim_column(column):
    """Inverse of :func:`claim_column`: the queue row key."""
    head = FAMILY_PROCESSOR_STATE + b":" + _CLAIM_QUALIFIER
    if not isinstance(column, bytes) or not column.startswith(head) or len(column) == len(head):
        raise InvalidArgument(f"not a claim column: {column!r}")
    return column[len(head):]


def claim_cell(queue_row):
    """``(claim row, claim column)`` of ``queue_row``."""
    return claim_row_key(queue_row), claim_column(queue_row)


def dead_letter_key(crash_id):
    """``~dead/<crash id>``: the listing row of a dead-lettered crash."""
    return DEAD_LETTER_PREFIX + validate_crash_id(crash_id).encode("ascii")


def parse_dead_letter_key(key):
    """Inverse of :func:`dead_letter_key`: the crash id."""
    if not isinstance(key, bytes) or not key.startswith(DEAD_LETTER_PREFIX):
        raise InvalidArgument(f"not a dead letter row key: {key!r}")
    return validate_crash_id(key[len(DEAD_LETTER_PREFIX):].decode("ascii", "replace"))
