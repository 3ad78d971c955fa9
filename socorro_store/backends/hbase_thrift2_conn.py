"""Connections to HBase's Thrift2 server: a pool, retries, and the typed errors.

A :class:`Thrift2Pool` holds up to ``size`` thriftpy2 clients of ``THBaseService``, opened on
first use.  :meth:`Thrift2Pool.call` runs one RPC on a pooled client:

* A failure to *connect* is always retried (nothing was sent).  A transport failure after the
  request was sent is retried, on a fresh connection with exponential backoff, only when the call
  is idempotent (reads, puts, deletes, admin reads); an increment, append, check-and-put or create
  is never replayed: the caller gets :class:`BackendUnavailable` and the outcome is unknown.
* A connection idle for :data:`REOPEN_IDLE_S` is reopened before it is used: HBase's Thrift
  servers close idle connections after ``hbase.thrift.server.socket.read.timeout`` (60 s), and a
  request sent on a connection the server closed fails only after it was sent.
* A connection that failed in any way is closed, never returned to the pool; one that carried a
  server-side error (``TIOError``) stays usable (the server answered) and goes back.

Errors (:func:`translate_error`): Thrift2 reports Java ``IOException``\\ s as ``TIOError`` whose
message is the exception's message alone, without its class: a missing table is just the
table's name (``TableNotFoundException``'s message), and so is an existing one on create.  So the
caller passes the table's wire name, and a message equal to it is read in the call's context.
Java runtime errors arrive as a bare ``TApplicationException`` (type 6, no detail).
"""

import queue
import socket
import threading
import time

from thriftpy2.protocol import TCompactProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException, TException
from thriftpy2.transport import TTransportException

try:  # the Cython codecs, as happybase uses; the pure-Python ones otherwise
    from thriftpy2.protocol import TCyBinaryProtocolFactory as _Binary
    from thriftpy2.transport import TCyBufferedTransportFactory as _Buffered
    from thriftpy2.transport import TCyFramedTransportFactory as _Framed
except ImportError:  # pragma: no cover - thriftpy2 built without its extensions
    from thriftpy2.protocol import TBinaryProtocolFactory as _Binary
    from thriftpy2.transport import TBufferedTransportFactory as _Buffered
    from thriftpy2.transport import TFramedTransportFactory as _Framed

from ..errors import (
    BackendError,
    BackendUnavailable,
    FamilyNotFound,
    InvalidArgument,
    NotACounter,
    TableDisabled,
    TableExists,
    TableNotFound,
)
from .hbase_thrift2_idl import hbase2

#: Seconds a pooled connection may sit idle before it is reopened (below the servers' 60 s).
REOPEN_IDLE_S = 30.0
_TRANSIENT = (TTransportException, socket.error, OSError, EOFError)


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")


def _first_line(message):
    return message.splitlines()[0] if message else ""


def translate_error(exc, table=None, wire_name=None, creating=False):
    """Map a Thrift2 error to a :mod:`socorro_store.errors` exception.

    ``table`` is the caller's table name, ``wire_name`` the name sent (with the prefix):
    HBase's ``TableNotFoundException`` and ``TableExistsException`` carry only that name.
    ``creating``: the call was a create, where a bare name means the table exists.
    """
    if isinstance(exc, hbase2.TIOError):
        message = _text(exc.message).strip()
        bare = wire_name is not None and message in (_text(wire_name), "default:" + _text(wire_name))
        if "TableExistsException" in message or (creating and bare):
            return TableExists(f"table {table!r} already exists")
        if "TableNotFoundException" in message or bare:
            return TableNotFound(f"table {table!r} does not exist")
        if "NoSuchColumnFamilyException" in message or "Column family" in message:
            return FamilyNotFound(_first_line(message))
        if "is not a long" in message:
            return NotACounter(_first_line(message))
        if "TableNotEnabledException" in message or "is disabled" in message:
            return TableDisabled(_first_line(message))
        if "IllegalArgumentException" in message or "Row length" in message:
            return InvalidArgument(_first_line(message))
        return BackendError(_first_line(message) or "TIOError")
    if isinstance(exc, hbase2.TIllegalArgument):
        return InvalidArgument(_first_line(_text(exc.message)))
    if isinstance(exc, TApplicationException):
        return BackendError(f"Thrift2 server error: {_text(exc.message) or 'internal error'}")
    return BackendError(f"{type(exc).__name__}: {exc}")


def _reason(exc):
    message = getattr(exc, "message", None)
    text = _text(message) if message else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


class _Conn:
    """One client and when it was last used."""

    __slots__ = ("client", "last_used")

    def __init__(self, client):
        self.client, self.last_used = client, time.monotonic()


class Thrift2Pool:
    """Up to ``size`` connections to one Thrift2 server; see the module docstring."""

    def __init__(self, host, port, transport="buffered", protocol="binary", size=4, timeout_ms=30000,
                 retries=3, backoff_s=0.05, count_call=None):
        self.host, self.port, self.size = host, port, size
        self.timeout_ms, self.retries, self.backoff_s = timeout_ms, retries, backoff_s
        self.reopen_idle_s = REOPEN_IDLE_S
        self._trans = _Framed() if transport == "framed" else _Buffered()
        self._proto = TCompactProtocolFactory() if protocol == "compact" else _Binary()
        self._count = count_call or (lambda kind: None)
        self._idle = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._closed = False

    def _open(self):
        return _Conn(make_client(hbase2.THBaseService, self.host, self.port, timeout=self.timeout_ms,
                                 proto_factory=self._proto, trans_factory=self._trans))

    def _borrow(self):
        """A connection, reopened if idle too long; blocks while ``size`` are in use."""
        if not self._slots.acquire(timeout=max(1.0, self.timeout_ms / 1000)):
            raise BackendUnavailable(f"no free connection to {self.host}:{self.port} within "
                                     f"{self.timeout_ms} ms (pool_size={self.size})")
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return self._open()
            if time.monotonic() - conn.last_used >= self.reopen_idle_s:
                conn.client.close()
                return self._open()
            return conn
        except BaseException:
            self._slots.release()
            raise

    def _give_back(self, conn, healthy):
        try:
            if healthy and not self._closed:
                conn.last_used = time.monotonic()
                self._idle.put(conn)
            else:
                conn.client.close()
        finally:
            self._slots.release()

    def call(self, kind, fn, table=None, wire_name=None, idempotent=True, creating=False):
        """``fn(client)`` on a pooled connection, counted as one ``kind`` call; retried as the
        module docstring says; Thrift2 errors raised as :mod:`socorro_store.errors`."""
        delay, last = self.backoff_s, None
        for attempt in range(self.retries + 1):
            conn = None
            try:
                conn = self._borrow()
            except _TRANSIENT as exc:  # could not connect: nothing was sent
                last = exc
            else:
                healthy = False
                try:
                    self._count(kind)
                    result = fn(conn.client)
                    healthy = True
                    return result
                except (hbase2.TIOError, hbase2.TIllegalArgument) as exc:
                    healthy = True  # the server answered; the connection is fine
                    raise translate_error(exc, table, wire_name, creating) from None
                except TApplicationException as exc:
                    healthy = True
                    raise translate_error(exc, table, wire_name, creating) from None
                except (*_TRANSIENT, TException) as exc:
                    last = exc
                    if not idempotent:
                        raise BackendUnavailable(
                            f"{kind} on the Thrift2 server at {self.host}:{self.port} failed after the "
                            f"request was sent ({_reason(exc)}); not retried because it is not "
                            "idempotent") from None
                finally:
                    self._give_back(conn, healthy)
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 2
        raise BackendUnavailable(
            f"cannot reach the HBase Thrift2 server at {self.host}:{self.port} ({kind} failed after "
            f"{self.retries + 1} attempt{'s' if self.retries else ''}: {_reason(last)}); is it running "
            "(`hbase thrift2 start`)?")

    def close(self):
        """Close every idle connection; connections in use are closed when given back."""
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().client.close()
            except queue.Empty:
                return
