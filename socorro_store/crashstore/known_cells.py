"""What a deriver knows of the counter cells it owns, so that a batch need not read them again.

Within one hold of the derivation lease no other deriver writes the counter cells, so a value
this holder wrote (or read) is the cell's value until it writes again: the hot cells (this
hour's metrics, the busy signatures' rows) cost one read per :data:`KNOWN_SECONDS`, not one per
batch.  Two things can still change a cell beside the holder, and bound how long a value is
trusted:

* expiry deletes the cells of intervals long closed (a value is kept :data:`KNOWN_SECONDS`);
* a writer that should not be there (an older version still incrementing): every
  :data:`VERIFY_SECONDS` (and first in a hold) a batch reads every cell it changes, and a known
  cell read at another value (not 0: an expired interval's) is a write beside the deriver.

A holder taking the lease after another forgets everything (:meth:`KnownCells.forget`).
"""

import time

#: how long a value stands in for a read of its cell
KNOWN_SECONDS = 60.0
#: how often a batch reads every cell it changes anyway
VERIFY_SECONDS = 5.0
#: values kept at most (about 150 bytes each)
MAX_KNOWN = 200_000


class KnownCells:
    """``{(table, row, column): value}`` known to one lease holder (not thread-safe: the
    deriver's pass lock covers it)."""

    def __init__(self, known_seconds=KNOWN_SECONDS, verify_seconds=VERIFY_SECONDS, max_known=MAX_KNOWN):
        self.known_seconds, self.verify_seconds, self.max_known = known_seconds, verify_seconds, max_known
        self._values = {}  # key -> (value, monotonic time known)
        self._verify_at = 0.0

    def forget(self):
        """Another holder may have written: nothing is known."""
        self._values = {}
        self._verify_at = 0.0

    def verify_next(self):
        """Make the next batch read every cell it changes (a new hold)."""
        self._verify_at = 0.0

    def lookup(self, keys):
        """``(known, verify)``: the values known of ``keys``, and whether this batch should read
        every one of them anyway (then compare with :meth:`foreign`)."""
        now = time.monotonic()
        fresh = now - self.known_seconds
        known = {key: found[0] for key in keys for found in [self._values.get(key)]
                 if found is not None and found[1] > fresh}
        verify = now >= self._verify_at
        if verify:
            self._verify_at = now + self.verify_seconds
        return known, verify

    @staticmethod
    def foreign(known, read):
        """``[(table, row, column, known, read)]``: the known cells ``read`` at another value,
        not 0 (an expired interval's cells go)."""
        return sorted((*key, value, read[key]) for key, value in known.items()
                      if key in read and read[key] not in (0, value))

    def remember(self, cells):
        """Keep ``[(table, row, column, value)]``, just written or read."""
        now = time.monotonic()
        if len(self._values) + len(cells) > self.max_known:
            fresh = now - self.known_seconds
            self._values = {key: found for key, found in self._values.items() if found[1] > fresh}
            if len(self._values) + len(cells) > self.max_known:
                self._values = {}
        for table, row, column, value in cells:
            self._values[(table, row, column)] = (value, now)
