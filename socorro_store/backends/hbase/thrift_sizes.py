"""Upper bounds on the encoded size of Thrift1 requests, to fit them under a frame limit.

A framed Thrift server reads a request as one frame and closes the connection when the frame is
over its limit (HBase: ``hbase.regionserver.thrift.framed.max_frame_size_in_mb``, 2 MB by
default); the client sees a reset connection.  To split batches before that happens, these
functions bound a request's size from above for both the binary and the compact protocol:

* a string or binary field costs its bytes plus at most 8 (3 bytes of field header and a 4-byte
  length in binary; at most 3 and a 5-byte varint in compact);
* a struct in a list costs at most 32 bytes besides its strings (field headers of its scalar
  fields, their values, the stop byte);
* a request costs at most :data:`REQUEST_OVERHEAD` besides its table name and items (message
  header and method name, list and map headers, an optional timestamp, stop bytes).

The bounds are loose by a few dozen bytes per cell, which is nothing next to a crash's dumps;
``tests/test_frames.py`` checks them against thriftpy2's real encoders.
"""

from ...config import DEFAULT_MAX_FRAME_MB
from ...errors import InvalidArgument

#: message header (12 bytes + method name), table field, list/map headers, timestamp, stops
REQUEST_OVERHEAD = 256
#: one Mutation / TColumn-like struct besides its column and value bytes
CELL_OVERHEAD = 32
#: one BatchMutation / TIncrement besides its row bytes and cells
ROW_OVERHEAD = 32


def frame_limit(max_frame_mb=None):
    """``(max_frame_mb, max request bytes)`` of a framed connection: ``max_frame_mb`` (the
    server's limit, default :data:`~socorro_store.config.DEFAULT_MAX_FRAME_MB`, as HBase's),
    checked; InvalidArgument outside (0, 2048)."""
    max_frame_mb = DEFAULT_MAX_FRAME_MB if max_frame_mb is None else max_frame_mb
    if isinstance(max_frame_mb, bool) or not isinstance(max_frame_mb, (int, float)) or not 0 < max_frame_mb < 2048:
        raise InvalidArgument(f"max_frame_mb must be a number in (0, 2048), not {max_frame_mb!r}")
    return max_frame_mb, int(max_frame_mb * 1024 * 1024)


def batch_mutation_bytes(batch):
    """Bound of one ``BatchMutation`` (row and its ``Mutation`` list) inside ``mutateRows``."""
    return ROW_OVERHEAD + len(batch.row) + sum(
        CELL_OVERHEAD + len(m.column) + len(m.value or b"") for m in batch.mutations)


def increment_bytes(increment):
    """Bound of one ``TIncrement`` inside ``incrementRows`` (its amount is an i64)."""
    return ROW_OVERHEAD + CELL_OVERHEAD + len(increment.table) + len(increment.row) + len(increment.column)


def append_bytes(append):
    """Bound of a whole ``append(TAppend)`` request."""
    return (REQUEST_OVERHEAD + ROW_OVERHEAD + len(append.table) + len(append.row)
            + sum(CELL_OVERHEAD + len(c) for c in append.columns)
            + sum(len(v) for v in append.values))


def check_and_put_bytes(table_name, row, column, expected, mutation):
    """Bound of a whole ``checkAndPut`` request (its check cell and one ``Mutation``)."""
    return (REQUEST_OVERHEAD + len(table_name) + len(row) + len(column) + len(expected or b"")
            + CELL_OVERHEAD + len(mutation.column) + len(mutation.value or b""))


def request_bytes(table_name, item_sizes):
    """Bound of a batched request (``mutateRows``, ``incrementRows``) carrying these items."""
    return REQUEST_OVERHEAD + len(table_name) + sum(item_sizes)


#: Thrift list elements per request: ``serve`` refuses a request declaring more than 262,144
#: (gateway/wire.py, a bound on decoding memory), so batches are split well below that.
MAX_REQUEST_ELEMENTS = 100_000


def split_by_size(items, sizes, budget, elements=None):
    """Consecutive groups of ``items`` whose ``sizes`` add up to at most ``budget`` each, and
    whose ``elements`` (Thrift list elements per item, default 1) to at most
    :data:`MAX_REQUEST_ELEMENTS`.

    An item bigger than ``budget`` on its own goes alone (the caller refuses it beforehand).
    """
    elements = elements if elements is not None else [1] * len(items)
    group, total, count = [], 0, 0
    for item, size, n in zip(items, sizes, elements):
        if group and (total + size > budget or count + n > MAX_REQUEST_ELEMENTS):
            yield group
            group, total, count = [], 0, 0
        group.append(item)
        total += size
        count += n
    if group:
        yield group
