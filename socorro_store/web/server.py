"""The web view's HTTP server: Werkzeug's, with a bounded number of request threads and an
optional access log.

- **Threads**: at most ``threads`` requests are served at once, one thread each; when all are
  busy the server stops accepting, and new connections wait in the kernel's listen queue (not in
  memory here).  A connection serves one request (HTTP/1.0, closed after the answer), so an
  idle keep-alive connection never holds a thread, and a client that stops sending is dropped
  after :data:`SOCKET_TIMEOUT` seconds.
- **Access log** (``web --access-log FILE``): the gateway's :class:`~socorro_store.gateway.access_log.AccessLog`
  (the same seven space-separated fields as ``serve --access-log``), one line per request once
  its answer is sent: time (UTC, ms), client ``host:port``, the HTTP method, the path and query
  (non-printable bytes and spaces as ``\\xNN``), ``-`` (rows: not counted per request), the
  milliseconds from the request read to the answer sent, and the status code.
"""

import threading
import time

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from ..checks import is_loopback
from ..errors import InvalidArgument
from .app import create_app

DEFAULT_THREADS = 16
SOCKET_TIMEOUT = 30


def check_web_address(host, allow_remote):
    """Refuse a non-loopback ``host`` unless ``allow_remote`` (InvalidArgument)."""
    if not allow_remote and not is_loopback(host):
        raise InvalidArgument(f"refusing to serve on non-loopback address {host!r}: the pages show crash "
                              "reports without authentication (pass --allow-remote)")


class _Handler(WSGIRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: no idle connection holds a thread
    timeout = SOCKET_TIMEOUT

    def handle_one_request(self):
        self._started = time.monotonic()
        return super().handle_one_request()

    def log_request(self, code="-", size="-"):
        log = getattr(self.server, "access_log", None)
        if log is None:
            return super().log_request(code, size)
        started = getattr(self, "_started", None)
        ms = (time.monotonic() - started) * 1000 if started is not None else 0.0
        client = f"{self.client_address[0]}:{self.client_address[1]}" if self.client_address else "-"
        code = getattr(code, "value", code)
        log.write(client, self.command or "-", self.path or "-", None, ms, str(code))
        return None


class BoundedWSGIServer(ThreadedWSGIServer):
    """Werkzeug's threaded server serving at most ``threads`` requests at once (the module
    docstring); ``access_log``: an :class:`~socorro_store.gateway.access_log.AccessLog` or None."""

    def __init__(self, host, port, app, threads=DEFAULT_THREADS, access_log=None):
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise InvalidArgument(f"request threads must be a positive int, not {threads!r}")
        self.threads = threads
        self.access_log = access_log
        self._slots = threading.BoundedSemaphore(threads)
        super().__init__(host, port, app, _Handler)

    def process_request(self, request, client_address):
        self._slots.acquire()  # the accept loop waits here while every thread is busy
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def make_web_server(store, host="127.0.0.1", port=8000, unredacted=False, allow_remote=False, threads=DEFAULT_THREADS,
                    access_log=None, request_timeout=None, public_fields=None, now=None):
    """A :class:`BoundedWSGIServer` of :func:`~.app.create_app` on ``host:port`` (0: a free port),
    bound and not yet serving: ``.server_port``, ``.serve_forever()``, ``.shutdown()``.

    ``request_timeout`` and ``public_fields`` are :func:`~.app.create_app`'s; the app reads with
    as many threads as the server has."""
    check_web_address(host, allow_remote)
    app = create_app(store, unredacted, now=now, public_fields=public_fields, request_timeout=request_timeout,
                     readers=threads)
    return BoundedWSGIServer(host, port, app, threads, access_log)
