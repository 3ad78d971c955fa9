"""A fault-injecting TCP proxy for chaos tests of the Thrift path.

It sits between a client (happybase) and a server (``socorro-store serve`` or HBase's Thrift
gateway) on loopback and, on request, breaks the next calls in the ways Socorro's HBase years
broke: a connection dropped before the call reaches the server, a connection dropped after the
server ran it (the reply is lost: the ambiguous case), a reply delayed past the client timeout,
and a reply cut short.

A "call" is one chunk the client sends; Thrift clients flush one whole message per call, so this
is exact for buffered and framed transports in practice.

    proxy = FaultProxy(("127.0.0.1", 9090)).start()
    proxy.inject("drop_after", count=2)      # the next two calls run, but their replies are lost
    proxy.inject("truncate", after=3)         # the 4th call from now gets half its reply
    ... client connects to proxy.port ...
    proxy.injected                            # Counter of faults injected so far
    proxy.stop()
"""

import collections
import socket
import threading
import time

FAULTS = ("drop_before", "drop_after", "delay", "truncate")


class FaultProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``, injecting faults on demand.  Thread-safe."""

    def __init__(self, upstream, host="127.0.0.1", port=0, delay_s=2.0):
        self.upstream = upstream
        self.delay_s = delay_s
        self.injected = collections.Counter()
        self._pending = collections.deque()
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, port))
        self.port = self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._sockets = set()

    def start(self):
        threading.Thread(target=self._accept_loop, name="faultproxy-accept", daemon=True).start()
        return self

    def stop(self):
        self._stopping.set()
        self._listener.close()
        with self._lock:
            for sock in list(self._sockets):
                _close(sock)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def inject(self, fault, count=1, after=0):
        """Let ``after`` calls through, then break the next ``count`` calls (over all connections)
        with ``fault``.  ``after`` moves a fault into the middle of a multi-call operation."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        for label, value in (("count", count), ("after", after)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{label} must be an int >= 0, not {value!r}")
        with self._lock:
            self._pending.extend([None] * after + [fault] * count)

    def clear(self):
        with self._lock:
            self._pending.clear()

    def _next_fault(self):
        with self._lock:
            return self._pending.popleft() if self._pending else None

    def _accept_loop(self):
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets.update((client, server))
            state = {"reply_fault": None}
            threading.Thread(target=self._pump_requests, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._pump_replies, args=(server, client, state), daemon=True).start()

    def _pump_requests(self, client, server, state):
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                fault = self._next_fault()
                if fault == "drop_before":
                    self.injected[fault] += 1
                    break
                if fault is not None:
                    self.injected[fault] += 1
                    state["reply_fault"] = fault
                server.sendall(data)
        except OSError:
            pass
        self._close_pair(client, server)

    def _pump_replies(self, server, client, state):
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                fault, state["reply_fault"] = state["reply_fault"], None
                if fault == "drop_after":
                    break
                if fault == "truncate":
                    client.sendall(data[: max(1, len(data) // 2)])
                    break
                if fault == "delay":
                    time.sleep(self.delay_s)
                client.sendall(data)
        except OSError:
            pass
        self._close_pair(client, server)

    def _close_pair(self, client, server):
        with self._lock:
            self._sockets.discard(client)
            self._sockets.discard(server)
        _close(client)
        _close(server)


def _close(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
