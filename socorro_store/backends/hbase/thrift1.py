"""The hbase backend: the contract over HBase's Thrift1 gateway, through happybase.

``hbase://HOST:PORT[,HOST:PORT…]?transport=buffered|framed&protocol=binary|compact&table_prefix=P
&pool_size=N&timeout_ms=T&retries=N&max_frame_mb=M``

A :class:`~.servers.ServerPool` of happybase connections holds up to ``pool_size``
connections over every Thrift server the URL names, and every call goes through the Thrift client
underneath a connection (happybase's own wrappers add round trips or lack calls: batched
``incrementRows``, ``checkAndPut``, ``mutateRows`` with family deletes).

Retries and failover (:mod:`.servers`): a failure to *connect* is always retried (nothing was
sent), on another server when there is one.  A transport failure after a request was sent is
retried, on another server or a fresh connection with exponential backoff, only for idempotent
calls (reads, puts, deletes, admin reads).  Increments and check-and-put are never replayed: the
caller gets :class:`BackendUnavailable` and the outcome is unknown (rollups make counters exact).
A server that refuses a connection, or fails several calls in a row, is left out of the rotation
and tried again later (one slow answer does not leave it out).

Request sizes: over framed transport the server closes the connection on a request frame over
its limit (``max_frame_mb``, HBase's ``hbase.regionserver.thrift.framed.max_frame_size_in_mb``,
2 MB by default), which would look like an outage.  So batched calls (``mutateRows``,
``incrementRows``) are split into requests that fit (see :mod:`.thrift_sizes`), and a request
that cannot fit even alone (one row's mutation, an append, a check-and-put) raises
:class:`RequestTooLarge` before anything is sent.  Replies have no such limit: HBase's
``TFramedTransport`` checks the frames it reads, not those it writes, and so does the gateway.
Over buffered transport, which has no limit, batches are split at 64 MiB only to bound memory.
"""

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import happybase
import Hbase_thrift as thrift  # noqa: E402  (module registered by importing happybase)
from thriftpy2.thrift import TApplicationException

from ...errors import (
    BackendError,
    BackendUnavailable,
    FamilyNotFound,
    InvalidArgument,
    RequestTooLarge,
)
from .. import base
from . import thrift_sizes as sizes
from ..base import Backend, split_column
from .servers import REOPEN_IDLE_S, ServerList, ServerPool, server_list
from .thrift1_admin import Thrift1Admin
from .thrift1_wire import _row_dict, _spread_by_row, _thrift_scan, translate_error

#: errors with which the server answered: the connection stays usable
_ANSWERED = (thrift.IOError, thrift.IllegalArgument, thrift.AlreadyExists, TApplicationException)
#: the HBase setting that bounds a framed request
FRAME_SETTING = "hbase.regionserver.thrift.framed.max_frame_size_in_mb"
#: buffered transport has no request limit; batches are still split to bound memory on both ends
BUFFERED_BATCH_BYTES = 64 * 1024 * 1024
#: How long one ``incrementRows`` call may take, by the server's measured cost per cell, before a
#: batch is spread over several (:meth:`HBaseBackend._increment_calls`).
INCREMENT_CALL_S = 0.025
#: The fewest increments a call carries when a batch is spread over several.
INCREMENTS_PER_CALL = 8


class HBaseBackend(Thrift1Admin, Backend):
    """The contract over Thrift1.  Thread-safe: every call borrows a pooled connection."""

    # Thrift1's ColumnDescriptor (Hbase.thrift) has no block size field: createTable cannot set
    # it and getColumnDescriptors cannot read it, so HBase gives every family created here its
    # built-in default.  Listed as not applicable (never drift) and, with that default, as
    # unreachable, so `tables describe|verify` say "unchecked" instead of passing it silently.
    not_applicable_attributes = ("BLOCKSIZE",)
    unreachable_attributes = {"BLOCKSIZE": 65536}
    # Thrift1's createTable takes column descriptors only, no split keys: a new table is one
    # region.  `tables create` says so; `tables ddl` gives the HBase shell statements with SPLITS.
    presplit_at_create = False

    def __init__(self, host="localhost", port=9090, transport="buffered", protocol="binary",
                 table_prefix=None, pool_size=4, timeout_ms=30000, retries=3, backoff_s=0.05,
                 max_frame_mb=None, servers=None):
        """``servers``: every Thrift server of the HBase (``[(host, port)]`` or ``"h1:p1,h2:p2"``),
        spread over and failed over (:mod:`.servers`); default ``[(host, port)]``."""
        super().__init__()
        if transport == "framed":
            self.max_frame_mb, self.max_request_bytes = sizes.frame_limit(max_frame_mb)
        elif max_frame_mb is not None:
            raise InvalidArgument("max_frame_mb applies only to transport='framed'")
        servers = server_list(servers, host, port)
        self.host, self.port = servers[0]
        self.table_prefix = table_prefix
        self.retries, self.backoff_s = retries, backoff_s
        self._conn_kwargs = dict(transport=transport, protocol=protocol, timeout=timeout_ms,
                                 table_prefix=table_prefix)
        self._pool_size = pool_size
        self._servers = ServerList(servers)
        self._pool = None
        self._executor = None
        self._stage_executor = None  # runs overlap()'s calls, which may use _executor themselves
        self._increment_cell_s = 0.0  # seconds per cell of recent incrementRows calls (moving average)
        self._call_s = 0.0  # seconds of recent other calls (moving average)
        self._pool_lock = threading.Lock()
        self._families = {}
        self.reopen_idle_s = REOPEN_IDLE_S

    @classmethod
    def from_url(cls, parsed):
        o = parsed.options
        return cls(parsed.host, parsed.port, o["transport"], o["protocol"], o["table_prefix"],
                   o["pool_size"], o["timeout_ms"], o["retries"], max_frame_mb=o["max_frame_mb"],
                   servers=parsed.servers)

    @property
    def servers(self):
        """The :class:`~.servers.ServerList` of this backend's Thrift servers."""
        return self._servers

    def close(self):
        with self._pool_lock:
            pool, self._pool = self._pool, None
            executors = [self._stage_executor, self._executor]
            self._stage_executor = self._executor = None
        for executor in executors:
            if executor is not None:
                executor.shutdown(wait=True)
        if pool is not None:
            pool.close()

    # -- plumbing ----------------------------------------------------------------------------
    def _name(self, table):
        if not isinstance(table, str) or not table:
            raise InvalidArgument("table name must be a non-empty str")
        name = table.encode("utf-8")
        return (self.table_prefix.encode() + b"_" + name) if self.table_prefix else name

    def _open(self, host, port, timeout_ms=None):
        """A happybase connection to one server, and its Thrift client."""
        kwargs = dict(self._conn_kwargs, timeout=timeout_ms or self._conn_kwargs["timeout"])
        conn = happybase.Connection(host, port, **kwargs)
        return conn, conn.client

    def _get_pool(self):
        with self._pool_lock:
            if self._pool is None:
                self._pool = ServerPool(
                    self._servers, self._open, size=self._pool_size, timeout_ms=self._conn_kwargs["timeout"],
                    retries=self.retries, backoff_s=self.backoff_s, count_call=self.count_call,
                    label="HBase Thrift server",
                    hint="; is the Thrift server running (`hbase thrift start`, or `socorro-store serve`)?")
            self._pool.reopen_idle_s = self.reopen_idle_s  # a connection idle that long is reopened
            return self._pool

    def _call(self, kind, fn, table=None, idempotent=True, server=None, used=None):
        """Run ``fn(client)`` on a pooled connection, retrying as the module docstring says.

        Servers close idle connections (HBase's Thrift server after
        ``hbase.thrift.server.socket.read.timeout``, 60 s by default; ``socorro-store serve`` after
        ``--idle-timeout``, 60 s), and a call sent on a connection the server closed fails after
        it was sent: so a connection idle for ``reopen_idle_s`` (:data:`REOPEN_IDLE_S`) is
        reopened before it is used.
        """
        def timed(client):
            began = time.monotonic()
            try:
                return fn(client)
            finally:
                if kind != "increment_many":  # the time of a call, queueing included
                    self._call_s += 0.05 * (time.monotonic() - began - self._call_s)

        return self._get_pool().run(kind, timed, idempotent=idempotent, answered=_ANSWERED,
                                    translate=lambda exc: translate_error(exc, table), server=server, used=used)

    def _family_names(self, table, refresh=False):
        names = self._families.get(table)
        if names is None or refresh:
            names = set(self.describe_table(table))
            self._families[table] = names
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

    # -- data --------------------------------------------------------------------------------
    def mutate_rows(self, table, mutations, timestamp=None):
        base.check_mutations(mutations)
        base.check_timestamp(timestamp)
        if not mutations:
            return
        columns = [c for m in mutations for c in (*m.puts, *m.deletes)]
        self._check_families(table, columns)
        name = self._name(table)
        batches = [self._batch_mutation(table, m) for m in mutations]
        weights = [sizes.batch_mutation_bytes(b) for b in batches]
        for batch, weight in zip(batches, weights):  # every row is checked before the first call
            self._check_request_size("mutate_rows", table, sizes.request_bytes(name, [weight]), batch.row)
        budget = (self.max_request_bytes or BUFFERED_BATCH_BYTES) - sizes.request_bytes(name, [])
        elements = [1 + len(b.mutations) for b in batches]
        for chunk in sizes.split_by_size(batches, weights, budget, elements):
            if timestamp is None:
                self._call("mutate_rows", lambda c: c.mutateRows(name, chunk, {}), table)
            else:
                self._call("mutate_rows", lambda c: c.mutateRowsTs(name, chunk, timestamp, {}), table)

    def _batch_mutation(self, table, mutation):
        ops = [thrift.Mutation(isDelete=False, column=c, value=v) for c, v in mutation.puts.items()]
        deletes = ([f.encode() for f in sorted(self._family_names(table))] if mutation.delete_row
                   else mutation.deletes)
        ops += [thrift.Mutation(isDelete=True, column=c) for c in deletes]
        return thrift.BatchMutation(row=mutation.row, mutations=ops)

    def check_mutation_size(self, table, mutation):
        base.check_mutations([mutation])
        if self.max_request_bytes is None:
            return
        batch = self._batch_mutation(table, mutation)
        size = sizes.request_bytes(self._name(table), [sizes.batch_mutation_bytes(batch)])
        self._check_request_size("mutate_rows", table, size, mutation.row)

    def _check_request_size(self, kind, table, size, row):
        """Raise :class:`RequestTooLarge` when a request of ``size`` bytes cannot fit a frame."""
        if self.max_request_bytes is None or size <= self.max_request_bytes:
            return
        raise RequestTooLarge(
            f"{kind} of row {row[:60]!r} in table {table!r} needs a request of about {size} bytes, over "
            f"the Thrift server's {self.max_request_bytes}-byte frame limit (max_frame_mb="
            f"{self.max_frame_mb}); raise {FRAME_SETTING} on the server and max_frame_mb in the "
            f"store URL, or use transport=buffered", size=size, limit=self.max_request_bytes,
            setting=FRAME_SETTING)

    def get_rows(self, table, rows, columns=None, timestamp=None, include_timestamp=False):
        rows = list(rows)
        for row in rows:
            base.check_row_key(row)
        base.check_timestamp(timestamp)
        self._check_columns(table, columns)
        if not rows:
            return {}
        name = self._name(table)
        if timestamp is None:
            results = self._call("get_rows", lambda c: c.getRowsWithColumns(name, rows, columns, {}), table)
        else:
            results = self._call("get_rows", lambda c: c.getRowsWithColumnsTs(name, rows, columns, timestamp, {}),
                                 table)
        out = {}
        for result in results:
            out[result.row] = _row_dict(result, include_timestamp)
        return out

    def _check_columns(self, table, columns):
        if base.check_columns(columns) is not None:
            self._check_families(table, columns)

    def get_cells(self, table, row, column, versions=None, timestamp=None):
        base.check_cells_args(row, column, versions, timestamp)
        self._check_families(table, [column])
        name, n = self._name(table), versions or 2**31 - 1
        if timestamp is None:
            cells = self._call("get_cells", lambda c: c.getVer(name, row, column, n, {}), table)
        else:
            cells = self._call("get_cells", lambda c: c.getVerTs(name, row, column, timestamp, n, {}), table)
        return [(cell.value, cell.timestamp) for cell in cells]

    def scan(self, table, start=None, stop=None, prefix=None, columns=None, limit=None,
             reverse=False, timestamp=None, include_timestamp=False, page_size=1000):
        key_range = base.scan_range(start, stop, prefix, reverse)
        base.check_timestamp(timestamp)
        base.check_scan_numbers(limit, page_size)
        self._check_columns(table, columns)
        if columns is None:
            self._family_names(table)  # a missing table fails here, not at the first next()
        return self._scan(table, key_range, columns, limit, reverse, timestamp, include_timestamp, page_size)

    def _scan(self, table, key_range, columns, limit, reverse, timestamp, include_timestamp, page_size):
        """Pages of a scanner.  A fetch is never replayed on the same scanner (a lost reply would
        skip a page); after a transport failure or a forgotten scanner id, a new scanner resumes
        after the last row yielded, up to ``retries`` times in a row.

        A scanner that answered a short page (or none) is exhausted, and is not closed: its
        region scanners are already closed (the region server ends them when it runs out of
        rows), and the Thrift server forgets its id after the scanner timeout (HBase 2's
        handler keeps them in a cache that expires after access; ``socorro-store serve`` after
        120 s).  That saves a round trip on every short scan, such as an empty queue poll (2
        calls instead of 3).  A scanner left before its end (a limit, the caller stopping, an
        error) is closed as before.
        """
        name = self._name(table)
        returned, resume_after, failures = 0, None, 0
        while True:
            scan = _thrift_scan(key_range, reverse, resume_after, columns, timestamp, page_size)
            # a scanner lives in the Thrift server that opened it: its fetches and close go there
            opened_on = []
            scanner = self._call("scan_open", lambda c: c.scannerOpenWithScan(name, scan, {}), table, used=opened_on)
            exhausted = False
            try:
                while True:
                    want = page_size if limit is None else min(page_size, limit - returned)
                    results = self._call("scan", lambda c: c.scannerGetList(scanner, want), table,
                                         idempotent=False, server=opened_on[0])
                    failures = 0
                    exhausted = len(results) < want  # HBase returns a short page only at the end
                    if not results:
                        return
                    for result in results:
                        if result.row == resume_after:
                            continue  # a re-opened scanner starts at the last row yielded
                        if not key_range.contains(result.row):
                            if reverse and key_range.low is not None and result.row < key_range.low:
                                return
                            continue
                        yield result.row, _row_dict(result, include_timestamp)
                        returned += 1
                        resume_after = result.row
                        if limit is not None and returned >= limit:
                            return
                    if exhausted:
                        return
            except (BackendUnavailable, BackendError) as exc:
                forgotten = isinstance(exc, BackendError) and "scanner ID is invalid" in str(exc)
                if not (forgotten or isinstance(exc, BackendUnavailable)) or failures >= self.retries:
                    raise
                failures += 1
                continue
            finally:
                if not exhausted:  # an exhausted scanner holds nothing (see above)
                    try:
                        self._call("scan_close", lambda c: c.scannerClose(scanner), table, server=opened_on[0])
                    except Exception:  # noqa: BLE001 - closing a dead scanner must not mask the result
                        pass

    def increment(self, table, row, column, amount=1):
        inc = base.Increment(table, row, column, amount)
        base.check_increment(inc)
        self._check_families(table, [column])
        family, qualifier = split_column(column)
        name = self._name(table)
        return self._call("increment", lambda c: c.atomicIncrement(name, row, family + b":" + (qualifier or b""),
                                                                   amount), table, idempotent=False)

    def increment_many(self, increments):
        increments = base.check_increments(increments)
        by_table = {}
        for inc in increments:
            by_table.setdefault(inc.table, []).append(inc.column)
        for table, columns in by_table.items():
            self._check_families(table, columns)
        if not increments:
            return
        batch = []
        for inc in increments:
            family, qualifier = split_column(inc.column)
            batch.append(thrift.TIncrement(table=self._name(inc.table), row=inc.row,
                                           column=family + b":" + (qualifier or b""), ammount=inc.amount))
        weights = [sizes.increment_bytes(i) for i in batch]
        for weight, inc in zip(weights, increments):
            self._check_request_size("increment_many", inc.table, sizes.request_bytes(b"", [weight]), inc.row)
        budget = (self.max_request_bytes or BUFFERED_BATCH_BYTES) - sizes.request_bytes(b"", [])
        # Each increment is still sent exactly once: splitting a batch never replays one.
        chunks = [chunk for share in _spread_by_row(batch, weights, self._increment_calls(len(batch)))
                  for chunk in sizes.split_by_size(*share, budget)]
        self._overlap(lambda item: self._increment_rows(item[1]),
                      list(enumerate(chunks)))  # items are (row, ...): the index keeps them in one wave

    def _increment_rows(self, chunk):
        """One ``incrementRows`` call; what it took beyond an ordinary call, per cell, feeds
        :meth:`_increment_calls` (a busy server makes every call slower: that is no reason to
        spread, and would only cost it more requests)."""
        began = time.monotonic()
        self._call("increment_many", lambda c: c.incrementRows(chunk), idempotent=False)
        per_cell = max(0.0, time.monotonic() - began - self._call_s) / len(chunk)
        self._increment_cell_s += 0.2 * (per_cell - self._increment_cell_s)  # a moving average

    @property
    def max_increment_calls(self):
        """The most ``incrementRows`` calls one :meth:`increment_many` is spread over."""
        return self._pool_size

    def _increment_calls(self, cells):
        """How many ``incrementRows`` calls share ``cells`` increments, by their measured cost.

        HBase's Thrift1 handler applies a call's increments one after another, each a
        region-server round trip with its WAL sync (measured: ~1 ms each, so a group's ~100
        cells took ~95 ms in one call); calls on several pooled connections run in parallel.  So
        a batch whose one call would take over :data:`INCREMENT_CALL_S` at the moving average
        of the recent calls' time per cell (beyond what other calls take) is spread over up to ``pool_size`` calls of at least
        :data:`INCREMENTS_PER_CALL` cells.  A server that applies cells in microseconds (``serve``)
        gets one call: more would only cost it more requests.
        """
        wanted = math.ceil(cells * self._increment_cell_s / INCREMENT_CALL_S)
        return max(1, min(self.max_increment_calls, wanted, math.ceil(cells / INCREMENTS_PER_CALL)))

    def check_and_put(self, table, row, column, expected, puts):
        return self.check_and_put_many(table, [(row, column, expected, puts)])[0]

    def _check_and_put_first(self, table, row, column, expected, puts):
        """The checkAndPut RPC of one item: the check and its first cell (Thrift1 takes one)."""
        if not puts:
            raise InvalidArgument("check_and_put needs at least one cell to put")
        (put_column, put_value), *_rest = puts.items()
        mutation = thrift.Mutation(isDelete=False, column=put_column, value=put_value)
        name = self._name(table)
        return self._call("check_and_put", lambda c: c.checkAndPut(name, row, column, expected or None,
                                                                   mutation, {}),
                          table, idempotent=False)

    def mutate_tables(self, mutations_by_table):
        """One ``mutateRows`` per table, overlapped (up to ``pool_size`` in flight)."""
        items = [(table, mutations) for table, mutations in mutations_by_table.items() if mutations]
        self._overlap(lambda item: self.mutate_rows(*item), items)

    def check_and_put_many(self, table, items):
        """The items' checkAndPut calls overlap, up to ``pool_size`` at a time (one RPC each).

        Thrift1's checkAndPut takes one cell: the check and the first put are atomic, the other
        cells follow as an idempotent mutate (see the contract).  The follow-ups of every item a
        wave applied go in one ``mutateRows``, before the next wave (which may check a cell one
        of them puts), instead of one per item.
        """
        items = base.check_check_and_put_items(items)
        for row, column, expected, puts in items:  # an item that cannot fit fails the batch up front
            if not puts:
                raise InvalidArgument("check_and_put needs at least one cell to put")
            self._check_families(table, [column, *puts])
            self._check_check_and_put_size(table, row, column, expected, puts)

        def follow_up(wave):
            rest = [base.RowMutation(item[0], dict(list(item[3].items())[1:]))
                    for item, applied in wave if applied and len(item[3]) > 1]
            if rest:
                self.mutate_rows(table, rest)

        return self._overlap(lambda item: self._check_and_put_first(table, *item), items, after_wave=follow_up)

    def _check_check_and_put_size(self, table, row, column, expected, puts):
        if self.max_request_bytes is None or not puts:
            return
        (put_column, put_value), *rest = puts.items()
        mutation = thrift.Mutation(isDelete=False, column=put_column, value=put_value)
        self._check_request_size("check_and_put", table, sizes.check_and_put_bytes(
            self._name(table), row, column, expected, mutation), row)
        if rest:
            self.check_mutation_size(table, base.RowMutation(row, dict(rest)))

    def _overlap(self, call, items, after_wave=None):
        """``[call(item) for item in items]``, up to ``pool_size`` calls in flight at once.

        Items are ``(row, …)``.  Calls on different rows overlap; calls on one row run in the
        order given (in successive waves), because a later item may depend on an earlier one's
        write (a check-and-put that expects the value an earlier item put).  ``after_wave``,
        given ``[(item, result)]`` of each wave, runs before the next wave starts.
        """
        results = [None] * len(items)
        pending = list(enumerate(items))
        while pending:
            wave, later, rows = [], [], set()
            for index, item in pending:
                (later if item[0] in rows else wave).append((index, item))
                rows.add(item[0])
            if len(wave) <= 1 or self._pool_size == 1:
                outcomes = [call(item) for _index, item in wave]
            else:
                outcomes = list(self._executor_of().map(lambda pair: call(pair[1]), wave))
            for (index, _item), result in zip(wave, outcomes):
                results[index] = result
            if after_wave is not None:
                after_wave([(item, result) for (_index, item), result in zip(wave, outcomes)])
            pending = later
        return results

    def _executor_of(self):
        with self._pool_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._pool_size, thread_name_prefix="hbase-overlap")
            return self._executor

    def overlap(self, calls):
        """The calls run at once, each on its own pooled connections (see the contract).

        They run on an executor of their own: a call that overlaps its items (a
        ``check_and_put_many``) waits for the per-item executor, which must never be held by
        the calls waiting for it.
        """
        if self._pool_size == 1:
            return base.overlap_on(None, calls)
        with self._pool_lock:
            if self._stage_executor is None:
                self._stage_executor = ThreadPoolExecutor(self._pool_size, thread_name_prefix="hbase-stage")
            executor = self._stage_executor
        return base.overlap_on(executor, calls)

    def append(self, table, row, values):
        base.check_append(row, values)
        self._check_families(table, list(values))
        # HBase answers with the Result's cells, in column order and without their names: send
        # the columns sorted, so answer i belongs to column i.
        columns = sorted(values)
        append = thrift.TAppend(table=self._name(table), row=row, columns=columns,
                                values=[values[c] for c in columns])
        self._check_request_size("append", table, sizes.append_bytes(append), row)
        cells = self._call("append", lambda c: c.append(append), table, idempotent=False)
        if len(cells) != len(columns):
            raise BackendError(f"append on {table!r} answered {len(cells)} cells for {len(columns)} columns")
        return {column: cell.value for column, cell in zip(columns, cells)}

    def append_many(self, table, items):
        """The items' append calls overlap, up to ``pool_size`` at a time (one RPC each)."""
        items = base.check_append_items(items)
        if self.max_request_bytes is not None:  # an item that cannot fit fails the batch up front
            for row, values in items:
                append = thrift.TAppend(table=self._name(table), row=row, columns=list(values),
                                        values=list(values.values()))
                self._check_request_size("append", table, sizes.append_bytes(append), row)
        return self._overlap(lambda item: self.append(table, *item), items)
