"""The hbase backend over HBase's Thrift2 server (``hbase://HOST:PORT?api=thrift2``), via thriftpy2.

HBase ships two Thrift servers in its ``hbase-thrift`` jar; this backend speaks to the second one
(``org.apache.hadoop.hbase.thrift2.ThriftServer``), with the IDL in ``thrift2.thrift``.
The other URL options mean what they mean for Thrift1 (:mod:`.thrift1`): ``table_prefix``,
``pool_size``, ``timeout_ms``, ``retries``, ``transport``/``protocol`` (HBase's Thrift2 default
server is buffered + binary; its ``-f -c`` / ``-hsha`` servers framed + compact) and
``max_frame_mb`` (framed only).  Where Thrift2 pays:

* ``checkAndPut(table, row, family, qualifier, value, TPut)`` writes a multi-cell ``TPut``
  atomically with its check: :attr:`atomic_check_and_put` is True.  (``checkAndMutate`` is not
  used: with an unset value, "the cell is absent", 2.6.1's server fails it.)  ``expected=None``
  and ``b""`` both match a missing or an empty cell, as HBase compares them.
* Scans are one ``getScannerResults`` per page (open, fetch and close in one call); the next
  page starts at the last row returned, which is skipped.
* Tables are created pre-split and with every attribute (:mod:`.thrift2_admin`).
* ``increment`` takes several columns of one row in one call; ``increment_many`` sends one call
  per row, overlapped.

What it cannot do: every call touches one table (``mutate_tables`` overlaps one call per table),
and there is no compaction call: :meth:`compact` is a no-op (HBase major-compacts on its own
schedule, weekly by default; ``major_compact`` in the HBase shell does it at once).

Timestamps follow HBase's rules as Thrift1's ``mutateRowsTs`` does: puts at ``timestamp``; a
column delete removes the column's versions at or before it (the timestamp goes on each
``TColumn``: Thrift2 ignores ``TDelete.timestamp`` when columns are given), a family delete
likewise, a row delete every family.  Each row's puts go before its deletes (``putMultiple``,
then ``deleteMultiple``).  A read's ``timestamp=T`` is the time range ``[0, T)``.

Retries, idle connections and errors: :mod:`.thrift2_conn`.  Request sizes over framed
transport: as :mod:`.thrift1` (a batch is split to fit the frame limit; one row that cannot fit
raises :class:`RequestTooLarge` before anything is sent).
"""

import struct
import threading
from concurrent.futures import ThreadPoolExecutor

from ...errors import BackendError, FamilyNotFound, InvalidArgument, RequestTooLarge
from .. import base
from . import thrift_sizes as sizes
from ..base import Backend, split_column
from .thrift2_admin import Thrift2Admin
from .servers import server_list
from .thrift2_conn import Thrift2Pool
from .thrift2_idl import hbase2

#: the HBase setting that bounds a framed request
FRAME_SETTING = "hbase.regionserver.thrift.framed.max_frame_size_in_mb"
#: buffered transport has no request limit; batches are still split to bound memory on both ends
BUFFERED_BATCH_BYTES = 64 * 1024 * 1024
#: one TColumnValue / TColumn / TColumnIncrement besides its byte strings: three binary field
#: headers with lengths (21), an i64 field (11), the stop byte, list slack
CELL_BYTES = 48
#: HBase's client looks a row's region up in hbase:meta under "TABLE,ROW,99999999999999", a key
#: that must itself fit 32767 bytes; a row longer than this (plus the table name) can fail there
_META_KEY_EXTRA = 16
_MAX_VERSIONS = 2**31 - 1
_DELETE_COLUMNS, _DELETE_FAMILY = hbase2.TDeleteType.DELETE_COLUMNS, hbase2.TDeleteType.DELETE_FAMILY


def _column(family, qualifier):
    return family + b":" + qualifier


def _cells(result, include_timestamp):
    """A TResult's cells as ``{b"fam:qual": value}`` (or ``(value, ts)``), newest version only."""
    out = {}
    for cv in result.columnValues or ():
        name = _column(cv.family, cv.qualifier)
        if name not in out:  # versions come newest first
            out[name] = (cv.value, cv.timestamp) if include_timestamp else cv.value
    return out


def _tcolumns(columns):
    """Read columns (``b"fam"`` or ``b"fam:qual"``) as TColumns; None for every column."""
    if columns is None:
        return None
    out = []
    for column in columns:
        family, qualifier = split_column(column)
        out.append(hbase2.TColumn(family=family, qualifier=qualifier))
    return out


def _time_range(timestamp):
    """The contract's read ``timestamp=T`` (cells with ``ts < T``) as a TTimeRange."""
    return None if timestamp is None else hbase2.TTimeRange(minStamp=0, maxStamp=timestamp)


def _put_bytes(row, cells):
    """Bound of one TPut / TAppend / TIncrement of ``row`` whose cells are ``(fam, qual, value)``."""
    return sizes.ROW_OVERHEAD + len(row) + sum(CELL_BYTES + len(f) + len(q) + len(v or b"") for f, q, v in cells)


class HBaseThrift2Backend(Thrift2Admin, Backend):
    """The contract over Thrift2.  Thread-safe: every call borrows a pooled connection."""

    atomic_check_and_put = True

    def __init__(self, host="localhost", port=9090, transport="buffered", protocol="binary",
                 table_prefix=None, pool_size=4, timeout_ms=30000, retries=3, backoff_s=0.05,
                 max_frame_mb=None, servers=None):
        """``servers``: every Thrift2 server of the HBase (``[(host, port)]`` or ``"h1:p1,h2:p2"``),
        spread over and failed over (:mod:`.servers`); default ``[(host, port)]``."""
        super().__init__()
        if transport not in ("buffered", "framed") or protocol not in ("binary", "compact"):
            raise InvalidArgument(f"transport must be buffered|framed and protocol binary|compact, "
                                  f"not {transport}/{protocol}")
        if transport == "framed":
            self.max_frame_mb, self.max_request_bytes = sizes.frame_limit(max_frame_mb)
        elif max_frame_mb is not None:
            raise InvalidArgument("max_frame_mb applies only to transport='framed'")
        servers = server_list(servers, host, port)
        self.host, self.port = servers[0]
        self.table_prefix = table_prefix
        self.retries = retries
        self._pool_size = pool_size
        self._pool_args = dict(host=self.host, port=self.port, servers=servers, transport=transport,
                               protocol=protocol, size=pool_size,
                               timeout_ms=timeout_ms, retries=retries, backoff_s=backoff_s,
                               # late-bound: a tool may wrap this instance's count_call
                               count_call=lambda kind, n=1: self.count_call(kind, n))
        self._pool = Thrift2Pool(**self._pool_args)
        self._executor = None
        self._stage_executor = None  # runs overlap()'s calls, which may use _executor themselves
        self._lock = threading.Lock()
        self._in_overlap = threading.local()
        self._families = {}

    @classmethod
    def from_url(cls, parsed):
        o = parsed.options
        return cls(parsed.host, parsed.port, o["transport"], o["protocol"], o["table_prefix"],
                   o["pool_size"], o["timeout_ms"], o["retries"], max_frame_mb=o["max_frame_mb"],
                   servers=parsed.servers)

    @property
    def servers(self):
        """The :class:`~.servers.ServerList` of this backend's Thrift2 servers."""
        return self._pool.servers

    @property
    def reopen_idle_s(self):
        """Seconds after which an idle pooled connection is reopened before use."""
        return self._pool.reopen_idle_s

    @reopen_idle_s.setter
    def reopen_idle_s(self, value):
        self._pool.reopen_idle_s = value

    def close(self):
        with self._lock:
            executors = [self._stage_executor, self._executor]
            self._stage_executor = self._executor = None
            pool, self._pool = self._pool, Thrift2Pool(**self._pool_args)  # usable after close, as Thrift1's
            self._pool.reopen_idle_s = pool.reopen_idle_s
        for executor in executors:
            if executor is not None:
                executor.shutdown(wait=True)
        pool.close()

    # -- plumbing ----------------------------------------------------------------------------
    def _name(self, table):
        """The table's name on the server (with ``table_prefix``), as bytes."""
        if not isinstance(table, str) or not table:
            raise InvalidArgument("table name must be a non-empty str")
        name = table.encode("utf-8")
        return (self.table_prefix.encode() + b"_" + name) if self.table_prefix else name

    def _call(self, kind, fn, table=None, idempotent=True, rows=()):
        """One RPC on a pooled connection (see :class:`Thrift2Pool.call`).

        ``rows``: the rows the call touches.  HBase 2.6.1's Thrift2 server answers a row whose
        hbase:meta lookup key is too long (Thrift1 says IllegalArgument) with a bare internal
        error; for such rows that error is the caller's :class:`InvalidArgument`.
        """
        wire = self._name(table) if table is not None else None
        try:
            return self._pool.call(kind, fn, table, wire, idempotent=idempotent)
        except BackendError as exc:
            limit = base.MAX_ROW_KEY - len(wire or b"") - _META_KEY_EXTRA
            if str(exc).startswith("Thrift2 server error") and any(len(row) > limit for row in rows):
                raise InvalidArgument(f"Row length {max(map(len, rows))} is too long for HBase to locate "
                                      f"its region in table {table!r} (limit {limit} while the region "
                                      "location is not cached)") from None
            raise

    def _family_names(self, table, refresh=False):
        names = self._families.get(table)
        if names is None or refresh:
            names = set(self.describe_table(table))
        return names

    def _check_families(self, table, columns):
        """Refuse unknown families before anything is sent, so a bad batch writes nothing."""
        wanted = {split_column(c)[0].decode("utf-8", "surrogateescape") for c in columns}
        if not wanted:
            return
        if not wanted <= self._family_names(table):
            missing = wanted - self._family_names(table, refresh=True)
            if missing:
                raise FamilyNotFound(f"Column family {sorted(missing)[0]} does not exist in table {table}")

    def _check_columns(self, table, columns):
        if base.check_columns(columns) is not None:
            self._check_families(table, columns)
        elif columns is None:
            self._family_names(table)  # a missing table fails here, before any generator starts

    def _check_request_size(self, kind, table, size, row):
        """Raise :class:`RequestTooLarge` when a request of ``size`` bytes cannot fit a frame."""
        if self.max_request_bytes is None or size <= self.max_request_bytes:
            return
        raise RequestTooLarge(
            f"{kind} of row {row[:60]!r} in table {table!r} needs a request of about {size} bytes, over "
            f"the Thrift2 server's {self.max_request_bytes}-byte frame limit (max_frame_mb="
            f"{self.max_frame_mb}); raise {FRAME_SETTING} on the server and max_frame_mb in the "
            f"store URL, or use transport=buffered", size=size, limit=self.max_request_bytes,
            setting=FRAME_SETTING)

    def _sent_in_chunks(self, items, weights, wire, send):
        """``send(chunk)`` for consecutive chunks of ``items`` that each fit one request (the
        caller has checked that each item fits alone)."""
        budget = (self.max_request_bytes or BUFFERED_BATCH_BYTES) - sizes.request_bytes(wire, [])
        for chunk in sizes.split_by_size(items, weights, budget):
            send(chunk)

    # -- overlapping calls -------------------------------------------------------------------
    def _executor_of(self):
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._pool_size, thread_name_prefix="hbase2-overlap",
                                                    initializer=self._mark_overlap_thread)
            return self._executor

    def _mark_overlap_thread(self):
        self._in_overlap.active = True

    def _run_overlapped(self, calls):
        """Results of zero-argument ``calls`` in order, up to ``pool_size`` in flight.  Inside an
        overlapped call (a nested overlap) they run one after another: a worker waiting for
        workers could exhaust the executor."""
        if len(calls) <= 1 or self._pool_size == 1 or getattr(self._in_overlap, "active", False):
            return [call() for call in calls]
        return list(self._executor_of().map(lambda call: call(), calls))

    def overlap(self, calls):
        """Run independent zero-argument ``calls``, their round trips overlapped; their results
        in order.  The first error is raised after all have run (see the contract).

        They run on an executor of their own, whose threads may overlap their items on the
        per-item executor (a ``check_and_put_many`` inside one still fans out); a call must not
        call :meth:`overlap` itself.
        """
        if self._pool_size == 1:
            return base.overlap_on(None, calls)
        with self._lock:
            if self._stage_executor is None:
                self._stage_executor = ThreadPoolExecutor(self._pool_size, thread_name_prefix="hbase2-stage")
            executor = self._stage_executor
        return base.overlap_on(executor, calls)

    def _overlap(self, call, items, key=lambda item: item[0], after_wave=None):
        """``[call(item) for item in items]`` overlapped; items with the same ``key`` (a row)
        run in the order given, in successive waves (a later item may depend on an earlier
        one's write).  ``after_wave([(item, result)])`` runs after each wave."""
        results = [None] * len(items)
        pending = list(enumerate(items))
        while pending:
            wave, later, seen = [], [], set()
            for index, item in pending:
                (later if key(item) in seen else wave).append((index, item))
                seen.add(key(item))
            outcomes = self._run_overlapped([lambda item=item: call(item) for _index, item in wave])
            for (index, _item), result in zip(wave, outcomes):
                results[index] = result
            if after_wave is not None:
                after_wave([(item, result) for (_index, item), result in zip(wave, outcomes)])
            pending = later
        return results

    # -- writes ------------------------------------------------------------------------------
    def _tput(self, row, puts, timestamp=None):
        values = []
        for column, value in puts.items():
            family, qualifier = split_column(column)
            values.append(hbase2.TColumnValue(family=family, qualifier=qualifier, value=value))
        return hbase2.TPut(row=row, columnValues=values, timestamp=timestamp)

    def _tdeletes(self, mutation, timestamp):
        """The row's deletes: one TDelete for its columns, one for its families (Thrift2's
        delete type is per TDelete), or one for the whole row."""
        if mutation.delete_row:
            return [hbase2.TDelete(row=mutation.row, timestamp=timestamp)]
        columns, families = [], []
        for column in mutation.deletes:
            family, qualifier = split_column(column)
            (families if qualifier is None else columns).append(
                hbase2.TColumn(family=family, qualifier=qualifier, timestamp=timestamp))
        return [hbase2.TDelete(row=mutation.row, columns=cols, deleteType=kind)
                for cols, kind in ((columns, _DELETE_COLUMNS), (families, _DELETE_FAMILY)) if cols]

    def mutate_rows(self, table, mutations, timestamp=None):
        """One ``putMultiple`` (the rows' puts) then one ``deleteMultiple`` (their deletes), each
        split only to fit the request limit; counted as ``mutate_rows`` each."""
        base.check_mutations(mutations)
        base.check_timestamp(timestamp)
        if not mutations:
            return
        self._check_families(table, [c for m in mutations for c in (*m.puts, *m.deletes)])
        puts = [self._tput(m.row, m.puts, timestamp) for m in mutations if m.puts]
        deletes = [d for m in mutations for d in self._tdeletes(m, timestamp)]
        put_weights = [self._put_weight(p) for p in puts]
        delete_weights = [self._delete_weight(d) for d in deletes]
        wire, rows = self._name(table), [m.row for m in mutations]
        for item, weight in zip(puts + deletes, put_weights + delete_weights):  # all before the first call
            self._check_request_size("mutate_rows", table, sizes.request_bytes(wire, [weight]), item.row)
        self._sent_in_chunks(puts, put_weights, wire, lambda chunk: self._call(
            "mutate_rows", lambda c: c.putMultiple(wire, chunk), table, rows=rows))
        self._sent_in_chunks(deletes, delete_weights, wire, lambda chunk: self._call(
            "mutate_rows", lambda c: c.deleteMultiple(wire, chunk), table, rows=rows))

    @staticmethod
    def _put_weight(tput):
        return _put_bytes(tput.row, [(cv.family, cv.qualifier, cv.value) for cv in tput.columnValues])

    @staticmethod
    def _delete_weight(tdelete):
        return _put_bytes(tdelete.row, [(c.family, c.qualifier or b"", b"") for c in tdelete.columns or ()])

    def check_mutation_size(self, table, mutation):
        base.check_mutations([mutation])
        if self.max_request_bytes is None:
            return
        wire = self._name(table)
        if mutation.puts:
            weight = self._put_weight(self._tput(mutation.row, mutation.puts))
            self._check_request_size("mutate_rows", table, sizes.request_bytes(wire, [weight]), mutation.row)

    def mutate_tables(self, mutations_by_table):
        """:meth:`mutate_rows` of each table, overlapped (up to ``pool_size`` in flight)."""
        items = [(table, mutations) for table, mutations in mutations_by_table.items() if mutations]
        self._run_overlapped([lambda item=item: self.mutate_rows(*item) for item in items])

    # -- reads -------------------------------------------------------------------------------
    def get_rows(self, table, rows, columns=None, timestamp=None, include_timestamp=False):
        rows = list(rows)
        for row in rows:
            base.check_row_key(row)
        base.check_timestamp(timestamp)
        self._check_columns(table, columns)
        if not rows:
            return {}
        wire, tcolumns, time_range = self._name(table), _tcolumns(columns), _time_range(timestamp)
        gets = [hbase2.TGet(row=row, columns=tcolumns, timeRange=time_range) for row in rows]
        results = self._call("get_rows", lambda c: c.getMultiple(wire, gets), table, rows=rows)
        out = {}
        for row, result in zip(rows, results):  # results are positional; a missing row is empty
            cells = _cells(result, include_timestamp)
            if cells:
                out[row] = cells
        return out

    def get_rows_columns(self, table, columns_by_row):
        wanted = base.check_columns_by_row(columns_by_row)
        if not wanted:
            return {}
        self._check_families(table, sorted({c for columns in wanted.values() for c in columns}))
        rows = list(wanted)
        gets = [hbase2.TGet(row=row, columns=_tcolumns(wanted[row])) for row in rows]
        wire = self._name(table)
        results = self._call("get_rows", lambda c: c.getMultiple(wire, gets), table, rows=rows)
        out = {}
        for row, result in zip(rows, results):
            cells = _cells(result, False)
            if cells:
                out[row] = cells
        return out

    def get_cells(self, table, row, column, versions=None, timestamp=None):
        base.check_cells_args(row, column, versions, timestamp)
        self._check_families(table, [column])
        wire = self._name(table)
        get = hbase2.TGet(row=row, columns=_tcolumns([column]), timeRange=_time_range(timestamp),
                          maxVersions=versions or _MAX_VERSIONS)
        result = self._call("get_cells", lambda c: c.get(wire, get), table, rows=[row])
        return [(cv.value, cv.timestamp) for cv in result.columnValues or ()]

    def scan(self, table, start=None, stop=None, prefix=None, columns=None, limit=None,
             reverse=False, timestamp=None, include_timestamp=False, page_size=1000):
        key_range = base.scan_range(start, stop, prefix, reverse)
        base.check_timestamp(timestamp)
        base.check_scan_numbers(limit, page_size)
        self._check_columns(table, columns)
        return self._scan(table, key_range, _tcolumns(columns), limit, reverse, timestamp,
                          include_timestamp, page_size)

    def _scan(self, table, key_range, tcolumns, limit, reverse, timestamp, include_timestamp, page_size):
        """Pages of one ``getScannerResults`` each (a read: retried like any read).  A page
        after the first starts at the last row returned, asks for one row more and skips it:
        Thrift2's TScan has no exclusive start row."""
        wire = self._name(table)
        returned, resume_after = 0, None
        while True:
            want = page_size if limit is None else min(page_size, limit - returned)
            ask = want + (resume_after is not None)
            tscan = _tscan(key_range, reverse, resume_after, tcolumns, timestamp, ask)
            results = self._call("scan", lambda c, tscan=tscan, ask=ask: c.getScannerResults(wire, tscan, ask), table)
            for result in results:
                row = result.row
                if row == resume_after:
                    continue
                if not key_range.contains(row):
                    if reverse and key_range.low is not None and row < key_range.low:
                        return
                    continue
                cells = _cells(result, include_timestamp)
                if not cells:
                    continue
                yield row, cells
                returned += 1
                if limit is not None and returned >= limit:
                    return
            if len(results) < ask:  # a short page only at the end
                return
            resume_after = results[-1].row

    # -- counters, check-and-put, append -----------------------------------------------------
    def increment(self, table, row, column, amount=1):
        """One ``increment`` call; returns the new value.  Never retried after it was sent."""
        inc = base.Increment(table, row, column, amount)
        base.check_increment(inc)
        self._check_families(table, [column])
        return self._increment_row(table, row, {column: amount}, "increment")[column]

    def _increment_row(self, table, row, amounts, kind, results=True):
        """Increment several columns of one row in one call; ``{column: new value}`` (None with
        ``results=False``: the server then sends no cells back)."""
        wire = self._name(table)
        columns = []
        for column in amounts:
            family, qualifier = split_column(column)
            columns.append(hbase2.TColumnIncrement(family=family, qualifier=qualifier or b"", amount=amounts[column]))
        tinc = hbase2.TIncrement(row=row, columns=columns, returnResults=results)
        self._check_request_size(kind, table, sizes.request_bytes(wire, [_put_bytes(
            row, [(c.family, c.qualifier, b"") for c in columns])]), row)
        result = self._call(kind, lambda c: c.increment(wire, tinc), table, idempotent=False, rows=[row])
        if not results:
            return None
        values = {}
        for cv in result.columnValues or ():
            values[_column(cv.family, cv.qualifier)] = struct.unpack(">q", cv.value)[0]
        out = {}
        for column in amounts:
            family, qualifier = split_column(column)
            name = _column(family, qualifier or b"")
            if name not in values:
                raise BackendError(f"increment of {column!r} in table {table!r} answered no value")
            out[column] = values[name]
        return out

    def increment_many(self, increments):
        """One ``increment`` call per row (all its columns), overlapped; a column named twice for
        one row goes in a second call.  Never retried after a request was sent."""
        increments = base.check_increments(increments)
        by_table = {}
        for inc in increments:
            by_table.setdefault(inc.table, []).append(inc.column)
        for table, columns in by_table.items():
            self._check_families(table, columns)
        calls = {}  # (table, row) -> [{column: amount}, …], a column at most once per call
        for inc in increments:
            family, qualifier = split_column(inc.column)
            column = _column(family, qualifier or b"")
            batches = calls.setdefault((inc.table, inc.row), [])
            batch = next((b for b in batches if column not in b), None)
            if batch is None:
                batch = {}
                batches.append(batch)
            batch[column] = inc.amount
        items = [(key, batch) for key, batches in calls.items() for batch in batches]
        if self.max_request_bytes is not None:  # an item that cannot fit fails the batch up front
            for (table, row), batch in items:
                weight = _put_bytes(row, [(*split_column(c), b"") for c in batch])
                self._check_request_size("increment_many", table, sizes.request_bytes(self._name(table), [weight]), row)
        self._overlap(lambda item: self._increment_row(item[0][0], item[0][1], item[1], "increment_many",
                                                       results=False), items)

    def check_and_put(self, table, row, column, expected, puts):
        return self.check_and_put_many(table, [(row, column, expected, puts)])[0]

    def _check_and_put_one(self, table, row, column, expected, puts):
        family, qualifier = split_column(column)
        wire, tput = self._name(table), self._tput(row, puts)
        return bool(self._call("check_and_put", lambda c: c.checkAndPut(wire, row, family, qualifier, expected, tput),
                               table, idempotent=False, rows=[row]))

    def check_and_put_many(self, table, items):
        """One atomic ``checkAndPut`` per item (check and every cell), overlapped up to
        ``pool_size`` at a time; items on one row in successive waves, in the order given."""
        items = base.check_check_and_put_items(items)
        for row, column, expected, puts in items:  # an item that cannot fit fails the batch up front
            if not puts:
                raise InvalidArgument("check_and_put needs at least one cell to put")
            self._check_families(table, [column, *puts])
            if self.max_request_bytes is not None:
                weight = self._put_weight(self._tput(row, puts)) + len(row) + len(column) + len(expected or b"")
                self._check_request_size("check_and_put", table, sizes.request_bytes(self._name(table), [weight]), row)
        return self._overlap(lambda item: self._check_and_put_one(table, *item), items)

    def append(self, table, row, values):
        """One ``append`` call (every cell under the row lock); ``{column: resulting value}``."""
        base.check_append(row, values)
        self._check_families(table, list(values))
        return self._append(table, row, values)

    def _append(self, table, row, values):
        wire = self._name(table)
        cells = [(*split_column(column), value) for column, value in values.items()]
        self._check_request_size("append", table, sizes.request_bytes(wire, [_put_bytes(row, cells)]), row)
        tappend = hbase2.TAppend(row=row, columns=[hbase2.TColumnValue(family=f, qualifier=q, value=v)
                                                   for f, q, v in cells], returnResults=True)
        result = self._call("append", lambda c: c.append(wire, tappend), table, idempotent=False, rows=[row])
        got = _cells(result, False)
        missing = [column for column in values if column not in got]
        if missing:
            raise BackendError(f"append on {table!r} answered no cell for {missing[0]!r}")
        return {column: got[column] for column in values}

    def append_many(self, table, items):
        """The items' ``append`` calls overlap, up to ``pool_size`` at a time (one RPC each)."""
        items = base.check_append_items(items)
        for _row, values in items:
            self._check_families(table, list(values))
        if self.max_request_bytes is not None:  # an item that cannot fit fails the batch up front
            wire = self._name(table)
            for row, values in items:
                cells = [(*split_column(c), v) for c, v in values.items()]
                self._check_request_size("append", table, sizes.request_bytes(wire, [_put_bytes(row, cells)]), row)
        return self._overlap(lambda item: self._append(table, *item), items)

    def compact(self, table):
        """A no-op: Thrift2 has no compaction call (see the module docstring).  Checks only that
        the table exists."""
        self._family_names(table, refresh=True)


def _tscan(key_range, reverse, resume_after, tcolumns, timestamp, rows):
    """A TScan covering ``key_range`` (from ``resume_after``, inclusive, if set).

    Bounds TScan cannot express exactly are widened here and trimmed by the caller with
    ``KeyRange.contains``: a reversed scan's stop row is exclusive, a forward scan's start row
    inclusive.
    """
    start, stop = key_range.scan_rows(reverse, resume_after)
    return hbase2.TScan(startRow=start or None, stopRow=stop or None, columns=tcolumns, caching=rows,
                        timeRange=_time_range(timestamp), reversed=reverse or None)
