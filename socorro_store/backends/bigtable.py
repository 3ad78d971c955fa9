"""The Cloud Bigtable backend: ``bigtable://PROJECT/INSTANCE[?app_profile=ID]``.

Needs the ``bigtable`` extra (google-cloud-bigtable with its synchronous data client).  With
``BIGTABLE_EMULATOR_HOST=HOST:PORT`` set before the backend is opened, it talks to Google's
emulator instead of the service (any project and instance work there, none needs creating).

The contract's semantics are HBase's; Bigtable differs in places and this adapter closes each gap
as far as Bigtable allows (``docs/bigtable.md`` lists every difference):

* Timestamps are milliseconds at the contract, microseconds on the wire (``ms * 1000``).  Cells
  written without a timestamp get one client-side "now" per call, so a call's cells share it.
* VERSIONS and TTL become GC rules, but garbage collection is lazy, so every read adds a
  cells-per-column limit and a per-family TTL cut-off, and reads with ``timestamp=T`` select
  ``[0, T)``.
* Deletes: no timestamp removes every version (DeleteFromColumn/Family/Row); ``timestamp=T``
  removes versions ``<= T`` (a column time-range delete; for a family or row, the columns are
  read first and range-deleted one by one).  Bigtable has no delete markers, so a later put with
  an older timestamp is visible at once (HBase hides it until a major compaction).
* Everything is validated before the first write: the emulator applies the valid part of a bad
  mutation, and a multi-row batch is never atomic on Bigtable.
* Increments use ReadModifyWriteRow, one call per row; check-and-put a conditional mutation whose
  predicate sees only the newest unexpired version (HBase compares only the latest).
* Requests are split to Bigtable's limits; a row over them raises RequestTooLarge up front.
* Scans are paged row ranges.  Reversed scans (the emulator answers UNIMPLEMENTED) are emulated:
  one key-only forward pass keeps every ``page_size``-th key, then the blocks between those keys
  are read from the last one back, so memory stays at about one page plus the block keys.

Transport failures become :class:`BackendUnavailable`.  Reads, puts and deletes (idempotent: every
cell carries an explicit timestamp) are retried by the client within ``operation_timeout``;
increments and check-and-put are never retried.
"""

import contextlib
import os
import struct
import threading
import warnings
from functools import partial

from google.api_core import exceptions as gexc
from google.api_core import retry as gretry
from google.auth import exceptions as auth_exc
from google.cloud import bigtable as bigtable_admin
from google.cloud.bigtable.data import (
    BigtableDataClient,
    DeleteAllFromFamily,
    DeleteAllFromRow,
    DeleteRangeFromColumn,
    ReadRowsQuery,
    RowMutationEntry,
    SetCell,
)
from google.cloud.bigtable.data.exceptions import MutationsExceptionGroup, RetryExceptionGroup
from google.cloud.bigtable.data.read_modify_write_rules import AppendValueRule, IncrementRule
from google.cloud.bigtable_admin_v2 import types as admin_types

from ..errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    FamilyNotFound,
    InvalidArgument,
    NotACounter,
    SocorroStoreError,
    TableExists,
    TableNotFound,
)
from ..schema.specs import SALTS
from . import base
from . import bigtable_support as bts
from .base import Backend, split_column
from .bigtable_scan import Scan, limited
from .bigtable_support import now_ms

_COUNTER = struct.Struct(">q")
EMULATOR_ENV = "BIGTABLE_EMULATOR_HOST"
#: a MutateRows request carries at most 100,000 mutations (MutateRowsRequest.entries)
MAX_MUTATIONS_PER_CALL = 100_000


def _wrap64(value):
    return (value + 2**63) % 2**64 - 2**63


class _DataClient(BigtableDataClient):
    """The data client, with the emulator channel's 4 MiB receive cap lifted.

    The service channel already has no cap; the emulator channel is built without options, so a
    cell over 4 MiB (the contract allows 10 MiB) could be written but not read back.
    """

    def _build_grpc_channel(self, *args, **kwargs):
        if self._emulator_host is None:
            return super()._build_grpc_channel(*args, **kwargs)
        try:
            import grpc
            from google.cloud.bigtable.data._sync_autogen._swappable_channel import SwappableChannel
        except ImportError:  # another client layout: keep its own channel
            return super()._build_grpc_channel(*args, **kwargs)
        options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
        return SwappableChannel(partial(grpc.insecure_channel, self._emulator_host, options=options))


class BigtableBackend(Backend):
    """The contract on Cloud Bigtable (or its emulator).  Thread-safe."""

    atomic_check_and_put = True  # one CheckAndMutateRow holds every cell, not only the first
    not_applicable_attributes = ("COMPRESSION", "BLOCKSIZE", "IN_MEMORY", "BLOCKCACHE")
    #: seconds: the whole budget of one call, retries included; one attempt
    operation_timeout = 20.0
    attempt_timeout = 5.0
    #: read the cells of a multi-cell increment batch first, so a non-counter cell fails the batch
    #: before anything is written (the emulator applies the rules before a bad one)
    check_counters_first = True

    @classmethod
    def from_url(cls, parsed):
        """Open ``bigtable://PROJECT/INSTANCE[?app_profile=ID]`` (a parsed :class:`StoreURL`)."""
        return cls(parsed.host, parsed.path, app_profile=parsed.options.get("app_profile"))

    def __init__(self, project, instance, app_profile=None):
        super().__init__()
        for name, value in (("project", project), ("instance", instance)):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"bigtable {name} must be a non-empty string")
        if app_profile is not None and (not isinstance(app_profile, str) or not app_profile):
            raise ConfigError("bigtable app_profile must be a non-empty string")
        self.project, self.instance_id, self.app_profile = project, instance, app_profile
        self.emulator_host = os.environ.get(EMULATOR_ENV)
        self._instance_path = f"projects/{project}/instances/{instance}"
        self._tables = {}      # table name -> data-API Table
        self._families = {}    # table name -> {family: FamilySpec}, from the live GC rules
        self._lock = threading.RLock()
        self._clients = None   # (table admin client, data client); made on first use
        self._connect()        # now, so that missing credentials fail at open

    def _connect(self):
        """The (table admin, data) clients, created on first use and again after :meth:`close`."""
        clients = self._clients
        if clients is not None:
            return clients
        with self._lock:
            if self._clients is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # "Connecting to Bigtable emulator"
                    try:
                        # the classic client only builds an emulator-aware admin (gapic) client
                        table_admin = bigtable_admin.Client(project=self.project, admin=True).table_admin_client
                        data = _DataClient(project=self.project)
                    except auth_exc.DefaultCredentialsError as exc:
                        raise ConfigError(f"no Google credentials for bigtable://{self.project}/{self.instance_id} "
                                          f"(set {EMULATOR_ENV} to use the emulator): {exc}") from None
                self._clients = (table_admin, data)
            return self._clients

    def _admin_client(self):
        return self._connect()[0]

    def close(self):
        """Close the clients.  Idempotent; a later call opens new ones."""
        with self._lock:
            clients, self._clients = self._clients, None
            tables, self._tables = list(self._tables.values()), {}
        for table in tables:
            table.close()
        if clients is not None:
            table_admin, data = clients
            data.close()
            table_admin.transport.close()

    # -- plumbing ----------------------------------------------------------------------------
    def _table(self, name):
        table = self._tables.get(name)
        if table is None:
            with self._lock:
                table = self._tables.get(name)
                if table is None:
                    t = self.operation_timeout, self.attempt_timeout
                    table = self._connect()[1].get_table(
                        self.instance_id, name, app_profile_id=self.app_profile,
                        default_read_rows_operation_timeout=t[0], default_read_rows_attempt_timeout=t[1],
                        default_mutate_rows_operation_timeout=t[0], default_mutate_rows_attempt_timeout=t[1],
                        default_operation_timeout=t[0], default_attempt_timeout=t[1])
                    self._tables[name] = table
        return table

    @contextlib.contextmanager
    def _rpc(self, kind, table=None):
        """Count one call of ``kind`` and turn client errors into :mod:`socorro_store.errors`."""
        self.count_call(kind)
        try:
            yield
        except SocorroStoreError:
            raise
        except (gexc.GoogleAPIError, MutationsExceptionGroup, RetryExceptionGroup) as exc:
            raise self._translate(exc, table) from exc

    def _translate(self, exc, table):
        while isinstance(exc, (MutationsExceptionGroup, RetryExceptionGroup)) and exc.exceptions:
            inner = exc.exceptions[-1]
            exc = inner.__cause__ if inner.__cause__ is not None else inner
        if isinstance(exc, gexc.DeadlineExceeded) and isinstance(exc.__cause__, RetryExceptionGroup):
            exc = exc.__cause__.exceptions[-1] if exc.__cause__.exceptions else exc
        message = getattr(exc, "message", None) or str(exc)
        lowered = message.lower()
        if isinstance(exc, gexc.NotFound) and "table" in lowered:
            self._forget(table)
            return TableNotFound(f"table {table!r} does not exist")
        if isinstance(exc, gexc.AlreadyExists):
            return TableExists(f"table {table!r} already exists")
        if isinstance(exc, (gexc.ServiceUnavailable, gexc.DeadlineExceeded, gexc.RetryError)):
            return BackendUnavailable(f"Bigtable unreachable: {message}")
        if "family" in lowered and ("unknown" in lowered or "not found" in lowered or "not exist" in lowered):
            self._forget(table)
            return FamilyNotFound(f"{message} (table {table})")
        if "64-bit" in lowered or "64 bit" in lowered:
            return NotACounter(f"Field is not a long: {message}")
        if isinstance(exc, gexc.InvalidArgument):
            return InvalidArgument(message)
        return BackendError(f"Bigtable: {type(exc).__name__}: {message}")

    def _forget(self, table):
        """Drop cached state of ``table`` (it was dropped or changed behind our back)."""
        if table is not None:
            self._families.pop(table, None)

    def _families_of(self, table):
        """``{family: FamilySpec}`` of a live table (cached).  Raises TableNotFound."""
        families = self._families.get(table)
        if families is None:
            families = self._load_families(table, "get_table")
        return families

    def _load_families(self, table, kind):
        if not isinstance(table, str) or not table:
            raise InvalidArgument("table name must be a non-empty string")
        with self._rpc(kind, table):
            live = self._admin_client().get_table(request={"name": self._table_path(table)}, **self._admin_retry(True))
        families = {name: bts.family_from_gc_rule(name, cf.gc_rule)
                    for name, cf in sorted(live.column_families.items())}
        self._families[table] = families
        return families

    @staticmethod
    def _family(families, table, family):
        """The family's name (str) if ``table`` has it; else FamilyNotFound."""
        try:
            name = family.decode("utf-8")
        except UnicodeDecodeError:
            name = None
        if name not in families:
            raise FamilyNotFound(f"Column family {family.decode('utf-8', 'replace')} does not exist "
                                 f"in table {table}")
        return name

    @staticmethod
    def _check_limits(row, qualifiers=()):
        """Cloud Bigtable's own key limits (tighter than HBase's; see docs/bigtable.md)."""
        if len(row) > bts.MAX_ROW_KEY:
            raise InvalidArgument(f"Row length {len(row)} is > {bts.MAX_ROW_KEY} (Bigtable's row key limit)")
        for qualifier in qualifiers:
            if qualifier is not None and len(qualifier) > bts.MAX_QUALIFIER:
                raise InvalidArgument(f"qualifier of {len(qualifier)} bytes is over Bigtable's "
                                      f"{bts.MAX_QUALIFIER}-byte limit")

    def _selection(self, families, table, columns):
        """Contract columns to ``{family: None | set of qualifiers}`` (None: every column)."""
        if base.check_columns(columns) is None:
            return None
        select = {}
        for column in columns:
            family, qualifier = split_column(column)
            name = self._family(families, table, family)
            if qualifier is None:
                select[name] = None
            elif name not in select or select[name] is not None:
                select.setdefault(name, set()).add(qualifier)
        return select or None

    @staticmethod
    def _row_dict(row, include_timestamp):
        """``{b"fam:qual": value | (value, ts ms)}`` in HBase's column order (an interleave
        filter may return families out of order)."""
        cells = sorted(row.cells, key=lambda c: (c.family, c.qualifier, -c.timestamp_micros))
        if include_timestamp:
            return {c.family.encode() + b":" + c.qualifier: (c.value, bts.to_millis(c.timestamp_micros))
                    for c in cells}
        return {c.family.encode() + b":" + c.qualifier: c.value for c in cells}

    # -- admin -------------------------------------------------------------------------------
    def _admin_retry(self, idempotent):
        """Admin call options: reads retried on transient errors within the budget; creates and
        drops never (a retried create would fail with "exists", a retried drop with "not found")."""
        if not idempotent:
            return {"retry": None, "timeout": self.operation_timeout}
        retry = gretry.Retry(predicate=gretry.if_transient_error, initial=0.1, maximum=2.0,
                             timeout=self.operation_timeout)
        return {"retry": retry, "timeout": self.attempt_timeout}

    def _table_path(self, name):
        return f"{self._instance_path}/tables/{name}"

    def create_table(self, spec):
        rules = {fam.name: bts.gc_rule_for(fam) for fam in spec.families}
        if not rules:
            raise InvalidArgument("a table needs at least one family")
        # salted tables start split on the salt boundaries, as the HBase DDL does
        splits = [admin_types.CreateTableRequest.Split(key=s.encode()) for s in SALTS[1:]] if spec.salted else []
        table = admin_types.Table(column_families={name: admin_types.ColumnFamily(gc_rule=rule)
                                                   for name, rule in rules.items()})
        with self._rpc("create_table", spec.name):
            self._admin_client().create_table(request={"parent": self._instance_path, "table_id": spec.name,
                                                    "table": table, "initial_splits": splits},
                                           **self._admin_retry(False))
        self._families[spec.name] = {name: bts.family_from_gc_rule(name, rule) for name, rule in rules.items()}

    def drop_table(self, name):
        self._forget(name)
        with self._rpc("drop_table", name):
            self._admin_client().delete_table(request={"name": self._table_path(name)}, **self._admin_retry(False))

    def list_tables(self):
        with self._rpc("list_tables"):
            return sorted(t.name.rsplit("/", 1)[-1]
                          for t in self._admin_client().list_tables(request={"parent": self._instance_path},
                                                                 **self._admin_retry(True)))

    def describe_table(self, name):
        return dict(self._load_families(name, "describe_table"))

    max_request_bytes = bts.MAX_REQUEST_BYTES

    def check_mutation_size(self, table, mutation):
        base.check_mutations([mutation])
        bts.check_row_mutation_size(table, mutation, MAX_MUTATIONS_PER_CALL)

    # -- writes ------------------------------------------------------------------------------
    def mutate_rows(self, table, mutations, timestamp=None):
        base.check_mutations(mutations)
        base.check_timestamp(timestamp)
        bts.check_ms(timestamp)
        if not mutations:
            return
        families = self._families_of(table)
        merged = {}  # row -> [puts (name, qual, value)], [deletes (name, qual|None)], delete_row
        for m in mutations:
            self._check_limits(m.row, [split_column(c)[1] for c in (*m.puts, *m.deletes)])
            puts, deletes, flags = merged.setdefault(m.row, ([], [], [False]))
            for column, value in m.puts.items():
                family, qualifier = split_column(column)
                puts.append((self._family(families, table, family), qualifier, value))
            for column in m.deletes:
                family, qualifier = split_column(column)
                deletes.append((self._family(families, table, family), qualifier))
            flags[0] = flags[0] or m.delete_row
        # HBase: puts and deletes without a timestamp use one "now"; deletes take versions <= T.
        ts_ms = now_ms() if timestamp is None else timestamp
        ts_us = bts.to_micros(ts_ms)
        end_us = bts.to_micros(ts_ms + 1) if ts_ms < bts.MAX_TIMESTAMP_MS else None
        wide = {row: (set(families) if flags[0] else {n for n, q in dels if q is None})
                for row, (_puts, dels, flags) in merged.items()
                if flags[0] or any(q is None for _n, q in dels)}
        newest = self._newest_cells(table, wide) if (wide and end_us is not None) else {}
        entries, weights = [], []
        for row, (puts, deletes, flags) in merged.items():
            ops = [SetCell(name, qualifier, value, ts_us) for name, qualifier, value in puts]
            ops += self._delete_ops(families, puts, deletes, flags[0], end_us, newest.get(row, {}))
            if ops:
                weights.append((len(ops), bts.mutation_bytes(row, puts + [(n, q or b"", b"") for n, q in deletes])))
                bts.check_entry_size(table, row, *weights[-1], MAX_MUTATIONS_PER_CALL)  # before any write
                entries.append(RowMutationEntry(row, ops))
        self._send(table, entries, weights)

    @staticmethod
    def _delete_ops(families, puts, deletes, delete_row, end_us, newest):
        """Bigtable mutations for one row's deletes of versions ``< end_us`` (after its puts).

        A column is one time-range delete.  A family (or the row) is deleted whole, atomically,
        unless it holds a cell newer than the delete (``newest``: ``{family: {qual: ts_us}}``
        of the row's newest cells); then each of its columns gets a time-range delete instead,
        so the newer cells survive as in HBase.
        """
        def keeps_newer(name):
            return end_us is not None and any(ts >= end_us for ts in newest.get(name, {}).values())

        if delete_row and not any(keeps_newer(name) for name in families):
            return [DeleteAllFromRow()]
        ops, seen = [], set()
        for name, qualifier in ([(name, None) for name in families] if delete_row else deletes):
            if qualifier is None and not keeps_newer(name):
                if (name, None) not in seen:
                    seen.add((name, None))
                    ops.append(DeleteAllFromFamily(name))
                continue
            if qualifier is None:
                quals = sorted(set(newest.get(name, ())) | {q for n, q, _v in puts if n == name})
            else:
                quals = [qualifier]
            for q in quals:
                if (name, q) not in seen:
                    seen.add((name, q))
                    ops.append(DeleteRangeFromColumn(name, q, None, end_us))
        return ops

    def _newest_cells(self, table, wanted):
        """``{row: {family: {qualifier: newest ts_us}}}`` of the wanted families (values stripped)."""
        names = sorted(set().union(*wanted.values()))
        if not names:
            return {}
        query = ReadRowsQuery(row_keys=list(wanted), row_filter=bts.chain([
            bts.union([bts.family_filter(n) for n in names]),
            bts.rf.CellsColumnLimitFilter(1),
            bts.rf.StripValueTransformerFilter(True)]))
        with self._rpc("get_rows", table):
            rows = self._table(table).read_rows(query)
        found = {}
        for row in rows:
            for cell in row.cells:
                if cell.family in wanted[row.row_key]:
                    found.setdefault(row.row_key, {}).setdefault(cell.family, {})[cell.qualifier] = cell.timestamp_micros
        return found

    def _send(self, table, entries, weights):
        """MutateRows in as few calls as the mutation and byte limits allow (``weights``:
        ``(mutations, estimated bytes)`` of each entry)."""
        batch, count, size = [], 0, 0
        for entry, (n, weight) in zip(entries, weights):
            if batch and (count + n > MAX_MUTATIONS_PER_CALL or size + weight > bts.MAX_REQUEST_BYTES):
                self._send_batch(table, batch)
                batch, count, size = [], 0, 0
            batch.append(entry)
            count, size = count + n, size + weight
        if batch:
            self._send_batch(table, batch)

    def _send_batch(self, table, batch):
        with self._rpc("mutate_rows", table):
            self._table(table).bulk_mutate_rows(batch)

    # -- reads -------------------------------------------------------------------------------
    def get_rows(self, table, rows, columns=None, timestamp=None, include_timestamp=False):
        if not isinstance(rows, (list, tuple)):
            raise InvalidArgument("rows must be a list of bytes")
        for row in rows:
            base.check_row_key(row)
            self._check_limits(row)
        base.check_timestamp(timestamp)
        bts.check_ms(timestamp)
        base.check_columns(columns)
        if not rows:
            return {}
        families = self._families_of(table)
        select = self._selection(families, table, columns)
        row_filter, empty = bts.read_filter(families, select, timestamp, 1, now_ms())
        if empty:
            return {}
        query = ReadRowsQuery(row_keys=list(dict.fromkeys(rows)), row_filter=row_filter)
        with self._rpc("get_rows", table):
            found = self._table(table).read_rows(query)
        by_key = {row.row_key: row for row in found}
        return {key: self._row_dict(by_key[key], include_timestamp) for key in query.row_keys if key in by_key}

    def get_cells(self, table, row, column, versions=None, timestamp=None):
        base.check_cells_args(row, column, versions, timestamp)
        self._check_limits(row)
        bts.check_ms(timestamp)
        families = self._families_of(table)
        family, qualifier = split_column(column)
        name = self._family(families, table, family)
        limit = min(versions or bts.UNLIMITED_VERSIONS, families[name].versions)
        select = {name: None if qualifier is None else {qualifier}}
        row_filter, empty = bts.read_filter(families, select, timestamp, limit, now_ms())
        if empty:
            return []
        with self._rpc("get_cells", table):
            found = self._table(table).read_rows(ReadRowsQuery(row_keys=[row], row_filter=row_filter))
        return [(c.value, bts.to_millis(c.timestamp_micros)) for r in found for c in r.cells]

    def scan(self, table, start=None, stop=None, prefix=None, columns=None, limit=None,
             reverse=False, timestamp=None, include_timestamp=False, page_size=1000):
        key_range = base.scan_range(start, stop, prefix, reverse)
        base.check_timestamp(timestamp)
        bts.check_ms(timestamp)
        base.check_scan_numbers(limit, page_size)
        families = self._families_of(table)  # fail here, not at the first next()
        select = self._selection(families, table, columns)
        scan = Scan(self, table, key_range, families, select, timestamp, include_timestamp)
        rows = scan.backward(page_size) if reverse else scan.forward(page_size)
        return limited(rows, limit)

    # -- counters and conditional writes ---------------------------------------------------------
    def increment(self, table, row, column, amount=1):
        inc = base.Increment(table, row, column, amount)
        base.check_increment(inc)
        return self._increment_row(table, row, {self._counter_column(inc): amount})[0]

    def increment_many(self, increments):
        increments = base.check_increments(increments)
        by_row = {}  # (table, row) -> {(family, qualifier): summed amount}, in first-seen order
        for inc in increments:
            amounts = by_row.setdefault((inc.table, inc.row), {})
            key = self._counter_column(inc)
            amounts[key] = _wrap64(amounts.get(key, 0) + inc.amount)
        if self.check_counters_first and sum(len(a) for a in by_row.values()) > 1:
            self._check_counters(by_row)
        for (table, row), amounts in by_row.items():
            self._increment_row(table, row, amounts, kind="increment_many")

    def _counter_column(self, inc):
        self._check_limits(inc.row)
        family, qualifier = split_column(inc.column)
        return self._family(self._families_of(inc.table), inc.table, family), qualifier or b""

    def _increment_row(self, table, row, amounts, kind="increment"):
        """One ReadModifyWriteRow for every counter of ``row``; the new values in ``amounts`` order.

        ReadModifyWriteRow adds to the newest cell even when the family's TTL has expired it (GC
        is lazy), where HBase starts from 0.  So counters in a TTL family first get their expired
        versions deleted: they are invisible already, so this is always safe and idempotent.
        """
        self._expire_cells(table, row, amounts)
        rules = [IncrementRule(name, qualifier, amount) for (name, qualifier), amount in amounts.items()]
        with self._rpc(kind, table):
            result = self._table(table).read_modify_write_row(row, rules)
        values = {(c.family, c.qualifier): c.value for c in result.cells}
        return [_COUNTER.unpack(values[key])[0] for key in amounts]

    def append(self, table, row, values):
        """One ReadModifyWriteRow of append rules (atomic on the row, as HBase's Append)."""
        base.check_append(row, values)
        self._check_limits(row, [split_column(c)[1] for c in values])
        families = self._families_of(table)
        deltas = {}
        for column, value in values.items():
            family, qualifier = split_column(column)
            deltas[(self._family(families, table, family), qualifier)] = value
        self._expire_cells(table, row, deltas)  # as for increments: an expired cell starts empty
        rules = [AppendValueRule(name, qualifier, value) for (name, qualifier), value in deltas.items()]
        with self._rpc("append", table):
            result = self._table(table).read_modify_write_row(row, rules)
        found = {(c.family, c.qualifier): c.value for c in result.cells}
        return {column: found[key] for column, key in zip(values, deltas)}

    def _expire_cells(self, table, row, amounts):
        families, now = self._families_of(table), now_ms()
        ops = []
        for name, qualifier in amounts:
            floor_us = bts.ttl_floor_us(families[name], now)
            if floor_us is not None and floor_us > 0:
                ops.append(DeleteRangeFromColumn(name, qualifier, None, floor_us))
        if ops:
            with self._rpc("mutate_rows", table):
                self._table(table).mutate_row(row, ops)

    def _check_counters(self, by_row):
        """Raise NotACounter before any write if a cell to increment is not 8 bytes wide."""
        by_table = {}
        for (table, row), amounts in by_row.items():
            rows, columns = by_table.setdefault(table, ({}, set()))
            rows[row] = set(amounts)
            columns.update(amounts)
        for table, (rows, columns) in by_table.items():
            families = self._families_of(table)
            select = {}
            for name, qualifier in columns:
                select.setdefault(name, set()).add(qualifier)
            row_filter, _empty = bts.read_filter(families, select, None, 1, now_ms())
            with self._rpc("get_rows", table):
                found = self._table(table).read_rows(ReadRowsQuery(row_keys=list(rows), row_filter=row_filter))
            for r in found:
                for c in r.cells:
                    if (c.family, c.qualifier) in rows[r.row_key] and len(c.value) != 8:
                        raise NotACounter(f"Field is not a long, it's {len(c.value)} bytes wide")

    def check_and_put(self, table, row, column, expected, puts):
        family, qualifier = base.check_check_and_put(row, column, expected, puts)
        self._check_limits(row, [qualifier] + [split_column(c)[1] for c in puts])
        families = self._families_of(table)
        name = self._family(families, table, family)
        cells = [(self._family(families, table, split_column(c)[0]), split_column(c)[1], v) for c, v in puts.items()]
        now = now_ms()
        latest = bts.latest_cell_filter(name, qualifier, families[name], now)
        if expected:
            predicate, applies_when_matched = bts.chain([latest, bts.exact_value_filter(expected)]), True
        else:  # None or b"": a missing cell or an empty value; so "not a non-empty value"
            predicate, applies_when_matched = bts.chain([latest, bts.non_empty_value_filter()]), False
        ops = [SetCell(n, q, v, bts.to_micros(now)) for n, q, v in cells]
        with self._rpc("check_and_put", table):
            if not ops:  # Bigtable wants a mutation on one side; with no puts, just evaluate
                matched = bool(self._table(table).read_rows(ReadRowsQuery(row_keys=[row], row_filter=predicate)))
            elif applies_when_matched:
                matched = self._table(table).check_and_mutate_row(row, predicate, true_case_mutations=ops)
            else:
                matched = self._table(table).check_and_mutate_row(row, predicate, false_case_mutations=ops)
        return matched if applies_when_matched else not matched

    def compact(self, table):
        """Nothing to do: Bigtable collects garbage itself, and reads already hide what it will
        collect (over-VERSIONS and expired cells).  There are no delete markers to drop."""
        self._load_families(table, "compact")
