"""Session fixtures: ``socorro-store serve`` as a subprocess on a free loopback port.

Each fixture starts ``python -m socorro_store --url embedded://TMP serve --port 0 …``, waits for
its "serving … on 127.0.0.1:PORT" line and returns ``hbase://127.0.0.1:PORT?transport=…&protocol=…``.
The process is stopped with SIGTERM at the end of the session.
"""

import os
import re
import subprocess
import sys
import threading

import pytest

_SERVING = re.compile(r"serving \S+ on 127\.0\.0\.1:(\d+) ")
START_TIMEOUT_S = 30


class GatewayProcess:
    """A running ``socorro-store serve`` subprocess."""

    def __init__(self, directory, transport="buffered", protocol="binary", extra_args=()):
        self.directory = str(directory)
        self.transport, self.protocol = transport, protocol
        args = [sys.executable, "-m", "socorro_store", "--url", f"embedded://{self.directory}", "serve",
                "--port", "0", "--transport", transport, "--protocol", protocol, *extra_args]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.port = self._wait_for_port()
        # keep draining stderr so a chatty server never blocks on a full pipe
        self.stderr_lines = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_for_port(self):
        found = {}

        def read():
            line = self.proc.stdout.readline()
            match = _SERVING.search(line or "")
            if match:
                found["port"] = int(match.group(1))
            found["line"] = line

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_S)
        if "port" not in found:
            self.proc.kill()
            _out, err = self.proc.communicate(timeout=10)
            raise RuntimeError(f"gateway did not start: {found.get('line')!r} {err[-2000:]}")
        return found["port"]

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def url(self):
        return f"hbase://127.0.0.1:{self.port}?transport={self.transport}&protocol={self.protocol}"

    def stop(self, timeout=30):
        """SIGTERM, wait; return the exit code (killed after ``timeout`` seconds)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def _start(tmp_path_factory, transport, protocol):
    # The contract suite stores 4 MiB cells: raise the framed limit from HBase's 2 MB default
    # (hbase.regionserver.thrift.framed.max_frame_size_in_mb), as an operator would.
    extra = ["--max-frame-mb", "16"] if transport == "framed" else []
    return GatewayProcess(tmp_path_factory.mktemp(f"gateway-{transport}-{protocol}"), transport, protocol, extra)


@pytest.fixture(scope="session")
def gateway_buffered_binary(tmp_path_factory):
    gateway = _start(tmp_path_factory, "buffered", "binary")
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def gateway_framed_compact(tmp_path_factory):
    gateway = _start(tmp_path_factory, "framed", "compact")
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def gateway_buffered_binary_url(gateway_buffered_binary):
    return gateway_buffered_binary.url


@pytest.fixture(scope="session")
def gateway_framed_compact_url(gateway_framed_compact):
    return gateway_framed_compact.url
