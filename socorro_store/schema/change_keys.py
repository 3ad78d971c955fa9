"""Row layouts of the change records (``crash_report_changes``), what derived data is fed from.

==================================  =====================================================================
row / cell                          holds
==================================  =====================================================================
salt + crash id + ``/`` + stamp     one change record: a save that changed what the crash is derived
                                    as (a save, a deletion, an expiry); ``change:ooid`` = the crash id
                                    (the search feed's), ``change:derive`` = ``S``, ``D`` or ``E`` (the
                                    counter deriver's); each consumer deletes its own cell
``flags:changed`` (crash row)       the stamp of the crash's last change record, written with the
                                    change itself: a record whose stamp the crash row does not hold
                                    yet belongs to a save still in flight (or one that failed)
``~feed/lease``                     ``change:lease`` = ``holder|expiry ns``: the one process feeding
``~feed/dead/`` + crash id          a crash whose document the search engine refused
                                    (``change:ooid`` = the problem): dead-lettered, not retried
==================================  =====================================================================

A stamp is 28 ASCII bytes: 20 digits of nanoseconds since the epoch and 8 random hex digits.  Each
save's record is its own row, so consuming a record never removes a later save's.
"""

import os
import re
import time

from ..errors import InvalidArgument
from .crash_ids import CRASH_ID_LEN, validate_crash_id

STAMP_LEN = 28
_STAMP_RE = re.compile(rb"\A[0-9]{20}[0-9a-f]{8}\Z")
#: the feed's lease row: ``~`` sorts after every salt, so a scan of records stops before it
FEED_LEASE_ROW = b"~feed/lease"
#: the feed's dead letters, one row per crash
FEED_DEAD_PREFIX = b"~feed/dead/"
#: a scan of ``[b"", RECORDS_STOP)`` reads every record and no other row
RECORDS_STOP = b"~"


def new_stamp(now_ns=None):
    """A fresh change stamp (the wall clock's nanoseconds and 32 random bits)."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    return b"%020d%s" % (now_ns, os.urandom(4).hex().encode("ascii"))


def stamp_time_ns(stamp):
    """The nanoseconds since the epoch a stamp was made at."""
    return int(stamp[:20])


def change_record_key(crash_id, stamp):
    """``salt + crash_id + "/" + stamp``."""
    validate_crash_id(crash_id)
    if not isinstance(stamp, bytes) or not _STAMP_RE.fullmatch(stamp):
        raise InvalidArgument(f"not a change stamp: {stamp!r}")
    return crash_id[0].encode("ascii") + crash_id.encode("ascii") + b"/" + stamp


def parse_change_record_key(key):
    """Inverse of :func:`change_record_key`: ``(crash_id, stamp)``; InvalidArgument if malformed."""
    if not isinstance(key, bytes) or len(key) != 2 + CRASH_ID_LEN + STAMP_LEN:
        raise InvalidArgument(f"not a change record key: {key!r}")
    crash_id = key[1:1 + CRASH_ID_LEN].decode("ascii", "replace")
    stamp = key[2 + CRASH_ID_LEN:]
    if change_record_key(crash_id, stamp) != key:
        raise InvalidArgument(f"not a change record key: {key!r}")
    return crash_id, stamp
