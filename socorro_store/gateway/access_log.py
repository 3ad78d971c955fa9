"""The gateway's access log (``socorro-store serve --access-log FILE``): one line per Thrift call.

Each line is seven fields separated by single spaces, so ``awk`` and ``cut -d' '`` read it::

    2026-11-24T10:15:02.123Z 127.0.0.1:53412 getRowsWithColumns crash_reports 3 0.8 ok

* time the reply was sent (UTC, milliseconds);
* client: the peer's ``host:port``;
* method: the Thrift1 method (``getRow``, ``mutateRows``, ``scannerGet``, …);
* table: the table the call names (``-`` when it names none: ``getTableNames``, ``scannerGet``,
  ``scannerClose``); bytes that are not printable ASCII, spaces among them, as ``\\xNN``;
* rows: rows returned for a read (``getRow*``, ``scannerGet*``), else rows in the request
  (``mutateRows``: its batches; ``mutateRow``, ``increment``, ``deleteAll*``: 1), else ``-``;
* ms: milliseconds from the decoded request to the reply sent (waiting for the request is not
  counted);
* outcome: ``ok``, or the error the client got: ``IOError``, ``IllegalArgument``,
  ``AlreadyExists``, ``TApplicationException`` (an unknown method, an internal error).

A call is logged after its reply is sent; a request that could not be decoded is not a call and
is not logged (the server logs why it closed that connection).  Writes are serialised by a lock
and flushed per line, so lines of concurrent connections never interleave and ``tail -f`` sees
each call at once.
"""

import sys
import threading
import time
from datetime import datetime, timezone

from ..errors import InvalidArgument
from thriftpy2.thrift import TApplicationException, TType

from .handler import GatewayProcessor, Hbase

# Request arguments that name rows, and how many rows each means.
_ROW_ARGS = (("rowBatches", len), ("rows", len), ("increments", len), ("row", lambda _row: 1))
# Methods whose list result is rows (getRow*, getRows*, scannerGet, scannerGetList).
_ROW_READS = ("getRow", "scannerGet")


def _show(value):
    """A table name or peer as one space-free token (printable ASCII as is, else ``\\xNN``)."""
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if 33 <= b < 127 and b != 0x5C else f"\\x{b:02x}" for b in value) or "-"


class AccessLog:
    """Where the lines go: a file opened for appending (``"-"``: standard output).

    ``clock`` (for tests) returns the wall time in seconds.  :meth:`close` closes the file (never
    standard output).
    """

    def __init__(self, path, clock=time.time):
        if not isinstance(path, str) or not path:
            raise InvalidArgument(f"access log path must be a non-empty string, not {path!r}")
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        # Opened here, not at the first call, so a bad path fails before the server listens.
        self._file = sys.stdout if path == "-" else open(path, "a", encoding="utf-8")  # noqa: SIM115

    def processor(self, handler, sock):
        """A processor for the connection on ``sock`` whose calls go to this log."""
        try:
            host, port = sock.getpeername()[:2]
            client = f"{host}:{port}"
        except (OSError, ValueError, TypeError):  # already gone, or not an IP socket
            client = "-"
        return LoggingProcessor(handler, self, _show(client))

    def write(self, client, method, table, rows, ms, outcome):
        """Append one line (the fields as the module docstring says)."""
        now = datetime.fromtimestamp(self._clock(), tz=timezone.utc)
        line = (f"{now.strftime('%Y-%m-%dT%H:%M:%S')}.{now.microsecond // 1000:03d}Z {client} {method} "
                f"{_show(table) if table is not None else '-'} {'-' if rows is None else rows} {ms:.1f} {outcome}\n")
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self):
        with self._lock:
            if self._file is not sys.stdout and not self._file.closed:
                self._file.close()


class LoggingProcessor(GatewayProcessor):
    """The gateway's processor for one connection, writing one access-log line per call."""

    def __init__(self, handler, access_log, client):
        super().__init__(Hbase.Hbase, handler)
        self.access_log, self.client = access_log, client
        self._call = None  # the call being served (see _entry)

    def process_in(self, iprot):
        # thriftpy2's process_in, keeping the decoded arguments for the log line.
        api, _kind, seqid = iprot.read_message_begin()
        if api not in self._service.thrift_services:
            iprot.skip(TType.STRUCT)
            iprot.read_message_end()
            self._call = _entry(api, None, None)
            return api, seqid, TApplicationException(TApplicationException.UNKNOWN_METHOD), None
        args = getattr(self._service, api + "_args")()
        args.read(iprot)
        iprot.read_message_end()
        result = getattr(self._service, api + "_result")()
        names = [item[1] for item in args.thrift_spec.values()]
        table = getattr(args, "tableName", None) or getattr(getattr(args, "append", None), "table", None)
        rows = next((count(getattr(args, name)) for name, count in _ROW_ARGS
                     if getattr(args, name, None) is not None), None)
        entry = self._call = _entry(api, table, rows, result)

        def call():
            value = getattr(self._handler, api)(*(args.__dict__[name] for name in names))
            if isinstance(value, list) and api.startswith(_ROW_READS):
                entry["rows"] = len(value)
            return value

        return api, seqid, result, call

    def send_exception(self, oprot, api, exc, seqid):
        if self._call is not None:
            self._call["outcome"] = type(exc).__name__
        return super().send_exception(oprot, api, exc, seqid)

    def process(self, iprot, oprot):
        self._call = None
        try:
            super().process(iprot, oprot)
        finally:
            entry, self._call = self._call, None
            if entry is not None:
                ms = (time.monotonic() - entry["started"]) * 1000
                self.access_log.write(self.client, entry["method"], entry["table"], entry["rows"], ms,
                                      _outcome(entry))


def _entry(method, table, rows, result=None):
    # Started once decoded: the wait for the client's next request is not the call's time.
    return {"method": method, "table": table, "rows": rows, "result": result, "started": time.monotonic(),
            "outcome": "ok" if result is not None else "TApplicationException"}


def _outcome(entry):
    """``ok``, the declared exception the reply carries (``IOError``, ``IllegalArgument``, …),
    or ``TApplicationException`` when the reply was one."""
    result = entry["result"]
    if entry["outcome"] == "ok" and result is not None:
        for _tag, (_kind, name, *_rest) in sorted(result.thrift_spec.items()):
            if name != "success" and getattr(result, name, None) is not None:
                return type(getattr(result, name)).__name__
    return entry["outcome"]
