"""Thrift1 values <-> the backend contract's: HBase's errors as typed errors, results as cell
dicts, key ranges as ``TScan``, and increments spread over calls (used by :mod:`.thrift1`)."""

import happybase  # noqa: F401 - registers the Hbase_thrift module
import Hbase_thrift as thrift  # noqa: E402
from thriftpy2.thrift import TApplicationException

from ...errors import BackendError, FamilyNotFound, InvalidArgument, NotACounter, TableDisabled, TableExists, TableNotFound


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _reason(exc):
    """A transport error in a few words: thriftpy2's message (``Could not connect to …``), else
    the exception's class and text, on one line."""
    message = getattr(exc, "message", None)
    text = _text(message) if message else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def translate_error(exc, table=None):
    """Map a Thrift-level error to a :mod:`socorro_store.errors` exception."""
    if isinstance(exc, thrift.IOError):
        message = _text(exc.message)
        # HBase sends the Java stack trace; the exception class name tells what failed.
        if "NoSuchColumnFamilyException" in message or "Column family" in message:
            return FamilyNotFound(message.splitlines()[0])
        if "TableNotFoundException" in message or "table does not exist" in message:
            return TableNotFound(f"table {table!r} does not exist")
        if "is not a long" in message:
            return NotACounter(message.splitlines()[0])
        if "TableNotEnabledException" in message or "is disabled" in message:
            return TableDisabled(message.splitlines()[0])
        return BackendError(message.splitlines()[0] if message else "IOError")
    if isinstance(exc, thrift.IllegalArgument):
        return InvalidArgument(_text(exc.message).splitlines()[0])
    if isinstance(exc, thrift.AlreadyExists):
        return TableExists(f"table {table!r} already exists")
    if isinstance(exc, TApplicationException):
        return BackendError(f"server error: {_text(exc.message)}")
    return BackendError(f"{type(exc).__name__}: {exc}")


def _spread_by_row(batch, weights, calls):
    """Split ``batch`` (TIncrements, with their ``weights``) into ``calls`` shares of about equal
    size, each row's increments in one share (they would only wait for each other's row lock
    in two); returns ``[(increments, weights)]``, empty shares left out."""
    by_row = {}
    for inc, weight in zip(batch, weights):
        by_row.setdefault((inc.table, inc.row), []).append((inc, weight))
    shares = [[] for _ in range(calls)]
    for cells in sorted(by_row.values(), key=len, reverse=True):  # largest first: even shares
        min(shares, key=len).extend(cells)
    return [([inc for inc, _w in share], [w for _inc, w in share]) for share in shares if share]


def _row_dict(result, include_timestamp):
    columns = result.columns or {}
    if result.sortedColumns:
        columns = {col.columnName: col.cell for col in result.sortedColumns}
    if include_timestamp:
        return {name: (cell.value, cell.timestamp) for name, cell in columns.items()}
    return {name: cell.value for name, cell in columns.items()}


def _thrift_scan(key_range, reverse, resume_after, columns, timestamp, page_size):
    """A TScan covering ``key_range`` (resuming at ``resume_after``, inclusive, if set).

    Bounds Thrift cannot express exactly are widened here and trimmed by the caller with
    ``KeyRange.contains``.
    """
    start, stop = key_range.scan_rows(reverse, resume_after)
    return thrift.TScan(startRow=start or b"", stopRow=stop or None, columns=columns,
                        timestamp=timestamp, caching=page_size, sortColumns=False, reversed=reverse)
