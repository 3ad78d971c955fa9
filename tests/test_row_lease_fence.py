"""A lease taken while its last holder is still writing (crashstore/row_lease.py).

Found by the 1 M-crash build on a real HBase: two writer processes' derivers, passes longer than
the lease's term.  A taker reads the lease row (the journal of the last batch) and then claims
the lease cell with a check-and-put.  The last holder, still in the pass it began while it held
the lease, puts its next journal between the two: the claim used to succeed (the lease cell had
not changed), and the taker replayed the journal before that one over the counters the holder
went on to write.  The holder's verifying batches then logged "counter cells written beside the
deriver", and where the replay landed last, the batch's counts were lost.
"""

import time

from socorro_store.crashstore.row_lease import RowLease
from socorro_store.schema import derived_keys as D
from socorro_store.schema import keys as K

ROW = b"~derive/test-lease"


def _lease(store, holder, seconds):
    return RowLease(store.backend, K.DERIVED, ROW, D.COL_LEASE, holder=holder, seconds=seconds,
                    extra_columns=[D.COL_JOURNAL])


def test_a_take_read_before_the_holders_fenced_put_fails_and_the_next_reads_that_put(store, monkeypatch):
    backend = store.backend
    holder = _lease(store, b"holder", 1.0)
    assert holder.hold()
    assert holder.put_fenced({D.COL_JOURNAL: b"batch 1"})
    time.sleep(1.05)  # its term is over; nobody has taken the lease, so its cell still names it
    taker = _lease(store, b"taker", 30)
    claim = backend.check_and_put

    def claim_after_the_holders_next_put(*args, **kwargs):
        monkeypatch.setattr(backend, "check_and_put", claim)
        assert holder.put_fenced({D.COL_JOURNAL: b"batch 2"})  # lands between the read and the claim
        return claim(*args, **kwargs)

    monkeypatch.setattr(backend, "check_and_put", claim_after_the_holders_next_put)
    assert not taker.hold()  # what it read (batch 1) is not the row's any more
    assert backend.get_row(K.DERIVED, ROW, [D.COL_JOURNAL]) == {D.COL_JOURNAL: b"batch 2"}
    assert holder.held  # the fenced put renewed the holder's term
    holder.release()
    assert taker.hold() and taker.taken_with[D.COL_JOURNAL] == b"batch 2"
    assert not holder.put_fenced({D.COL_JOURNAL: b"batch 3"})  # the old holder writes nothing now
    assert backend.get_row(K.DERIVED, ROW, [D.COL_JOURNAL]) == {D.COL_JOURNAL: b"batch 2"}


def test_every_fenced_put_changes_the_lease_cell(store):
    lease = _lease(store, b"holder", 30)
    assert lease.hold()
    seen = set()
    for n in range(3):
        assert lease.put_fenced({D.COL_JOURNAL: b"batch %d" % n})
        seen.add(store.backend.get_row(K.DERIVED, ROW, [D.COL_LEASE])[D.COL_LEASE])
    assert len(seen) == 3 and all(value.startswith(b"holder|") for value in seen)
