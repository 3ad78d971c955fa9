"""Connections to HBase's Thrift2 servers: a pool, retries, and the typed errors.

A :class:`Thrift2Pool` is a :class:`~.servers.ServerPool` of thriftpy2 clients of
``THBaseService`` over the URL's servers (``hbase://H1:P1,H2:P2?api=thrift2``), opened on first
use.  :meth:`Thrift2Pool.call` runs one RPC on a pooled client with the rules of
:mod:`.servers` (the same as Thrift1's): a failure to connect is always retried, on another
server when there is one; a transport failure after the request was sent is retried (failed
over) only for idempotent calls; an increment, append, check-and-put or create is never
replayed (:class:`BackendUnavailable`, outcome unknown); a server that refuses a
connection, or fails several calls in a row, is left out and tried again later; a connection
idle for :data:`REOPEN_IDLE_S` is reopened before use; one that carried a server-side error
(``TIOError``) stays usable (the server answered).

Errors (:func:`translate_error`): Thrift2 reports Java ``IOException``\\ s as ``TIOError`` whose
message is the exception's message alone, without its class: a missing table is just the
table's name (``TableNotFoundException``'s message), and so is an existing one on create.  So the
caller passes the table's wire name, and a message equal to it is read in the call's context.
Java runtime errors arrive as a bare ``TApplicationException`` (type 6, no detail).
"""

from thriftpy2.protocol import TCompactProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException

try:  # the Cython codecs, as happybase uses; the pure-Python ones otherwise
    from thriftpy2.protocol import TCyBinaryProtocolFactory as _Binary
    from thriftpy2.transport import TCyBufferedTransportFactory as _Buffered
    from thriftpy2.transport import TCyFramedTransportFactory as _Framed
except ImportError:  # pragma: no cover - thriftpy2 built without its extensions
    from thriftpy2.protocol import TBinaryProtocolFactory as _Binary
    from thriftpy2.transport import TBufferedTransportFactory as _Buffered
    from thriftpy2.transport import TFramedTransportFactory as _Framed

from ...errors import (
    BackendError,
    FamilyNotFound,
    InvalidArgument,
    NotACounter,
    TableDisabled,
    TableExists,
    TableNotFound,
)
from .servers import REOPEN_IDLE_S, ServerList, ServerPool, server_list
from .thrift2_idl import hbase2

__all__ = ["REOPEN_IDLE_S", "Thrift2Pool", "translate_error"]


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


class Thrift2Pool(ServerPool):
    """Up to ``size`` connections over the Thrift2 servers ``servers`` (default ``[(host, port)]``);
    see the module docstring."""

    def __init__(self, host, port, transport="buffered", protocol="binary", size=4, timeout_ms=30000,
                 retries=3, backoff_s=0.05, count_call=None, servers=None):
        self.host, self.port = host, port
        self._trans = _Framed() if transport == "framed" else _Buffered()
        self._proto = TCompactProtocolFactory() if protocol == "compact" else _Binary()
        super().__init__(servers if isinstance(servers, ServerList) else ServerList(server_list(servers, host, port)),
                         self._open, size=size, timeout_ms=timeout_ms, retries=retries, backoff_s=backoff_s,
                         count_call=count_call, label="HBase Thrift2 server", hint="; is it running (`hbase thrift2 start`)?")

    def _open(self, host, port, timeout_ms=None):
        client = make_client(hbase2.THBaseService, host, port, timeout=timeout_ms or self.timeout_ms,
                             proto_factory=self._proto, trans_factory=self._trans)
        return client, client

    def call(self, kind, fn, table=None, wire_name=None, idempotent=True, creating=False):
        """``fn(client)`` on a pooled connection, counted as one ``kind`` call; retried and failed
        over as the module docstring says; Thrift2 errors raised as :mod:`socorro_store.errors`."""
        return self.run(kind, fn, idempotent=idempotent,
                        answered=(hbase2.TIOError, hbase2.TIllegalArgument, TApplicationException),
                        translate=lambda exc: translate_error(exc, table, wire_name, creating))
