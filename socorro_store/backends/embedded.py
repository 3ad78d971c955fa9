"""The embedded backend: the contract on the in-process engine (``embedded://DIR``)."""

import errno
import functools
import inspect
import sqlite3
import threading

from ..engine import Engine
from ..engine.direct_reads import VALUES, VALUES_TS
from ..errors import BackendError, BackendUnavailable, StoreNotFound
from . import base
from .base import Backend, split_column

# SQLite's primary result codes (the low byte of an extended code) that a retry can outlive:
# another connection holds a lock, or the file could not be opened or read just now.
_TRANSIENT_SQLITE = {5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 10: "SQLITE_IOERR", 14: "SQLITE_CANTOPEN",
                     15: "SQLITE_PROTOCOL"}
# Messages of those codes, for an error raised without a code (Python < 3.11).
_TRANSIENT_MESSAGES = ("database is locked", "database table is locked", "disk i/o error",
                       "unable to open database file", "locking protocol")
# OS errors no retry fixes: a full disk, a read-only file system, a permission refused.
_PERMANENT_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM}
# Serialises opening a not-yet-existing store's engine (rare: once per backend), and close().
_OPEN_LOCK = threading.Lock()


def _typed(exc):
    """The contract's error for a SQLite or OS error of the engine.

    ``BackendUnavailable`` says "retry later": only for what a retry can outlive (a lock held
    elsewhere, a file that could not be opened or read).  Everything else, corruption
    ("database disk image is malformed", "file is not a database") and a full disk among it,
    is a ``BackendError``: retrying would only repeat it.
    """
    text = str(exc)
    if isinstance(exc, OSError):
        transient = exc.errno not in _PERMANENT_ERRNOS
    else:
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None:
            transient = (code & 0xFF) in _TRANSIENT_SQLITE
        else:
            transient = text.lower().startswith(_TRANSIENT_MESSAGES)
    if transient:
        return BackendUnavailable(f"embedded store unavailable: {type(exc).__name__}: {text}")
    return BackendError(f"embedded store error: {type(exc).__name__}: {text}")


def _engine_errors(method):
    """Turn the engine's sqlite3/OS errors into the contract's typed errors (generators too)."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generator(*args, **kwargs):
            try:
                yield from method(*args, **kwargs)
            except (sqlite3.Error, OSError) as exc:
                raise _typed(exc) from exc
        return generator

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            raise _typed(exc) from exc
    return wrapper


def _translate_engine_errors(cls):
    for name, member in list(vars(cls).items()):
        if inspect.isfunction(member) and (not name.startswith("__") or name == "__init__"):
            setattr(cls, name, _engine_errors(member))
    return cls


def engine_columns(columns):
    """Contract columns (``b"f"`` / ``b"f:q"``) to engine selectors ``[(family, qual|None)]``."""
    if base.check_columns(columns) is None:
        return None
    return [split_column(c) for c in columns]


def row_shape(include_timestamp):
    """The engine's shape of a row for the contract: ``{column: value}`` or ``(value, ts)``."""
    return VALUES_TS if include_timestamp else VALUES


@_translate_engine_errors
class EmbeddedBackend(Backend):
    """Runs the engine in this process.  One call counted per engine call."""

    remote = False

    #: the whole multi-cell check-and-put is one engine transaction, not only its first cell
    atomic_check_and_put = True
    def __init__(self, directory, sync="normal", create=True):
        """``create=False``: a directory holding no store raises StoreNotFound here.

        ``create=True``: no store is made on open either (a mistyped path must not become an
        empty store): the first :meth:`create_table` (``create_tables()``, ``tables create``)
        makes it.  Until then :meth:`list_tables` is empty and every other call raises
        StoreNotFound, whose message says to run ``socorro-store tables create``.
        """
        super().__init__()
        self.directory, self.sync = directory, sync
        self._engine, self._closed = None, False
        try:
            self._engine = Engine(directory, sync, create=False)
        except StoreNotFound:
            if not create:
                raise

    @property
    def engine(self):
        """The engine of an existing store (StoreNotFound while there is none)."""
        return self._engine if self._engine is not None else self._open_engine(create=False)

    def _open_engine(self, create):
        with _OPEN_LOCK:
            if self._closed:
                raise BackendError("embedded store is closed")
            if self._engine is None:
                self._engine = Engine(self.directory, self.sync, create)
            return self._engine

    def close(self):
        with _OPEN_LOCK:
            self._closed = True
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    # -- admin -------------------------------------------------------------------------------
    def create_table(self, spec):
        base.check_table_spec_names(spec)
        self.count_call("create_table")
        self._open_engine(create=True).create_table(spec.name, list(spec.families))

    def drop_table(self, name):
        self.count_call("drop_table")
        self.engine.drop_table(name)

    def list_tables(self):
        self.count_call("list_tables")
        try:
            return self.engine.table_names()
        except StoreNotFound:
            return []  # no store yet: no tables (create_tables() lists them first)

    def describe_table(self, name):
        self.count_call("describe_table")
        return {spec.name: spec for spec in self.engine.families(name).values()}

    # -- data --------------------------------------------------------------------------------
    def mutate_rows(self, table, mutations, timestamp=None):
        base.check_mutations(mutations)
        base.check_timestamp(timestamp)
        if not mutations:
            return
        batch = []
        for m in mutations:
            puts = [(*split_column(c), v) for c, v in m.puts.items()]
            deletes = [split_column(c) for c in m.deletes]
            batch.append((m.row, puts, deletes, m.delete_row))
        self.count_call("mutate_rows")
        self.engine.mutate(table, batch, timestamp)

    def get_rows(self, table, rows, columns=None, timestamp=None, include_timestamp=False):
        for row in rows:
            base.check_row_key(row)
        base.check_timestamp(timestamp)
        selectors = engine_columns(columns)
        if not rows:
            return {}
        self.count_call("get_rows")
        found = self.engine.get(table, list(rows), selectors, timestamp, shape=row_shape(include_timestamp))
        return dict(found)

    def get_rows_columns(self, table, columns_by_row):
        wanted = base.check_columns_by_row(columns_by_row)
        if not wanted:
            return {}
        self.count_call("get_rows")
        split = {}  # rows mostly share a column list: each is split once
        for columns in wanted.values():
            if id(columns) not in split:
                split[id(columns)] = [split_column(c) for c in columns]
        found = self.engine.get_each(table, {row: split[id(columns)] for row, columns in wanted.items()},
                                     shape=row_shape(False))
        return dict(found)

    def get_cells(self, table, row, column, versions=None, timestamp=None):
        base.check_cells_args(row, column, versions, timestamp)
        self.count_call("get_cells")
        found = self.engine.get(table, [row], [split_column(column)], timestamp,
                                versions=versions or 2**31 - 1)
        return [(value, ts) for _fam, _qual, ts, value in (found[0][1] if found else [])]

    def scan(self, table, start=None, stop=None, prefix=None, columns=None, limit=None,
             reverse=False, timestamp=None, include_timestamp=False, page_size=1000):
        key_range = base.scan_range(start, stop, prefix, reverse)
        base.check_timestamp(timestamp)
        selectors = engine_columns(columns)
        base.check_scan_numbers(limit, page_size)
        self.engine.check_columns(table, selectors)  # fail here, not at the first next()
        return self._scan(table, key_range, reverse, selectors, timestamp, include_timestamp,
                          limit, page_size)

    def _scan(self, table, key_range, reverse, selectors, timestamp, include_timestamp, limit, page_size):
        # Count one call per page, as a remote scanner makes one RPC per page.
        returned = 0
        rows = self.engine.scan(table, key_range.low, key_range.high, reverse, selectors, timestamp,
                                page_size=page_size, low_inclusive=key_range.low_inclusive,
                                high_inclusive=key_range.high_inclusive,
                                shape=row_shape(include_timestamp))
        self.count_call("scan")
        for row, cells in rows:
            if returned and returned % page_size == 0:
                self.count_call("scan")
            yield row, cells
            returned += 1
            if limit is not None and returned >= limit:
                return

    def increment(self, table, row, column, amount=1):
        inc = base.Increment(table, row, column, amount)
        base.check_increment(inc)
        family, qualifier = split_column(column)
        self.count_call("increment")
        return self.engine.increment(table, [(row, family, qualifier or b"", amount)])[0]

    def increment_many(self, increments):
        increments = base.check_increments(increments)
        by_table = {}
        for inc in increments:
            family, qualifier = split_column(inc.column)
            by_table.setdefault(inc.table, []).append((inc.row, family, qualifier or b"", inc.amount))
        if by_table:
            self.count_call("increment_many")  # one contract call, as one incrementRows RPC
        for table, batch in by_table.items():
            self.engine.increment(table, batch)

    def check_and_put(self, table, row, column, expected, puts):
        family, qualifier = base.check_check_and_put(row, column, expected, puts)
        cells = [(*split_column(c), v) for c, v in puts.items()]
        self.count_call("check_and_put")
        return self.engine.check_and_put(table, row, family, qualifier, expected, cells)

    def check_and_put_many(self, table, items):
        items = base.check_check_and_put_items(items)
        if not items:
            return []
        engine_items = []
        for row, column, expected, puts in items:
            family, qualifier = split_column(column)
            engine_items.append((row, family, qualifier, expected, [(*split_column(c), v) for c, v in puts.items()]))
        self.count_call("check_and_put_many")
        return self.engine.check_and_put_many(table, engine_items)

    def append(self, table, row, values):
        base.check_append(row, values)
        self.count_call("append")
        return self._append(table, row, values)

    def append_many(self, table, items):
        items = base.check_append_items(items)
        if items:
            self.count_call("append_many")
        return [self._append(table, row, values) for row, values in items]

    def _append(self, table, row, values):
        cells = self.engine.append(table, row, [(*split_column(c), v) for c, v in values.items()])
        return {family + b":" + qualifier: value for family, qualifier, _ts, value in cells}

    def compact(self, table):
        self.count_call("compact")
        self.engine.compact(table)
