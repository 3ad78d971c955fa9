"""The embedded search engine: Super Search on one SQLite file (stdlib ``sqlite3``, opened through :mod:`socorro_store.engine.sqlite_files`).

``EmbeddedSearch(path)`` keeps its documents in the file at ``path`` (created 0600 with its
directory; WAL mode, so many readers go on while one writer indexes).  The schema and the query
translation are in :mod:`.embedded_sql`.  Thread-safe: a search takes a reader connection from
a small pool (a threaded web server starts a thread per request, so not one per thread); writes
are serialized by a lock and ``BEGIN IMMEDIATE`` (also across processes).

**Time budget.** A search runs at most ``budget_seconds`` (default 10 s): a SQLite progress
handler and the Python predicates (``~ ^ $ @``, negations) check the clock, and a query past it
is stopped and raises :class:`~socorro_store.errors.SearchParameterError` with parameter
``"query"`` ("too expensive"), the API's 400.  A huge list of values is one JSON parameter (no
SQL of unbounded size).  An ``@`` pattern runs over its field's distinct values in a forked child
process killed at the deadline (:mod:`.embedded_regex`): one call of Python's backtracking ``re``
cannot be interrupted in process.

**Durability.** ``index`` and ``delete`` commit before returning; with ``sync="normal"`` (WAL,
the store's default) a commit survives a killed process, with ``sync="full"`` also power loss.
"""

import contextlib
import json
import os
import threading
import time
from datetime import datetime

from ..engine.sqlite_files import SQLiteError, SQLiteOperationalError, connect_wal
from ..errors import SearchParameterError, SearchUnavailable
from . import embedded_sql as q
from .contract import MAX_FACETS_SIZE, SearchEngine, empty_response
from .fields import FIELDS, analyze, check_document

BUSY_TIMEOUT_MS = 30000
#: SQLite virtual-machine steps between two checks of the clock
_PROGRESS_STEPS = 20000
#: reader connections kept open between searches
_IDLE_READERS = 8


class EmbeddedSearch(SearchEngine):
    """The search engine in one SQLite file at ``path`` (see the module docstring)."""

    def __init__(self, path, sync="normal", budget_seconds=10.0):
        self.path = os.path.abspath(os.fspath(path))
        self.url = "embedded://" + self.path
        self.sync = "FULL" if sync == "full" else "NORMAL"
        self.budget_seconds = budget_seconds
        self._connections = []                 # every open connection (closed by close())
        self._idle = []                        # readers not in use
        self._lock = threading.Lock()          # guards _connections, _idle and _closed
        self._write_lock = threading.Lock()
        self._closed = False
        self._ids = {}                          # field -> {value: id}; ids never change (embedded_sql)
        try:
            parent = os.path.dirname(self.path)
            os.makedirs(parent, mode=0o700, exist_ok=True)
            if not os.path.exists(self.path):
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._writer = self._connect()
            conn = self._writer[0]
            fingerprint = q.analyzer_fingerprint()
            if not self._schema_current(conn, fingerprint):  # else no write lock just to open
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for statement in q.schema_sql():
                        conn.execute(statement)
                    self._add_new_fields(conn)
                    row = conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
                    if row is None or row[0] != fingerprint:
                        q.rebuild_tokens(conn)
                        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('analyzer', ?)",
                                     (fingerprint,))
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            self._analyzed = self._since_analyze = None  # read by the first index()
        except (OSError, SQLiteError) as exc:
            self.close()
            raise SearchUnavailable(f"search index {self.path}: {exc}") from None

    # --- connections ---------------------------------------------------------------------

    def _connect(self):
        conn = connect_wal(self.path, BUSY_TIMEOUT_MS, self.sync)
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute("PRAGMA cache_size=-32768")
        conn.execute("PRAGMA mmap_size=268435456")
        ctx_holder = {"ctx": None}
        conn.create_function("spred", 2, lambda key, value: ctx_holder["ctx"].call(key, value),
                             deterministic=True)
        with self._lock:
            if self._closed:
                conn.close()
                raise SearchUnavailable(f"search index {self.path} is closed")
            self._connections.append((conn, ctx_holder))
        return conn, ctx_holder

    @contextlib.contextmanager
    def _reading(self):
        """A reader connection and its predicate holder, for this call only: a pool, not one per
        thread, since a threaded web server starts a thread per request."""
        with self._lock:
            if self._closed:
                raise SearchUnavailable(f"search index {self.path} is closed")
            pair = self._idle.pop() if self._idle else None
        if pair is None:
            try:
                pair = self._connect()
            except SQLiteError as exc:
                raise SearchUnavailable(f"search index {self.path}: {exc}") from None
        try:
            yield pair
        finally:
            with self._lock:
                keep = not self._closed and len(self._idle) < _IDLE_READERS
                if keep:
                    self._idle.append(pair)
                elif pair in self._connections:
                    self._connections.remove(pair)
            if not keep:
                pair[0].close()

    @staticmethod
    def _schema_current(conn, fingerprint):
        """Whether the file has every table, index and column, and tokens of this analyzer."""
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        expected = {statement.split(" IF NOT EXISTS ")[1].split()[0] for statement in q.schema_sql()}
        if not expected <= names:
            return False
        have = {row[1] for row in conn.execute("PRAGMA table_info(docs)")}
        if not all(q.col(name) in have for name in FIELDS if name != "uuid"):
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
        return row is not None and row[0] == fingerprint

    def _add_new_fields(self, conn):
        """Columns and tables of fields added since the file was made (their values come with a
        reindex)."""
        have = {row[1] for row in conn.execute("PRAGMA table_info(docs)")}
        for field in FIELDS.values():
            if field.name != "uuid" and q.col(field.name) not in have:
                conn.execute(f"ALTER TABLE docs ADD COLUMN {q.col(field.name)} INTEGER")
                if field.type == "date":
                    conn.execute(f"ALTER TABLE docs ADD COLUMN t_{field.name} TEXT")

    def close(self):
        with self._lock:
            self._closed = True
            connections, self._connections, self._idle = self._connections, [], []
        for conn, _ctx in connections:
            try:
                conn.close()
            except SQLiteError:
                pass

    # --- writes --------------------------------------------------------------------------

    def index(self, documents):
        """Add or replace ``documents`` in one transaction.  A document that is not a
        :func:`~.fields.document_of` dict (no ``uuid``, an unknown field, a value of the wrong
        type) raises :class:`~socorro_store.errors.InvalidArgument` and nothing is written."""
        rows = [check_document(doc) for doc in documents]
        if not rows:
            return
        with self._write_lock:
            conn = self._writer_conn()
            try:
                if self._analyzed is None:
                    # documents at the last ANALYZE, kept in the file: processes that each index a
                    # little (a reindex, short-lived feeders) still refresh the statistics
                    row = conn.execute("SELECT value FROM meta WHERE key = 'analyzed'").fetchone()
                    self._analyzed = int(row[0]) if row else 0
                    held = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
                    self._since_analyze = max(0, held - self._analyzed)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    values = [self._row(conn, doc) for doc in rows]
                    conn.executemany(_UPSERT, values)
                    conn.execute("COMMIT")
                    self._since_analyze += len(values)
                except BaseException:
                    self._ids.clear()  # ids given in the rolled-back transaction are void
                    conn.execute("ROLLBACK")
                    raise
                if self._since_analyze >= max(10_000, self._analyzed):
                    self._analyze(conn)
            except SQLiteError as exc:
                raise SearchUnavailable(f"search index {self.path}: {exc}") from None

    def _analyze(self, conn):
        """Refresh the planner's statistics each time the index has about doubled: with none,
        SQLite drives a 3-filter query from the least selective (field, date) index (platform
        rather than version); a full ``ANALYZE docs`` takes about 0.5 s at a million documents."""
        conn.execute("PRAGMA analysis_limit=0")
        conn.execute("ANALYZE docs")
        self._analyzed = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        self._since_analyze = 0
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('analyzed', ?)", (str(self._analyzed),))

    def delete(self, crash_ids):
        ids = [crash_ids] if isinstance(crash_ids, str) else list(crash_ids)
        if not ids:
            return
        with self._write_lock:
            conn = self._writer_conn()
            try:
                # one statement per id, not a JSON list: SQLite's JSON cuts a string at a NUL, so
                # deleting "a\x00b" would delete "a"
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany("DELETE FROM docs WHERE uuid = ?", [(crash_id,) for crash_id in ids])
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except SQLiteError as exc:
                raise SearchUnavailable(f"search index {self.path}: {exc}") from None

    def _writer_conn(self):
        if self._closed:
            raise SearchUnavailable(f"search index {self.path} is closed")
        return self._writer[0]

    def _row(self, conn, doc):
        row = [doc["uuid"]]
        for field in _COLUMN_FIELDS:
            value = doc.get(field.name)
            if value is None:
                row.append(None)
                if field.type == "date":
                    row.append(None)
            elif q.interned(field):
                row.append(self._id_of(conn, field, value))
            elif field.type == "date":
                us = q.micros(_parse_date(value))
                row += [us, None if q.canonical_date(us) == value else value]
            else:
                row.append(int(value))
        return row

    def _id_of(self, conn, field, value):
        cache = self._ids.setdefault(field.name, {})
        found = cache.get(value)
        if found is not None:
            return found
        table = f"v_{field.name}"
        row = conn.execute(f"SELECT id FROM {table} WHERE value = ?", (value,)).fetchone()
        if row is None:
            found = conn.execute(f"INSERT INTO {table} (value) VALUES (?)", (value,)).lastrowid
            if field.type == "text":
                conn.executemany(f"INSERT OR IGNORE INTO k_{field.name} (token, vid) VALUES (?, ?)",
                                 [(token, found) for token in set(analyze(value))])
        else:
            found = row[0]
        if len(cache) > 200_000:
            cache.clear()
        cache[value] = found
        return found

    # --- reads ---------------------------------------------------------------------------

    def count(self):
        try:
            with self._reading() as (conn, _ctx):
                return conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        except SQLiteError as exc:
            raise SearchUnavailable(f"search index {self.path}: {exc}") from None

    def crash_ids(self, start=None, end=None):
        """The ids of the documents whose ``date`` is in ``[start, end)`` (None: unbounded)."""
        where, params = [], []
        if start is not None:
            where.append("c_date >= ?")
            params.append(q.micros(start))
        if end is not None:
            where.append("c_date < ?")
            params.append(q.micros(end))
        sql = "SELECT uuid FROM docs" + (" WHERE " + " AND ".join(where) if where else "")
        try:
            with self._reading() as (conn, _ctx):
                return [row[0] for row in conn.execute(sql, params).fetchall()]
        except SQLiteError as exc:
            raise SearchUnavailable(f"search index {self.path}: {exc}") from None

    def stats(self):
        """``{"documents": N, "bytes": B}``: B is the file's size with its WAL and shared memory."""
        size = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                size += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        return {"documents": self.count(), "bytes": size}

    def search(self, query):
        """Answer ``query`` (semantics: :mod:`.contract`).  A query past the time budget raises
        SearchParameterError("query", "too expensive ...")."""
        if not 0 <= query.facets_size <= MAX_FACETS_SIZE:
            raise SearchParameterError("_facets_size", f"must be 0 to {MAX_FACETS_SIZE}")
        if query.results_number < 0 or query.results_offset < 0:
            raise SearchParameterError("_results_number", "must not be negative")
        with self._reading() as (conn, holder):
            return self._search(conn, holder, query)

    def _search(self, conn, holder, query):
        deadline = time.monotonic() + self.budget_seconds

        def expired():
            return time.monotonic() > deadline
        ctx = holder["ctx"] = q.Context(expired)
        where, params = q.where_sql(query.filters, ctx)
        order, select = _order_sql(query), _select_sql(query.columns)
        conn.set_progress_handler(lambda: 1 if expired() else 0, _PROGRESS_STEPS)
        try:
            conn.execute("BEGIN")
            try:
                q.resolve_regexes(conn, ctx, deadline)
                conn.execute("DROP TABLE IF EXISTS temp.m")
                conn.execute("CREATE TEMP TABLE m (id INTEGER PRIMARY KEY)")
                total = conn.execute(f"INSERT INTO temp.m SELECT d.id FROM docs d WHERE {where}", params).rowcount
                response = empty_response()
                response["total"] = total
                if query.results_number and query.results_offset < total:
                    # the page's ids first, then their columns: a select sorted whole would read
                    # every matched crash's column values (dictionary look-ups) before the LIMIT
                    ids = [row[0] for row in conn.execute(
                        f"SELECT d.id FROM docs d WHERE d.id IN temp.m ORDER BY {order} LIMIT ? OFFSET ?",
                        (min(query.results_number, total), query.results_offset))]
                    rows = {row[0]: row for row in conn.execute(
                        f"SELECT {select} FROM docs d WHERE d.id IN (SELECT value FROM json_each(?))",
                        (json.dumps(ids),))}
                    response["hits"] = [_hit(query.columns, rows[i]) for i in ids]
                response["facets"] = q.Aggregator(conn, query.facets_size).run(query.facets)
                conn.execute("DROP TABLE temp.m")
            finally:
                # read-only, so end it either way; an interrupted statement may have ended it
                # already, and a connection must go back to the pool outside any transaction
                conn.set_progress_handler(None, 0)
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        except (SQLiteOperationalError, q.Budget) as exc:
            if expired() or isinstance(exc, q.Budget) or "interrupted" in str(exc):
                raise SearchParameterError(
                    "query", f"too expensive: stopped after {self.budget_seconds:g} s") from None
            raise SearchUnavailable(f"search index {self.path}: {exc}") from None
        except SQLiteError as exc:
            raise SearchUnavailable(f"search index {self.path}: {exc}") from None
        finally:
            conn.set_progress_handler(None, 0)
            holder["ctx"] = None
        return response


_COLUMN_FIELDS = [field for field in FIELDS.values() if field.name != "uuid"]
_COLUMNS = ["uuid"] + [name for field in _COLUMN_FIELDS
                       for name in ([q.col(field.name)] + ([f"t_{field.name}"] if field.type == "date" else []))]
_UPSERT = (f"INSERT INTO docs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
           "ON CONFLICT (uuid) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:]))


def _value_sql(name):
    """SQL giving the stored value of field ``name`` of ``docs d`` in a sortable form."""
    field = FIELDS.get(name)
    if field is None:
        raise SearchParameterError("_columns", f"{name}: no such field")
    if name == "uuid":
        return "d.uuid"
    if q.interned(field):
        return f"(SELECT value FROM v_{name} WHERE id = d.{q.col(name)})"
    return f"d.{q.col(name)}"


def _select_sql(columns):
    parts = ["d.id"]
    for name in columns:
        parts.append(_value_sql(name))
        if FIELDS[name].type == "date":
            parts.append(f"d.t_{name}")
    return ", ".join(parts)


def _order_sql(query):
    keys = []
    for name, descending in query.sort:
        if name not in FIELDS:
            raise SearchParameterError("_sort", f"{name}: no such field")
        keys.append(f"{_value_sql(name)} {'DESC' if descending else 'ASC'} NULLS LAST")
    if "uuid" not in {name for name, _desc in query.sort}:
        keys.append("d.uuid")
    return ", ".join(keys)


def _hit(columns, row):
    hit, i = {}, 1
    for name in columns:
        field, value = FIELDS[name], row[i]
        i += 1
        if field.type == "date":
            text = row[i]
            i += 1
            value = None if value is None else (text or q.canonical_date(value))
        elif field.type == "boolean" and value is not None:
            value = bool(value)
        hit[name] = value
    return hit


def _parse_date(value):
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return when
