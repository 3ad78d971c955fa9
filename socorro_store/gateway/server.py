"""The gateway's Thrift server: a bounded thread pool, one worker per connection, as HBase's
default ``TBoundedThreadPoolServer``.

* Transports: buffered (HBase's default) or framed, whose frames may not exceed
  ``max_frame_bytes`` (``hbase.regionserver.thrift.framed.max_frame_size_in_mb``, 2 MB);
  protocols: binary (default) or compact.  A client must use the same pair.
* A connection idle for ``idle_timeout_s`` between calls (or stalled inside one) is closed
  (``hbase.thrift.server.socket.read.timeout``, 60 s).
* At most ``max_workers`` connections are served at once; up to ``max_queued`` more wait; beyond
  that new connections are closed at once ("the server starts dropping connections").
* Garbage or truncated bytes end only the connection that sent them.
* A request declaring more than ``max_request_elements`` list/set elements and map entries in
  total is refused as it is decoded (``wire.py``): the client gets a
  ``TApplicationException(PROTOCOL_ERROR)`` and the connection is closed, so one request cannot
  make the server hold a hundred times its size in decoded objects.
* :meth:`GatewayServer.stop` (SIGTERM/SIGINT under :func:`serve`) stops accepting, lets calls in
  flight finish and reply, closes idle connections, then returns; :func:`serve` closes the engine.
* Only loopback addresses unless ``allow_remote``: the protocol has no authentication.
"""

import logging
import select
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from thriftpy2.protocol import TCompactProtocolFactory, TCyBinaryProtocolFactory
from thriftpy2.transport import TCyBufferedTransport, TTransportException

from ..checks import is_loopback
from ..errors import InvalidArgument
from .handler import GatewayProcessor, Hbase, HbaseHandler
from .wire import (
    MAX_REQUEST_ELEMENTS,
    GuardedBinaryProtocolFactory,
    GuardedCompactProtocolFactory,
    TooManyElements,
)

log = logging.getLogger(__name__)

TRANSPORTS = ("buffered", "framed")
PROTOCOLS = ("binary", "compact")
MAX_BUFFERED_REQUEST = 256 * 1024 * 1024  # buffered mode has no frame limit; bound garbage anyway
_POLL_S = 0.2  # how quickly an idle worker notices stop()
_RECV_CHUNK = 256 * 1024


class _ClientSocket:
    """The byte stream under thriftpy2's transport for one connection.

    It waits for the next request with short polls (so stop() and the idle timeout are noticed
    without breaking a request half-read), removes framing and enforces the frame limit.
    """

    def __init__(self, sock, server):
        self.sock, self.server = sock, server
        self.framed = server.transport == "framed"
        self.awaiting = True
        self.frame_left = 0
        self.request_bytes = 0
        self.out = []
        self.pending, self.pending_at = b"", 0  # bytes received but not yet handed to thriftpy2
        self.poller = select.poll()
        self.poller.register(sock, select.POLLIN | select.POLLPRI)
        sock.settimeout(server.idle_timeout_s)

    def _wait_for_request(self):
        if self.pending_at < len(self.pending):  # the next request is already here (pipelined)
            self.awaiting = False
            self.request_bytes = 0
            return
        deadline = time.monotonic() + self.server.idle_timeout_s
        while True:
            if self.server.stopping:
                raise TTransportException(TTransportException.END_OF_FILE, "server stopping")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TTransportException(TTransportException.TIMED_OUT, "idle timeout")
            if self.poller.poll(min(remaining, _POLL_S) * 1000):
                break
        self.awaiting = False
        self.request_bytes = 0

    def _recv(self, size):
        """Up to ``size`` bytes, from a local buffer refilled 256 KB at a time (one syscall per
        chunk instead of one per 4 KB the transport asks for)."""
        if self.pending_at >= len(self.pending):
            try:
                self.pending = self.sock.recv(_RECV_CHUNK)
            except socket.timeout:
                raise TTransportException(TTransportException.TIMED_OUT, "read timed out") from None
            except OSError as exc:
                raise TTransportException(TTransportException.END_OF_FILE, str(exc)) from None
            self.pending_at = 0
            if not self.pending:
                raise TTransportException(TTransportException.END_OF_FILE, "connection closed")
            self.request_bytes += len(self.pending)
            if not self.framed and self.request_bytes > MAX_BUFFERED_REQUEST:
                raise TTransportException(TTransportException.UNKNOWN, "request too large")
        start = self.pending_at
        self.pending_at = min(start + size, len(self.pending))
        return self.pending[start:self.pending_at]

    def read(self, size):
        if self.awaiting:
            self._wait_for_request()
        if not self.framed:
            return self._recv(size)
        if self.frame_left == 0:
            header = b""
            while len(header) < 4:
                header += self._recv(4 - len(header))
            frame = int.from_bytes(header, "big", signed=True)
            if frame <= 0 or frame > self.server.max_frame_bytes:
                raise TTransportException(TTransportException.UNKNOWN,
                                          f"frame size {frame} outside 1..{self.server.max_frame_bytes}")
            self.frame_left = frame
        data = self._recv(min(size, self.frame_left))
        self.frame_left -= len(data)
        return data

    def discard_frame(self):
        """Read and drop the rest of the current frame (at most ``max_frame_bytes``), so a client
        that sent it whole reads the error reply before the close, not a reset.  Buffered
        requests have no known end: their connection is closed as is."""
        try:
            while self.framed and self.frame_left > 0:
                self.frame_left -= len(self._recv(min(self.frame_left, _RECV_CHUNK)))
        except TTransportException:
            pass

    def write(self, data):
        self.out.append(data)

    def flush(self):
        data = b"".join(self.out)
        self.out = []
        if self.framed:
            data = len(data).to_bytes(4, "big") + data
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise TTransportException(TTransportException.END_OF_FILE, str(exc)) from None

    def is_open(self):
        return True

    def open(self):
        pass

    def close(self):
        self.sock.close()


def check_listen_address(host, allow_remote):
    """Refuse a non-loopback ``host`` unless ``allow_remote``: Thrift1 has no authentication."""
    if not allow_remote and not is_loopback(host):
        raise InvalidArgument(f"refusing to listen on non-loopback address {host!r}: the Thrift "
                              "protocol has no authentication (pass allow_remote / --allow-remote)")


class GatewayServer:
    """A listening Thrift1 server over ``engine``.  Construct, then :meth:`serve_forever`.

    ``access_log``: set to an :class:`~.access_log.AccessLog` before :meth:`serve_forever` to log
    one line per call (``serve --access-log``).
    """

    access_log = None

    def __init__(self, engine, host="127.0.0.1", port=9090, transport="buffered", protocol="binary",
                 allow_remote=False, max_frame_bytes=2 * 1024 * 1024, idle_timeout_s=60,
                 max_workers=32, max_queued=1000, max_request_elements=MAX_REQUEST_ELEMENTS):
        if transport not in TRANSPORTS:
            raise InvalidArgument(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
        if protocol not in PROTOCOLS:
            raise InvalidArgument(f"protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidArgument(f"port must be 0..65535, not {port!r}")
        for label, value in (("max_frame_bytes", max_frame_bytes), ("idle_timeout_s", idle_timeout_s),
                             ("max_workers", max_workers), ("max_request_elements", max_request_elements)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise InvalidArgument(f"{label} must be positive, not {value!r}")
        if not isinstance(max_queued, int) or max_queued < 0:
            raise InvalidArgument(f"max_queued must be >= 0, not {max_queued!r}")
        check_listen_address(host, allow_remote)
        self.engine = engine
        self.host, self.transport, self.protocol = host, transport, protocol
        self.max_frame_bytes, self.idle_timeout_s = int(max_frame_bytes), float(idle_timeout_s)
        self.max_workers, self.max_queued = int(max_workers), max_queued
        self.stopping = False
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._open = set()  # accepted sockets not yet closed
        self._listener = self._listen(host, port)
        self.port = self._listener.getsockname()[1]
        self.handler = HbaseHandler(engine, host, self.port)
        self.processor = GatewayProcessor(Hbase.Hbase, self.handler)
        # Requests are decoded by guarded protocols (see wire.py); replies use the fastest encoder.
        self.max_request_elements = int(max_request_elements)
        if protocol == "binary":
            self._readers = GuardedBinaryProtocolFactory(self.max_request_elements)
            self._writers = TCyBinaryProtocolFactory()
        else:
            self._readers = GuardedCompactProtocolFactory(self.max_request_elements)
            self._writers = TCompactProtocolFactory()

    @staticmethod
    def _listen(host, port):
        try:
            family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
            listener = socket.socket(family, kind, proto)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(address)
            listener.listen(128)
        except OSError as exc:
            raise InvalidArgument(f"cannot listen on {host}:{port}: {exc}") from None
        return listener

    def serve_forever(self):
        """Accept and serve connections until :meth:`stop`; then drain and return."""
        pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="gateway")
        try:
            while not self.stopping:
                ready, _, _ = select.select([self._listener], [], [], _POLL_S)
                if not ready or self.stopping:
                    continue
                try:
                    sock, _peer = self._listener.accept()
                except OSError:
                    continue
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self._lock:
                    if len(self._open) >= self.max_workers + self.max_queued:
                        sock.close()
                        log.warning("dropping connection: %d connections open", len(self._open))
                        continue
                    self._open.add(sock)
                pool.submit(self._serve_connection, sock)
        finally:
            self._listener.close()
            pool.shutdown(wait=True, cancel_futures=True)
            with self._lock:
                leftovers, self._open = list(self._open), set()
            for sock in leftovers:
                sock.close()
            self.handler.scanners.close_all()
            self._stopped.set()

    def _serve_connection(self, sock):
        stream = _ClientSocket(sock, self)
        processor = (self.processor if self.access_log is None
                     else self.access_log.processor(self.handler, sock))
        trans = TCyBufferedTransport(stream)
        # The binary decoder buffers by itself (see wire.py), so it reads the stream directly.
        iprot = self._readers.get_protocol(stream if self.protocol == "binary" else trans)
        oprot = self._writers.get_protocol(trans)
        try:
            while not self.stopping:
                stream.awaiting = True
                processor.process(iprot, oprot)
        except TTransportException:
            pass
        except TooManyElements as exc:  # replied to by the processor; the rest is never decoded
            log.warning("closing connection after refusing a request: %s", exc)
            stream.discard_frame()
        except Exception as exc:  # noqa: BLE001 - garbage on the wire ends this connection only
            log.warning("closing connection after bad input: %r", exc)
        finally:
            with self._lock:
                self._open.discard(sock)
            sock.close()

    def stop(self):
        """Ask the server to stop (safe from a signal handler); serve_forever returns once drained."""
        self.stopping = True

    def wait_stopped(self, timeout=None):
        return self._stopped.wait(timeout)


def serve(engine_dir, host="127.0.0.1", port=9090, transport="buffered", protocol="binary",
          allow_remote=False, max_frame_bytes=2 * 1024 * 1024, idle_timeout_s=60, max_workers=32,
          ready_callback=None, sync="normal", max_request_elements=MAX_REQUEST_ELEMENTS):
    """Serve the engine in ``engine_dir`` until SIGTERM/SIGINT (or ``server.stop()``).

    ``sync`` is the engine's durability (``normal`` survives a killed process, ``full`` also
    power loss), as the ``sync`` option of an ``embedded://`` URL.

    Prints ``serving embedded://DIR on HOST:PORT (transport/protocol)`` once listening (port 0
    picks a free port and prints the real one), calls ``ready_callback(server)`` if given, and
    closes the engine after the last call in flight has replied.
    """
    from ..engine import Engine

    engine = Engine(engine_dir, sync)
    try:
        server = GatewayServer(engine, host, port, transport, protocol, allow_remote, max_frame_bytes,
                               idle_timeout_s, max_workers, max_request_elements=max_request_elements)
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, lambda *_: server.stop())
        try:
            print(f"serving embedded://{engine_dir} on {host}:{server.port} ({transport}/{protocol})",
                  flush=True)
            if ready_callback is not None:
                ready_callback(server)
            server.serve_forever()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        sys.stdout.flush()
    finally:
        engine.close()
