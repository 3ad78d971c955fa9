"""The backend contract: the few wide-column operations the domain needs.

Every backend (embedded, hbase, bigtable) implements :class:`Backend`.  The semantics are HBase's
(see ``reference/hbase-thrift1-semantics.md`` §8); in short:

* Rows, columns and values are ``bytes``.  A column is ``b"family:qualifier"``; it is split at the
  first ``:``.  ``b"cf:"`` is the column with the empty qualifier; a bare ``b"cf"`` (where a
  column list is accepted) means the whole family.
* Rows sort by unsigned byte order.  A row exists only through its visible cells.
* Timestamps are integer milliseconds since the epoch.  ``timestamp=None`` on a write means "now"
  (server time); on a read it means "latest".  A read ``timestamp=T`` selects cells with
  ``ts < T``; a delete ``timestamp=T`` removes cells with ``ts <= T`` and masks later puts with
  ``ts <= T`` (delete markers) until the table is compacted.
* Reads return only the newest visible version of each column; ``get_cells`` returns several.
  A family keeps at most VERSIONS versions, and cells older than its TTL are invisible.
* Counters are 8-byte big-endian signed integers; incrementing any other cell raises
  :class:`~socorro_store.errors.NotACounter`.
* Errors: :class:`TableNotFound`, :class:`FamilyNotFound`, :class:`InvalidArgument` (empty or
  over-long row key, negative timestamp, a put to a bare family, a cell over the size limit),
  :class:`TableExists`, :class:`BackendUnavailable`.  A call that raises for bad input writes
  nothing.

Puts and deletes are idempotent and a backend may retry them; increments are not, and a backend
never retries one after an ambiguous failure.

Every backend counts its calls by kind in :attr:`Backend.calls` (a ``collections.Counter``), one
count per round trip (RPC, or engine call for the embedded backend), so benchmarks can report
RPCs per crash.
"""

import abc
import collections
import threading
from dataclasses import dataclass, field

from ..checks import is_int
from ..errors import InvalidArgument

MAX_ROW_KEY = 32767
MAX_CELL_BYTES = 10 * 1024 * 1024
MAX_TIMESTAMP = 2**63 - 1


@dataclass
class RowMutation:
    """Puts and deletes for one row, applied puts first, then deletes (as HBase's mutateRows).

    ``puts`` maps ``b"fam:qual"`` to a value.  ``deletes`` lists columns (``b"fam:qual"``: every
    version) or families (``b"fam"``: every column of the family); an empty list with
    ``delete_row=True`` deletes every family of the row.
    """

    row: bytes
    puts: dict = field(default_factory=dict)
    deletes: list = field(default_factory=list)
    delete_row: bool = False


@dataclass(frozen=True)
class Increment:
    """One counter increment: ``amount`` added to ``table``/``row``/``column``."""

    table: str
    row: bytes
    column: bytes
    amount: int = 1


def split_column(column):
    """Split ``b"fam:qual"`` at the first colon into ``(family, qualifier)``.

    ``b"fam"`` gives ``(b"fam", None)``; ``b"fam:"`` gives ``(b"fam", b"")``.
    """
    family, sep, qualifier = column.partition(b":")
    return family, (qualifier if sep else None)


class Backend(abc.ABC):
    """A wide-column store with HBase semantics.  Thread-safe; a context manager."""

    #: Table-spec attributes this backend has no notion of (``tables verify`` says "not applicable").
    not_applicable_attributes = ()

    #: True when :meth:`check_and_put` writes every cell of ``puts`` atomically with its check
    #: (the embedded engine, Bigtable's CheckAndMutateRow); False where only the first cell is
    #: (HBase's Thrift1 checkAndPut), so callers may fold two checks into one only when True.
    atomic_check_and_put = False

    #: True where every call is a network round trip (a Thrift server, Bigtable), False for an
    #: in-process engine: the crash store then defers what need not be waited for (live counters).
    remote = True

    #: The largest request, in encoded bytes, the server accepts (framed Thrift's frame limit,
    #: Bigtable's request limit); None when the backend knows of none.  Batches are split to fit.
    max_request_bytes = None

    def __init__(self):
        self.calls = collections.Counter()
        self._calls_lock = threading.Lock()

    def count_call(self, kind, n=1):
        with self._calls_lock:
            self.calls[kind] += n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Release connections and files.  Idempotent."""

    # -- table admin -------------------------------------------------------------------------
    @abc.abstractmethod
    def create_table(self, spec):
        """Create a table from a :class:`~socorro_store.schema.specs.TableSpec`.

        Raises :class:`TableExists` if the name is taken (whatever its families).
        """

    @abc.abstractmethod
    def drop_table(self, name):
        """Delete a table and all its data.  Raises :class:`TableNotFound`."""

    @abc.abstractmethod
    def list_tables(self):
        """Names of the existing tables, sorted."""

    @abc.abstractmethod
    def describe_table(self, name):
        """``{family name: FamilySpec}`` of a live table.  Raises :class:`TableNotFound`."""

    def table_exists(self, name):
        return name in self.list_tables()

    # -- data --------------------------------------------------------------------------------
    @abc.abstractmethod
    def mutate_rows(self, table, mutations, timestamp=None):
        """Apply a list of :class:`RowMutation` to ``table`` in one call.

        Each row's puts are applied before its deletes.  All cells written without a timestamp get
        the same server time.  Validation happens before anything is written.  A batch over the
        server's request limit is sent as several calls (rows are never split); a row that
        cannot fit raises :class:`~socorro_store.errors.RequestTooLarge` before anything is sent.
        """

    def mutate_tables(self, mutations_by_table):
        """:meth:`mutate_rows` for each ``{table: [RowMutation]}`` item; returns when all are done.

        The tables' writes are independent: backends overlap their round trips (this default
        runs them one after another).  If one fails its error is raised, and the others may
        have been applied (puts and deletes are idempotent, so a retry is safe); nothing the
        caller writes after this call has been sent.
        """
        for table, mutations in mutations_by_table.items():
            if mutations:
                self.mutate_rows(table, mutations)

    def overlap(self, calls):
        """Run independent zero-argument ``calls`` (each may make several backend calls); return
        their results in order.

        The calls share no order: a backend that can overlaps their round trips (this default
        runs them one after another, which an in-process engine loses nothing by).  Every call
        runs to its end whatever the others do, so a failure of one never keeps another from
        being sent; then the first failure, in the order given, is raised.
        """
        return overlap_on(None, calls)

    def check_mutation_size(self, table, mutation):
        """Raise :class:`~socorro_store.errors.RequestTooLarge` if the one-row ``mutation``
        cannot be sent in a single request; a caller that writes other rows first (index
        pointers before a crash row) asks this up front.  A no-op without a request limit."""

    @abc.abstractmethod
    def get_rows(self, table, rows, columns=None, timestamp=None, include_timestamp=False):
        """Read several rows in one call.

        Returns ``{row: {column: value}}`` (or ``{column: (value, ts)}`` with
        ``include_timestamp``) holding only rows that have a visible selected cell.  ``columns``
        is a list of ``b"fam"`` / ``b"fam:qual"``; None means every column.
        """

    def get_rows_columns(self, table, columns_by_row):
        """Read several rows, each with its own columns, in one call: ``columns_by_row``
        ``{row: [b"fam:qual", ...]}`` (each list non-empty).  Returns ``{row: {column: value}}``
        holding only rows with a visible cell among their own columns, and only those columns.

        This default is one :meth:`get_rows` of every column asked, from every row (a backend
        whose multi-row read names one column list, as Thrift1's and Bigtable's do): it may read
        many cells to drop them.  A backend whose read names the columns row by row (Thrift2's
        ``TGet``, the engine) reads only the cells asked."""
        wanted = check_columns_by_row(columns_by_row)
        if not wanted:
            return {}
        union = sorted({column for columns in wanted.values() for column in columns})
        found = self.get_rows(table, list(wanted), columns=union)
        out = {}
        for row, cells in found.items():
            mine = {column: cells[column] for column in wanted[row] if column in cells}
            if mine:
                out[row] = mine
        return out

    def get_row(self, table, row, columns=None, timestamp=None, include_timestamp=False):
        """One row as ``{column: value}``; ``{}`` when it has no visible selected cell."""
        return self.get_rows(table, [row], columns, timestamp, include_timestamp).get(row, {})

    @abc.abstractmethod
    def get_cells(self, table, row, column, versions=None, timestamp=None):
        """Versions of one column, newest first, as ``[(value, ts)]``.

        At most ``min(versions, family VERSIONS)``; with ``timestamp``, only ``ts < timestamp``.
        """

    @abc.abstractmethod
    def scan(self, table, start=None, stop=None, prefix=None, columns=None, limit=None,
             reverse=False, timestamp=None, include_timestamp=False, page_size=1000):
        """Iterate ``(row, {column: value})`` in row order (descending with ``reverse``).

        ``start`` is inclusive and ``stop`` exclusive (for a reverse scan ``start`` is the
        highest row).  ``prefix`` is exclusive with ``start``/``stop``.  Rows are fetched
        ``page_size`` at a time, never one per round trip, so memory stays bounded.
        """

    @abc.abstractmethod
    def increment(self, table, row, column, amount=1):
        """Atomically add ``amount`` to a counter cell and return the new value.  Never retried."""

    @abc.abstractmethod
    def increment_many(self, increments):
        """Apply a list of :class:`Increment` (any tables) in as few calls as possible.

        Returns nothing.  Never retried after an ambiguous failure.
        """

    @abc.abstractmethod
    def check_and_put(self, table, row, column, expected, puts):
        """Atomically: if ``column``'s latest value equals ``expected``, write ``puts`` to ``row``.

        ``expected=None`` (or ``b""``) matches a missing cell or an empty value.  Returns True when
        the puts were applied.  The check and the first cell of ``puts`` are atomic on every
        backend; HBase's Thrift1 checkAndPut takes one cell, so there any further cells follow
        in a separate (idempotent) mutate.  Put the cell that carries the claim first.
        """

    def check_and_put_many(self, table, items):
        """Independent check-and-puts ``[(row, column, expected, puts)]``; one bool per item.

        Each item is atomic on its own (as :meth:`check_and_put`); items are not atomic together.
        Backends batch them (the embedded engine in one transaction) or overlap their round
        trips; this default runs them one after another.
        """
        items = check_check_and_put_items(items)
        return [self.check_and_put(table, *item) for item in items]

    @abc.abstractmethod
    def append(self, table, row, values):
        """Atomically append ``values`` (``{b"fam:qual": bytes}``) to the row's latest cells and
        return ``{column: resulting value}``.

        A missing cell starts empty.  A row's appends are applied under its row lock (HBase's
        Append), so concurrent appends to one cell each see a different result, and exactly one
        of them sees only its own bytes: an exact "was I first?" for every cell of the row in one
        call.  Not idempotent: never retried after an ambiguous failure.
        """

    def append_many(self, table, items):
        """:meth:`append` for each ``(row, values)``; one ``{column: resulting value}`` per item.

        Each item is atomic on its own; items are not atomic together.  Backends overlap their
        round trips; this default runs them one after another.
        """
        items = check_append_items(items)
        return [self.append(table, row, values) for row, values in items]

    def compact(self, table):
        """Purge deleted, expired and over-VERSIONS cells (HBase major compaction).  Optional."""


def overlap_on(executor, calls):
    """:meth:`Backend.overlap` on ``executor`` (a ``concurrent.futures`` executor; None runs
    the calls one after another): every call but the first is submitted, the first runs in
    the caller's thread, all are waited for, then the first failure in order is raised."""
    calls = list(calls)
    futures = [executor.submit(call) for call in calls[1:]] if executor is not None and len(calls) > 1 else None
    results, failure = [], None
    for index, call in enumerate(calls):
        try:
            results.append(futures[index - 1].result() if futures is not None and index else call())
        except BaseException as exc:  # noqa: BLE001 - raised once the others have run
            results.append(None)
            failure = failure or exc
    if failure is not None:
        raise failure
    return results


# -- shared argument validation -------------------------------------------------------------

def check_table_spec_names(spec):
    """Refuse the names HBase refuses that would also be unusable here: an empty table name, and
    a family name that is empty or holds ``:`` (a column splits at its first ``:``, so such a
    family could never be addressed).  Other names, however hostile (quotes, NUL, ``../``), are
    stored and read back exactly: they never reach SQL text or a file path."""
    if not isinstance(spec.name, str) or not spec.name:
        raise InvalidArgument(f"table name must be a non-empty str: {spec.name!r}")
    for family in spec.families:
        if not isinstance(family.name, str) or not family.name or ":" in family.name:
            raise InvalidArgument(f"Illegal column family name {family.name!r}: empty or holds ':'")


def check_row_key(row):
    if not isinstance(row, bytes):
        raise InvalidArgument(f"row key must be bytes, not {type(row).__name__}")
    if not row:
        raise InvalidArgument("Row length is 0")
    if len(row) > MAX_ROW_KEY:
        raise InvalidArgument(f"Row length {len(row)} is > {MAX_ROW_KEY}")


def check_timestamp(timestamp):
    if timestamp is None:
        return
    if not is_int(timestamp):
        raise InvalidArgument(f"timestamp must be an int (ms), not {type(timestamp).__name__}")
    if timestamp < 0:
        raise InvalidArgument("Timestamp cannot be negative")
    if timestamp > MAX_TIMESTAMP:
        raise InvalidArgument("Timestamp out of range")


def check_column(column, allow_family=True):
    if not isinstance(column, bytes):
        raise InvalidArgument(f"column must be bytes, not {type(column).__name__}")
    family, qualifier = split_column(column)
    if not family:
        raise InvalidArgument(f"column {column!r} has an empty family")
    if qualifier is None and not allow_family:
        raise InvalidArgument("Invalid famAndQf provided.")
    return family, qualifier


def check_columns(columns):
    """Validate a read's column list (None = every column); return it as a list or None."""
    if columns is None:
        return None
    if not isinstance(columns, (list, tuple)):
        raise InvalidArgument("columns must be a list of bytes")
    for column in columns:
        check_column(column)
    return list(columns)


def check_columns_by_row(columns_by_row):
    """Validate :meth:`Backend.get_rows_columns`' argument; return it as ``{row: [columns]}``."""
    if not isinstance(columns_by_row, dict):
        raise InvalidArgument("columns_by_row must be a dict of row -> list of columns")
    out, checked = {}, {}  # rows mostly share a column list: each list is checked once
    for row, columns in columns_by_row.items():
        check_row_key(row)
        if not isinstance(columns, (list, tuple)):
            raise InvalidArgument("columns must be a list of bytes")
        if not all(isinstance(column, bytes) for column in columns):
            check_columns(columns)  # raises, naming the type
        key = tuple(columns)
        if key not in checked:
            if not key:
                raise InvalidArgument(f"no columns asked of row {row!r}")
            check_columns(key)
            for column in key:
                if b":" not in column:
                    raise InvalidArgument(f"a column of get_rows_columns names its qualifier: {column!r}")
            checked[key] = list(key)
        out[row] = checked[key]
    return out


def check_cells_args(row, column, versions, timestamp):
    """Validate the arguments of :meth:`Backend.get_cells`."""
    check_row_key(row)
    check_column(column)
    check_timestamp(timestamp)
    if versions is not None and (not is_int(versions) or versions < 1):
        raise InvalidArgument("versions must be an int >= 1")


def check_mutations(mutations):
    """Validate a list of :class:`RowMutation` up front; raise :class:`InvalidArgument`."""
    if not isinstance(mutations, (list, tuple)):
        raise InvalidArgument("mutations must be a list of RowMutation")
    for mutation in mutations:
        if not isinstance(mutation, RowMutation):
            raise InvalidArgument(f"expected RowMutation, got {type(mutation).__name__}")
        check_row_key(mutation.row)
        if not isinstance(mutation.puts, dict):
            raise InvalidArgument("RowMutation.puts must be a dict")
        for column, value in mutation.puts.items():
            check_column(column, allow_family=False)
            if not isinstance(value, bytes):
                raise InvalidArgument(f"value of {column!r} must be bytes, not {type(value).__name__}")
            if len(value) + len(mutation.row) + len(column) > MAX_CELL_BYTES:
                raise InvalidArgument("KeyValue size too large")
        for column in mutation.deletes:
            check_column(column)


def check_check_and_put(row, column, expected, puts):
    """Validate :meth:`Backend.check_and_put` arguments; return the checked ``(family, qualifier)``."""
    check_row_key(row)
    family, qualifier = check_column(column, allow_family=False)
    if expected is not None and not isinstance(expected, bytes):
        raise InvalidArgument("expected value must be bytes or None")
    check_mutations([RowMutation(row, puts)])
    return family, qualifier


def check_check_and_put_items(items):
    """Validate the items of :meth:`Backend.check_and_put_many`; return them as a list."""
    return _check_items(items, "check_and_put_many", "(row, column, expected, puts)", 4, check_check_and_put)


def _check_items(items, call, shape, arity, check):
    """Validate a batch call's items: an iterable of ``arity``-tuples, each passing ``check``."""
    if isinstance(items, (str, bytes, dict)) or not hasattr(items, "__iter__"):
        raise InvalidArgument(f"{call} needs a list of {shape}")
    items = list(items)
    for item in items:
        if not isinstance(item, tuple) or len(item) != arity:
            raise InvalidArgument(f"each {call} item is a {shape} tuple")
        check(*item)
    return items


def check_append(row, values):
    """Validate :meth:`Backend.append` arguments: a row, and at least one ``fam:qual`` -> bytes."""
    check_row_key(row)
    if not isinstance(values, dict) or not values:
        raise InvalidArgument("append needs a non-empty dict of {b'fam:qual': bytes}")
    for column, value in values.items():
        check_column(column, allow_family=False)
        if not isinstance(value, bytes):
            raise InvalidArgument(f"append value for {column!r} must be bytes, not {type(value).__name__}")


def check_append_items(items):
    """Validate the items of :meth:`Backend.append_many`; return them as a list."""
    return _check_items(items, "append_many", "(row, {column: bytes})", 2, check_append)


def check_increments(increments):
    """Validate an iterable of :class:`Increment`; return it as a list."""
    increments = list(increments)
    for inc in increments:
        check_increment(inc)
    return increments


def check_increment(inc):
    if not isinstance(inc, Increment):
        raise InvalidArgument(f"expected Increment, got {type(inc).__name__}")
    check_row_key(inc.row)
    check_column(inc.column)
    if not is_int(inc.amount) or not -(2**63) <= inc.amount < 2**63:
        raise InvalidArgument("increment amount must be a 64-bit int")


def check_scan_numbers(limit, page_size):
    for name, value in (("limit", limit), ("page_size", page_size)):
        if value is not None and (not is_int(value) or value < 1):
            raise InvalidArgument(f"{name} must be a positive int")


def prefix_stop(prefix):
    """The first key after every key starting with ``prefix`` (None if there is none)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


def scan_range(start, stop, prefix, reverse):
    """Validate scan bounds; return ``KeyRange`` (low/high bounds with their inclusiveness).

    Forward scans read ``[start, stop)``; reverse scans read ``(stop, start]`` from the top down,
    as HBase's reversed scans do.  A prefix selects exactly the keys that start with it.
    """
    for name, key in (("start", start), ("stop", stop), ("prefix", prefix)):
        if key is not None and not isinstance(key, bytes):
            raise InvalidArgument(f"{name} must be bytes, not {type(key).__name__}")
    if prefix is not None:
        if start is not None or stop is not None:
            raise InvalidArgument("prefix cannot be combined with start or stop")
        return KeyRange(prefix or None, True, prefix_stop(prefix) if prefix else None, False)
    if reverse:
        return KeyRange(stop or None, False, start or None, True)
    return KeyRange(start or None, True, stop or None, False)


@dataclass(frozen=True)
class KeyRange:
    """Row bounds of a scan; None means unbounded on that side."""

    low: bytes = None
    low_inclusive: bool = True
    high: bytes = None
    high_inclusive: bool = False

    def scan_rows(self, reverse=False, resume_after=None):
        """``(start row, stop row)`` of an HBase scan covering this range (from ``resume_after``,
        inclusive, if set), None where unbounded.  A forward scan's start row is inclusive and
        its stop row exclusive; a reversed scan's stop row is exclusive.  Bounds these cannot
        express exactly are widened: trim the rows with :meth:`contains`."""
        low, high = self.low, self.high
        if reverse:
            start, stop = resume_after or high, None
            if low is not None:  # stop just below an inclusive low bound
                stop = low if not self.low_inclusive else (low[:-1] if low[-1] == 0 else
                                                           low[:-1] + bytes([low[-1] - 1]))
        else:
            start = resume_after or (low if low is None or self.low_inclusive else low + b"\x00")
            stop = high if high is None or not self.high_inclusive else high + b"\x00"
        return start, stop

    def contains(self, row):
        if self.low is not None and (row < self.low or (row == self.low and not self.low_inclusive)):
            return False
        if self.high is not None and (row > self.high or (row == self.high and not self.high_inclusive)):
            return False
        return True
