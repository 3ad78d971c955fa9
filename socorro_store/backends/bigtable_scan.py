"""Paged scans for the Bigtable backend: forward natively, backward by blocks.

Forward: row-range reads of ``page_size`` rows, each page starting just after the last key.

Backward (the emulator answers UNIMPLEMENTED to reversed reads, and older Bigtable clients cannot
ask for them): one key-only forward pass over the range keeps the first key of every block of
``page_size`` matching rows; then the blocks are read, last first, each forward in pages and
yielded in reverse.  Memory holds one block plus one key per block, never the range.  The cost is
the extra key-only pass, which reads the whole range even when a limit stops the scan early.
"""

from google.cloud.bigtable.data import ReadRowsQuery, RowRange

from . import bigtable_support as bts
from .bigtable_support import now_ms


def limited(rows, limit):
    returned = 0
    for item in rows:
        yield item
        returned += 1
        if limit is not None and returned >= limit:
            return


class Scan:
    """A paged scan of one key range; forward natively, backward by blocks (see module doc)."""

    def __init__(self, backend, table, key_range, families, select, timestamp, include_timestamp):
        self.backend, self.table, self.key_range = backend, table, key_range
        self.families, self.select = families, select
        self.timestamp, self.include_timestamp = timestamp, include_timestamp

    def _filter(self):
        # recomputed per page: the TTL cut-off moves with the clock, as in HBase
        return bts.read_filter(self.families, self.select, self.timestamp, 1, now_ms())

    def _page(self, low, low_inclusive, high, high_inclusive, limit, row_filter):
        query = ReadRowsQuery(row_ranges=[RowRange(low, high, start_is_inclusive=low_inclusive,
                                                   end_is_inclusive=high_inclusive)],
                              limit=limit, row_filter=row_filter)
        with self.backend._rpc("scan", self.table):
            return self.backend._table(self.table).read_rows(query)

    def _pages(self, page_size, keys_only=False, low=None, low_inclusive=None, high=None, high_inclusive=None):
        """Forward pages over ``[low, high]`` (default: the scan's range) as lists of rows."""
        kr = self.key_range
        low, low_inclusive = (kr.low, kr.low_inclusive) if low_inclusive is None else (low, low_inclusive)
        high, high_inclusive = (kr.high, kr.high_inclusive) if high_inclusive is None else (high, high_inclusive)
        while True:
            row_filter, empty = self._filter()
            if empty:
                return
            if keys_only:
                row_filter = bts.key_only_filter(row_filter)
            if low is not None and high is not None and (low > high or (low == high and not (low_inclusive and high_inclusive))):
                return  # an empty range (Bigtable would refuse it)
            page = self._page(low, low_inclusive, high, high_inclusive, page_size, row_filter)
            if page:
                yield page
            if len(page) < page_size:
                return
            low, low_inclusive = page[-1].row_key, False

    def forward(self, page_size):
        for page in self._pages(page_size):
            for row in page:
                yield row.row_key, self.backend._row_dict(row, self.include_timestamp)

    def backward(self, page_size):
        # Pass 1: the first key of every block of page_size matching rows (keys only, paged).
        block_starts = []
        for page in self._pages(page_size, keys_only=True):
            block_starts.append(page[0].row_key)
        # Pass 2: each block, last first, read forward and yielded in reverse.
        kr = self.key_range
        high, high_inclusive = kr.high, kr.high_inclusive
        for start in reversed(block_starts):
            rows = [row for page in self._pages(page_size, low=start, low_inclusive=True,
                                                high=high, high_inclusive=high_inclusive)
                    for row in page]
            for row in reversed(rows):
                yield row.row_key, self.backend._row_dict(row, self.include_timestamp)
            high, high_inclusive = start, False
