"""Row layouts of the deriver's state (``crash_report_derived``) and how counted facts are stored.

==================================  =====================================================================
row / cell                          holds
==================================  =====================================================================
salt + crash id                     ``derived:counted``: the facts the crash is counted under now
                                    (:func:`encode_facts`), what the deriver takes back when the crash
                                    changes or is deleted
``~derive/since``                   ``derived:since``: the cut-over mark, the UTC time counting moved
                                    from the live increments to the deriver
``~derive/lease``                   ``derived:lease`` = ``holder|expiry ns``: the one deriving process;
                                    ``derived:journal``: its last batch (:func:`encode_journal`);
                                    ``derived:last_writer``: the holder that wrote it;
                                    ``derived:wanted`` = ``holder|until ns``: a batch job asking for the
                                    lease (``row_lease.RowLease.want``)
``~hang/`` + hang id                ``derived:paired``: the UTC ISO time a hang pair is counted at (its
                                    later side's submission), while it is one (:func:`hang_pair_row`)
``~derive/foreign``                 ``derived:foreign``: writes to the deriver's cells it did not make
                                    (an older version's saves still incrementing): ``{"count", "last",
                                    "at"}`` (msgpack)
==================================  =====================================================================

Facts are a plain dict (msgpack): ``{"t": submitted ISO time, "raw": [legacy, process type,
{"product", "version", "os"}] or None, "proc": [signature, {"product", "version", "os",
"process_type"}, error] or None}``, the dimension values as counted (capped), with ``"hang": hang
id`` for a side of a hang pair and ``"prio": True`` while a priority request is pending.
"""

import msgpack

from ..errors import InvalidArgument
from .crash_ids import CRASH_ID_LEN, validate_crash_id

COL_COUNTED = b"derived:counted"
COL_SINCE = b"derived:since"
COL_LEASE = b"derived:lease"
COL_JOURNAL = b"derived:journal"
COL_PAIRED = b"derived:paired"
COL_FOREIGN = b"derived:foreign"
COL_LAST_WRITER = b"derived:last_writer"
COL_WANTED = b"derived:wanted"
SINCE_ROW = b"~derive/since"
LEASE_ROW = b"~derive/lease"
FOREIGN_ROW = b"~derive/foreign"
HANG_PREFIX = b"~hang/"


def hang_pair_row(hang_row):
    """``~hang/`` + a hang-id row key (the hang id's bytes): where a pair's counted time is kept,
    in the deriver's own table (a deletion removes the hang-id row, the count must still be taken
    back)."""
    if not isinstance(hang_row, bytes) or not hang_row:
        raise InvalidArgument(f"not a hang-id row key: {hang_row!r}")
    return HANG_PREFIX + hang_row


def parse_hang_pair_row(row):
    """Inverse of :func:`hang_pair_row`: the hang-id row key."""
    if not isinstance(row, bytes) or not row.startswith(HANG_PREFIX) or len(row) == len(HANG_PREFIX):
        raise InvalidArgument(f"not a hang pair row: {row!r}")
    return row[len(HANG_PREFIX):]


def counted_row(crash_id):
    """``salt + crash_id``: the row of a crash's counted facts."""
    validate_crash_id(crash_id)
    return crash_id[0].encode("ascii") + crash_id.encode("ascii")


def parse_counted_row(row):
    """Inverse of :func:`counted_row`; InvalidArgument if malformed."""
    if not isinstance(row, bytes) or len(row) != 1 + CRASH_ID_LEN:
        raise InvalidArgument(f"not a counted-facts row: {row!r}")
    crash_id = row[1:].decode("ascii", "replace")
    if counted_row(crash_id) != row:
        raise InvalidArgument(f"not a counted-facts row: {row!r}")
    return crash_id


def is_counted_row(row):
    """Whether ``row`` is a crash's counted-facts row (:func:`counted_row`)."""
    try:
        parse_counted_row(row)
    except InvalidArgument:
        return False
    return True


def encode_facts(facts):
    return msgpack.packb(facts, use_bin_type=True)


def decode_facts(raw):
    """The facts of a ``derived:counted`` cell; None for an empty or unreadable one (counted
    under nothing: the deriver then counts the crash afresh)."""
    if not raw:
        return None
    try:
        facts = msgpack.unpackb(raw, raw=False)
    except (ValueError, msgpack.exceptions.ExtraData, msgpack.exceptions.FormatError,
            msgpack.exceptions.StackError):
        return None
    return facts if isinstance(facts, dict) and isinstance(facts.get("t"), str) else None


def encode_journal(cells, counted, consumed, pointers=()):
    """A batch: ``cells`` ``[(table, row, column, value)]`` (absolute counter values), ``counted``
    ``[(crash id, facts or None)]``, ``consumed`` ``[change record key]``, ``pointers``
    ``[(table, row, puts or None, columns deleted or None)]`` (derived index rows: puts, the
    deletes of some columns, or with neither the delete of the whole row)."""
    return msgpack.packb({"cells": [list(c) for c in cells], "counted": [list(c) for c in counted],
                          "consumed": list(consumed), "pointers": [list(p) for p in pointers]}, use_bin_type=True)


def decode_journal(raw):
    """Inverse of :func:`encode_journal`: ``(cells, counted, consumed, pointers)``, or None for
    none (a journal of a version that derived no pointers has none)."""
    if not raw:
        return None
    batch = msgpack.unpackb(raw, raw=False)
    return ([tuple(c) for c in batch["cells"]], [tuple(c) for c in batch["counted"]], list(batch["consumed"]),
            [tuple(p) for p in batch.get("pointers", ())])
