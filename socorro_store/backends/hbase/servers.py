"""Several Thrift servers behind one store URL: the list, their health, and a pool over them.

``hbase://H1:P1,H2:P2,...?...`` names every Thrift server of one HBase (a production cluster runs
one per region server host; they are stateless clients of the same HBase, so any of them serves
any call).  Both hbase backends (Thrift1, :mod:`.thrift1`; Thrift2, :mod:`.thrift2_conn`)
hold their connections in a :class:`ServerPool`, and run each call with :meth:`ServerPool.run`:

* **Spread.**  The pool holds up to ``pool_size`` connections over all the servers.  Each call
  goes to the next server in turn (round robin) that is not left out: it reuses an idle
  connection to that server, opens one if the pool has room, or else takes an idle connection to
  another server in turn.  So calls, and the connections they open, spread over the servers.
* **Left out, retried later.**  A server is *down* after a failure to connect to it, or after
  :data:`LEAVE_OUT_AFTER` calls in a row failed on it after they were sent (a reset, a timeout, a
  cut reply).  One such failure alone does not leave it out: a read timeout usually means that
  query was slow, not that the server is gone (a server that is gone refuses the next
  connection, and is left out then).  A call that failed after it was sent closes its
  connection; a reset or a cut reply also closes the server's idle connections (they may be cut
  too: reopening them finds out, before anything is sent).  A down server is left out for
  :data:`RETRY_DOWN_S`, doubled each further time up to :data:`MAX_DOWN_S`; then the next call
  that comes to it in turn tries it again, and a call that works through it makes it *up*.  A
  server that answers with an error (a missing table, a bad argument) answered: it stays up.
  When every server is down, calls still go to the one to retry soonest, so a URL of one server
  behaves exactly as before.
* **Failover.**  The retry rules are the backends' (one set for both): a failure to *connect*
  (nothing was sent) is always retried; a transport failure after the request was sent is retried
  only for idempotent calls (reads, puts, deletes, admin reads); an increment, append,
  check-and-put or create is never replayed: the caller gets :class:`BackendUnavailable` naming
  the server, and the outcome is unknown.  A call makes up to ``retries + 1`` attempts; each goes
  to a server this call has not tried yet while one remains, at once; an attempt on a server the
  call already tried waits an exponential backoff first.  A failure to connect to a server while
  another remains untried costs no attempt (nothing was sent): with ``retries=0`` a call still
  reaches any server that answers.
* **Idle connections** older than :data:`REOPEN_IDLE_S` are reopened before use (HBase's Thrift
  servers close connections idle for ``hbase.thrift.server.socket.read.timeout``, 60 s; a request
  sent on one fails only after it was sent).

:func:`~socorro_store.config.parse_servers` reads the server list of a URL, :meth:`ServerPool.probe` asks each server
once (``socorro-store ping``, ``tables describe``).
"""

import socket
import threading
import time

from thriftpy2.thrift import TException
from thriftpy2.transport import TTransportException

from ...config import DEFAULT_HBASE_PORT as DEFAULT_PORT, parse_servers  # noqa: F401 - re-exported
from ...errors import BackendUnavailable, ConfigError

#: Seconds a server that failed is left out before a call tries it again (doubled per failure).
RETRY_DOWN_S = 1.0
#: The longest a failing server is left out between two tries.
MAX_DOWN_S = 30.0
#: Calls in a row that fail on a server after they were sent before it is left out (one slow
#: query that times out leaves its server in).
LEAVE_OUT_AFTER = 3
#: Seconds a pooled connection may sit idle before it is reopened (below the servers' 60 s).
REOPEN_IDLE_S = 30.0
#: Failures of the connection itself: the server did not answer the request (or never got it).
TRANSIENT = (TTransportException, socket.error, OSError, EOFError, TException)


def server_list(servers=None, host="localhost", port=DEFAULT_PORT):
    """``servers`` (``[(host, port)]``, ``["host:port"]`` or a URL) checked, else ``[(host, port)]``."""
    if servers is None:
        return [(host, int(port))]
    if isinstance(servers, str):
        return parse_servers(servers)
    out = []
    for item in servers:
        out += parse_servers(item) if isinstance(item, str) else [(item[0], int(item[1]))]
    if not out:
        raise ConfigError("an hbase backend needs at least one server")
    return out


class Server:
    """One Thrift server and its health (see the module docstring)."""

    __slots__ = ("host", "port", "failures", "outs", "down_until", "last_error", "calls")

    def __init__(self, host, port):
        self.host, self.port = host, port
        # failures: failed connects and calls in a row; outs: times left out in a row
        self.failures, self.outs, self.down_until, self.last_error, self.calls = 0, 0, 0.0, None, 0

    @property
    def name(self):
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def __repr__(self):
        return f"Server({self.name}, failures={self.failures})"


class ServerList:
    """The servers of one URL: which is next, which are left out.  Thread-safe."""

    def __init__(self, servers, retry_down_s=RETRY_DOWN_S, max_down_s=MAX_DOWN_S):
        self.servers = [Server(h, p) for h, p in servers]
        self.retry_down_s, self.max_down_s = retry_down_s, max_down_s
        self._next = 0
        self._lock = threading.Lock()

    def __len__(self):
        return len(self.servers)

    def names(self):
        return [s.name for s in self.servers]

    def order(self, exclude=()):
        """The servers a call should try, best first: those up, in turn (each call starts one
        further along), then those left out, soonest retry first.  Servers in ``exclude`` (tried
        by this call already) come last, in the same order."""
        now = time.monotonic()
        with self._lock:
            start = self._next
            self._next = (start + 1) % len(self.servers)
        turn = self.servers[start:] + self.servers[:start]
        fresh = [s for s in turn if s not in exclude]
        tried = [s for s in turn if s in exclude]
        out = []
        for group in (fresh, tried):
            out += [s for s in group if s.down_until <= now]
            out += sorted((s for s in group if s.down_until > now), key=lambda s: s.down_until)
        return out

    def is_up(self, server):
        return server.down_until <= time.monotonic()

    def failed(self, server, exc):
        """Connecting to ``server`` failed: leave it out, :data:`RETRY_DOWN_S` doubled per time
        in a row."""
        with self._lock:
            server.failures += 1
            server.last_error = _reason(exc)
            self._leave_out(server)

    def call_failed(self, server, exc):
        """A call failed on ``server`` after it was sent: leave it out once
        :data:`LEAVE_OUT_AFTER` have in a row.  Returns whether it is now left out."""
        with self._lock:
            server.failures += 1
            server.last_error = _reason(exc)
            if server.failures < LEAVE_OUT_AFTER:
                return False
            self._leave_out(server)
            return True

    def _leave_out(self, server):
        server.outs += 1
        pause = min(self.max_down_s, self.retry_down_s * 2 ** (server.outs - 1))
        server.down_until = time.monotonic() + pause

    def succeeded(self, server):
        with self._lock:
            server.calls += 1
            if server.failures or server.down_until:
                server.failures, server.outs, server.down_until = 0, 0, 0.0

    def status(self):
        """``[{"server", "up", "failures", "last_error", "calls"}]``: what this process has seen."""
        return [{"server": s.name, "up": self.is_up(s), "failures": s.failures, "last_error": s.last_error,
                 "calls": s.calls} for s in self.servers]


def _timed_out(exc):
    """Whether a transport failure is a read timeout (the server may only be slow)."""
    return isinstance(exc, TimeoutError) or (
        isinstance(exc, TTransportException) and exc.type == TTransportException.TIMED_OUT)


def _reason(exc):
    message = getattr(exc, "message", None)
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    text = message if message else f"{type(exc).__name__}: {exc}"
    return " ".join(str(text).split())


class PooledConnection:
    """One connection: its server, the object to close, the Thrift client, when last used."""

    __slots__ = ("server", "handle", "client", "last_used")

    def __init__(self, server, handle, client):
        self.server, self.handle, self.client = server, handle, client
        self.last_used = time.monotonic()

    def close(self):
        try:
            self.handle.close()
        except Exception:  # noqa: BLE001 - closing a dead connection must not raise
            pass


class _Idle:
    """Idle connections, the most recently given back last (``queue[-1]``)."""

    def __init__(self):
        self.queue = []


class _ConnectFailed(Exception):
    def __init__(self, server, cause):
        super().__init__(str(cause))
        self.server, self.cause = server, cause


class _NoSlot(Exception):
    pass


class ServerPool:
    """Up to ``size`` connections over the servers of ``servers`` (a :class:`ServerList`).

    ``open_conn(host, port)`` returns ``(handle, client)``: ``handle.close()`` closes it, the
    calls get ``client``.  ``label`` names the kind of server in messages ("HBase Thrift
    server"), ``hint`` ends the message of a call that reached none.  ``count_call(kind)`` is
    called once per request sent.
    """

    def __init__(self, servers, open_conn, size=4, timeout_ms=30000, retries=3, backoff_s=0.05,
                 count_call=None, label="HBase Thrift server", hint=""):
        self.servers = servers if isinstance(servers, ServerList) else ServerList(servers)
        self.open_conn, self.size = open_conn, size
        self.timeout_ms, self.retries, self.backoff_s = timeout_ms, retries, backoff_s
        self.label, self.hint = label, hint
        self.reopen_idle_s = REOPEN_IDLE_S
        self._count = count_call or (lambda kind: None)
        self._idle = _Idle()
        self._open_count = 0
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def where(self):
        """The servers, as messages name them: ``h1:p1`` or ``h1:p1 or h2:p2``."""
        return " or ".join(self.servers.names())

    # -- borrowing -----------------------------------------------------------------------------
    def _take_idle(self, server):
        for i in range(len(self._idle.queue) - 1, -1, -1):
            if self._idle.queue[i].server is server:
                return self._idle.queue.pop(i)
        return None

    def _borrow(self, exclude=(), only=None):
        """A connection to the best server for this call (see the module docstring), or to
        ``only``; blocks while ``size`` are in use.  Raises :class:`_NoSlot` or
        :class:`_ConnectFailed`."""
        if not self._slots.acquire(timeout=max(1.0, self.timeout_ms / 1000)):
            raise _NoSlot(f"no free connection to {self.where} within {self.timeout_ms} ms "
                          f"(pool_size={self.size})")
        try:
            stale = []
            with self._lock:
                order = [only] if only is not None else self.servers.order(exclude)
                target, conn = order[0], self._take_idle(order[0])
                if conn is None and self._open_count >= self.size:
                    for other in order[1:]:  # the pool is full: an idle connection to another server
                        if other in exclude or not self.servers.is_up(other):
                            break
                        conn = self._take_idle(other)
                        if conn is not None:
                            target = other
                            break
                    if conn is None:  # no idle connection that serves: replace one
                        stale.append(self._idle.queue.pop(0))
                        self._open_count -= 1
                if conn is None:
                    self._open_count += 1  # reserved for the connection opened below
            for old in stale:
                old.close()
            if conn is not None:
                if time.monotonic() - conn.last_used < self.reopen_idle_s:
                    return conn
                conn.close()  # idle too long: the server may have closed it; a new one below
            try:
                handle, client = self.open_conn(target.host, target.port)
            except TRANSIENT as exc:
                with self._lock:
                    self._open_count -= 1
                raise _ConnectFailed(target, exc) from None
            except BaseException:
                with self._lock:
                    self._open_count -= 1
                raise
            return PooledConnection(target, handle, client)
        except BaseException:
            self._slots.release()
            raise

    def _give_back(self, conn, healthy):
        try:
            if healthy and not self._closed:
                conn.last_used = time.monotonic()
                with self._lock:
                    self._idle.queue.append(conn)
            else:
                with self._lock:
                    self._open_count -= 1
                conn.close()
        finally:
            self._slots.release()

    def _server_failed(self, server, exc):
        """Connecting to ``server`` failed: leave it out and close its idle connections (its
        other ones are closed as they fail)."""
        self.servers.failed(server, exc)
        self._close_idle(server)

    def _call_failed(self, server, exc):
        """A call failed on ``server`` after it was sent (its connection is closed by the
        caller): count it; close the server's idle connections if it is now left out, or if the
        connection was cut (not just slow)."""
        if self.servers.call_failed(server, exc) or not _timed_out(exc):
            self._close_idle(server)

    def _close_idle(self, server):
        with self._lock:
            dead = [c for c in self._idle.queue if c.server is server]
            self._idle.queue = [c for c in self._idle.queue if c.server is not server]
            self._open_count -= len(dead)
        for conn in dead:
            conn.close()

    # -- calls ---------------------------------------------------------------------------------
    def run(self, kind, fn, idempotent=True, answered=(), translate=None, server=None, used=None):
        """``fn(client)`` on a pooled connection, counted as one ``kind`` call, retried and failed
        over as the module docstring says.  An exception in ``answered`` means the server
        answered with an error: the connection stays usable and ``translate(exc)`` is raised.

        ``server``: run on that server only, never failed over (a Thrift1 scanner lives in the
        Thrift server that opened it: its fetches must go there); ``used``: a list the server
        that answered is appended to (where a scanner was opened)."""
        delay, last, tried, attempt = self.backoff_s, None, [], 0
        while True:
            conn = None
            try:
                conn = self._borrow(tried, only=server)
            except _NoSlot as exc:
                last = exc
            except _ConnectFailed as exc:  # nothing was sent
                last = exc.cause
                self._server_failed(exc.server, exc.cause)
                first_try = exc.server not in tried
                tried.append(exc.server)
                if server is None and first_try and len(set(tried)) < len(self.servers):
                    continue  # another server is untried: at once, and no attempt spent
            else:
                on, healthy = conn.server, False
                if on not in tried:
                    tried.append(on)
                try:
                    self._count(kind)
                    result = fn(conn.client)
                    healthy = True
                    self.servers.succeeded(on)
                    if used is not None:
                        used.append(on)
                    return result
                except answered as exc:
                    healthy = True  # the server answered; the connection is fine
                    self.servers.succeeded(on)
                    raise (translate(exc) if translate else exc) from None
                except TRANSIENT as exc:
                    last = exc
                    self._call_failed(on, exc)
                    if not idempotent:
                        raise BackendUnavailable(
                            f"{kind} on the {self.label} at {on.name} failed after the request was "
                            f"sent ({_reason(exc)}); not retried because it is not idempotent") from None
                finally:
                    self._give_back(conn, healthy)
            if attempt >= self.retries:
                break
            attempt += 1
            if server is not None or len(set(tried)) >= len(self.servers):  # no untried server: back off first
                time.sleep(delay)
                delay *= 2
        plural = "s" if attempt else ""
        raise BackendUnavailable(
            f"cannot reach the {self.label} at {self.where} ({kind} failed after {attempt + 1} "
            f"attempt{plural}: {_reason(last)}){self.hint}")

    def probe(self, fn, timeout_ms=None):
        """Ask every server once, each on a fresh connection: ``[{"server", "ok", "ms", "answer"
        or "error"}]``, in the URL's order.  A server that answers is up again; one that refuses
        the connection is left out, one that does not answer counts a failed call (as calls
        do)."""
        out = []
        for server in self.servers.servers:
            began, handle = time.monotonic(), None
            try:
                try:
                    handle, client = self.open_conn(server.host, server.port, timeout_ms=timeout_ms)
                except TRANSIENT as exc:
                    self._server_failed(server, exc)
                    raise
                try:
                    answer = fn(client)
                except TRANSIENT as exc:
                    self._call_failed(server, exc)
                    raise
            except TRANSIENT as exc:
                out.append({"server": server.name, "ok": False, "error": _reason(exc)})
            else:
                self.servers.succeeded(server)
                out.append({"server": server.name, "ok": True, "answer": answer})
            finally:
                if handle is not None:
                    try:
                        handle.close()
                    except Exception:  # noqa: BLE001
                        pass
            out[-1]["ms"] = round((time.monotonic() - began) * 1000, 1)
        return out

    def close(self):
        """Close every idle connection; connections in use are closed when given back."""
        self._closed = True
        with self._lock:
            idle, self._idle.queue = self._idle.queue, []
            self._open_count -= len(idle)
        for conn in idle:
            conn.close()
