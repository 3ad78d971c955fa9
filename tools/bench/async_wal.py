"""Measure what a weaker write durability of derived data saves (issue 38): HBase's Thrift2
``TDurability.ASYNC_WAL`` on every put and delete of the tables the deriver writes.

Not a product option: a bench mode (``MODE~t2a`` of ``bench_crashes.py --async-wal``) patches
one store's Thrift2 backend in its own child process.  What a region server crash would cost is
in docs/performance.md: the deriver consumes its change records with a synchronous write, so
derived writes lost with the WAL's last second would stay lost until re-derived.
"""

import threading

from socorro_store.backends.hbase.thrift2_idl import hbase2
from socorro_store.schema import keys as K

#: the tables only the deriver writes on a cut-over store (its counted facts, the counters, the
#: rankings, the derived indexes); the lease and journal go by check-and-put, which stays synchronous
DERIVED_TABLES = frozenset({K.METRICS, K.SIGNATURES, K.SIGNATURES_SEEN, K.DERIVED, K.SIGNATURE_OOID,
                            K.LEGACY_SUBMITTED_TIME, K.HANG_ID, K.HANG_ID_SUBMITTED_TIME})


def use_async_wal(backend, tables=DERIVED_TABLES):
    """Make ``backend`` (a Thrift2 backend) write ``tables`` with ASYNC_WAL from now on."""
    local = threading.local()
    mutate_rows, tput, tdeletes = backend.mutate_rows, backend._tput, backend._tdeletes

    def relaxed_mutate_rows(table, mutations, timestamp=None):
        local.relaxed = table in tables
        try:
            return mutate_rows(table, mutations, timestamp)
        finally:
            local.relaxed = False

    def relaxed_tput(row, puts, timestamp=None):
        out = tput(row, puts, timestamp)
        if getattr(local, "relaxed", False):
            out.durability = hbase2.TDurability.ASYNC_WAL
        return out

    def relaxed_tdeletes(mutation, timestamp):
        out = tdeletes(mutation, timestamp)
        if getattr(local, "relaxed", False):
            for tdelete in out:
                tdelete.durability = hbase2.TDurability.ASYNC_WAL
        return out

    backend.mutate_rows, backend._tput, backend._tdeletes = relaxed_mutate_rows, relaxed_tput, relaxed_tdeletes
