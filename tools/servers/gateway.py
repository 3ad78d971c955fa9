"""``socorro-store serve`` as a child process on a free loopback port (:class:`Gateway`), and
the child-process helpers the tools share: :func:`kill`, :func:`proc_rss_kb`.

Used by the tests' gateway fixture, the fault trials (tools/faults/) and the benchmarks
(tools/bench/).
"""

import os
import re
import signal
import subprocess
import sys
import threading

_SERVING = re.compile(r"serving \S+ on 127\.0\.0\.1:(\d+) ")


def kill(proc):
    """SIGKILL a child we started and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def proc_rss_kb(pid, field="VmRSS"):
    """``VmRSS`` (or ``VmHWM``, the peak) of a live process from /proc, in KiB; 0 if gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# -- the gateway as a child process ----------------------------------------------------------

class Gateway:
    """``socorro-store serve`` over ``directory`` on a free loopback port (a child process)."""

    def __init__(self, directory, transport="buffered", protocol="binary", extra_args=(), start_timeout_s=30,
                 program=("-m", "socorro_store")):
        """``program``: what ``python`` runs as the CLI (a tools/ launcher that patches the engine)."""
        self.directory, self.transport, self.protocol = str(directory), transport, protocol
        self.proc = subprocess.Popen(
            [sys.executable, *program, "--url", f"embedded://{self.directory}", "serve",
             "--create", "--port", "0", "--transport", transport, "--protocol", protocol, *extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.port = self._wait_for_port(start_timeout_s)

    def _wait_for_port(self, timeout_s):
        """The port of the "serving … on 127.0.0.1:PORT" line; a server silent that long is killed."""
        lines = []
        reader = threading.Thread(target=lambda: lines.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        match = _SERVING.search(lines[0] if lines else "")
        if not match:
            kill(self.proc)
            raise RuntimeError(f"gateway did not start within {timeout_s} s: {lines!r}")
        return int(match.group(1))

    def url(self, **options):
        query = "&".join([f"transport={self.transport}", f"protocol={self.protocol}",
                          *(f"{k}={v}" for k, v in options.items())])
        return f"hbase://127.0.0.1:{self.port}?{query}"

    def rss_kb(self, field="VmRSS"):
        """Resident memory of the server (``VmHWM`` = its peak), in KiB; 0 once it is gone."""
        return proc_rss_kb(self.proc.pid, field)

    def kill(self):
        kill(self.proc)

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                kill(self.proc)
        return self.proc.returncode
