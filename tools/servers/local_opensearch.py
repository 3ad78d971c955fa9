"""A private OpenSearch on this machine, in one command: jars from Maven Central, no distribution.

    python tools/servers/local_opensearch.py DIR [--nodes 3] [--port P] [--heap 512m]

* **Jars.**  ``org.opensearch:opensearch`` with the ``transport-netty4-client`` (HTTP and
  transport) and ``analysis-common`` (the pattern tokenizer) plugins and ``log4j-core`` are
  resolved with Maven into a cache outside the repository (``$SOCORRO_STORE_OPENSEARCH_CACHE``,
  default ``~/.cache/socorro-store/opensearch/VERSION``), once.  2.19.6 is the newest line that
  runs on Java 17 (3.x needs Java 21).
* **The node** is ``LocalOpenSearchNode.java`` beside this file (a ``Node`` subclass taking the
  two plugins from the classpath), compiled with ``javac`` into the cache.  Each node is one JVM
  (``-Xmx512m`` by default), bound to 127.0.0.1, its data under ``DIR/nodeN``; the first node's
  HTTP port is ``--port`` (default: a free one).  ``--nodes 3`` runs a 3-node cluster on loopback
  (every node data- and cluster-manager-eligible).
* **Ready** when every node answers HTTP and the cluster health is yellow or green; the tool
  then prints ``opensearch://127.0.0.1:PORT[,127.0.0.1:PORT...]`` on a line of its own.
* **Stop.**  SIGTERM to every node, SIGKILL after a grace period; on exit or on SIGINT/SIGTERM
  to this tool.  :class:`LocalOpenSearch` (used by the test fixture and the bench) also kills
  and restarts single nodes on their own data.

Without Java, javac or Maven, :class:`OpenSearchUnavailable` says what is missing in one line.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VERSION = os.environ.get("SOCORRO_STORE_OPENSEARCH_VERSION", "2.19.6")
LOG4J_VERSION = "2.25.4"
JAVA_SOURCE = Path(__file__).resolve().parent / "LocalOpenSearchNode.java"
MAIN_CLASS = "LocalOpenSearchNode"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>socorro-store-opensearch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.opensearch</groupId><artifactId>opensearch</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.opensearch.plugin</groupId><artifactId>transport-netty4-client</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.opensearch.plugin</groupId><artifactId>analysis-common</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

# one core's worth of threads each: two cores are shared with HBase and the tests
_JAVA_FLAGS = ["-XX:+UseSerialGC", "-Djna.nosys=true", "-Dlog4j2.disable.jmx=true",
               "-Dio.netty.allocator.numDirectArenas=0", "-XX:-OmitStackTraceInFastThrow"]


class OpenSearchUnavailable(RuntimeError):
    """OpenSearch cannot run here (no Java/javac/Maven, jars unresolvable) or did not come up."""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cache_root():
    return Path(os.environ.get("SOCORRO_STORE_OPENSEARCH_CACHE",
                               Path.home() / ".cache" / "socorro-store" / "opensearch"))


def require_tools():
    """Raise :class:`OpenSearchUnavailable` naming what is missing: java, javac (a JDK 17) or mvn."""
    missing = [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]
    if missing:
        raise OpenSearchUnavailable(f"a local OpenSearch needs {' and '.join(missing)} on PATH "
                                    "(a JDK 17 and Maven 3; OpenSearch's jars come from Maven Central)")


def prepare(version=VERSION, log=print):
    """``(lib, classes)``: the jar directory (fetched with Maven once) and the compiled node class
    (compiled again when its source changes)."""
    require_tools()
    home = cache_root() / version
    lib, done = home / "lib", home / "complete"
    if not done.exists():
        home.mkdir(parents=True, exist_ok=True)
        (home / "pom.xml").write_text(_POM.format(version=version, log4j=LOG4J_VERSION))
        log(f"fetching OpenSearch {version} jars with Maven into {lib} (once)")
        shutil.rmtree(lib, ignore_errors=True)
        result = subprocess.run(
            ["mvn", "-B", "-q", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={lib}"], capture_output=True, text=True)
        if result.returncode != 0:
            tail = " | ".join(line for line in (result.stdout + result.stderr).splitlines() if "ERROR" in line)
            raise OpenSearchUnavailable(f"Maven could not resolve org.opensearch:opensearch:{version}: {tail[:600]}")
        done.write_text(version + "\n")
    source = JAVA_SOURCE.read_bytes()
    classes = home / ("classes-" + hashlib.sha256(source).hexdigest()[:12])
    if not (classes / f"{MAIN_CLASS}.class").exists():
        staging = classes.with_name(classes.name + f".tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        result = subprocess.run(["javac", "-nowarn", "-cp", f"{lib}/*", "-d", str(staging), str(JAVA_SOURCE)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise OpenSearchUnavailable(f"javac failed on {JAVA_SOURCE.name}: {result.stderr.strip()[-600:]}")
        shutil.rmtree(classes, ignore_errors=True)
        staging.rename(classes)
    return lib, classes


class LocalOpenSearch:
    """``nodes`` OpenSearch JVMs on loopback with their data under ``directory`` (see the module
    docstring).  ``url`` names every node's HTTP port once started."""

    def __init__(self, directory, nodes=1, port=None, heap="512m", version=VERSION, log=print):
        if nodes < 1:
            raise ValueError("nodes must be 1 or more")
        self.directory = Path(directory).resolve()
        self.version, self.heap, self.log = version, heap, log
        self.http_ports = [port or free_port()] + [free_port() for _ in range(nodes - 1)]
        self.transport_ports = [free_port() for _ in range(nodes)]
        self.processes = [None] * nodes
        self.cluster_name = "socorro-" + hashlib.sha256(str(self.directory).encode()).hexdigest()[:8]
        self.lib = self.classes = None
        self.started_in_s = None

    @property
    def url(self):
        return "opensearch://" + ",".join(f"127.0.0.1:{port}" for port in self.http_ports)

    def _settings(self, i):
        n = len(self.http_ports)
        home = self.directory / f"node{i}"
        settings = {
            "path.home": home, "path.data": home / "data", "path.logs": home / "logs",
            "cluster.name": self.cluster_name, "node.name": f"node{i}",
            "network.host": "127.0.0.1", "http.port": self.http_ports[i],
            "transport.port": self.transport_ports[i], "http.type": "netty4", "transport.type": "netty4",
            # a 2-core machine with disks shared by many runs: no watermark should stop writes
            "cluster.routing.allocation.disk.threshold_enabled": "false",
            "action.auto_create_index": "false",
        }
        if n == 1:
            settings["discovery.type"] = "single-node"
        else:
            settings["discovery.seed_hosts"] = ",".join(f"127.0.0.1:{p}" for p in self.transport_ports)
            settings["cluster.initial_cluster_manager_nodes"] = ",".join(f"node{j}" for j in range(n))
        return [f"{key}={value}" for key, value in settings.items()]

    def start(self, timeout_s=120):
        began = time.monotonic()
        self.lib, self.classes = prepare(self.version, self.log)
        for i in range(len(self.http_ports)):
            self.start_node(i)
        self.wait_ready(timeout_s)
        self.started_in_s = time.monotonic() - began
        return self

    def start_node(self, i):
        """Start node ``i`` (again, on its own data: after :meth:`kill_node`)."""
        home = self.directory / f"node{i}"
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "logs").mkdir(parents=True, exist_ok=True)
        with open(home / "logs" / "stdout.log", "ab") as out:
            self.processes[i] = subprocess.Popen(
                ["java", f"-Xms{self.heap}", f"-Xmx{self.heap}", *_JAVA_FLAGS,
                 "-cp", f"{self.classes}{os.pathsep}{self.lib}/*", MAIN_CLASS, *self._settings(i)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_ready(self, timeout_s=120, nodes=None):
        deadline = time.monotonic() + timeout_s
        wanted = len(self.http_ports) if nodes is None else nodes
        while True:
            for i, process in enumerate(self.processes):
                if process is not None and process.poll() is not None:
                    raise OpenSearchUnavailable(f"OpenSearch node{i} exited ({process.returncode}){self.log_tail(i)}")
            health = self._health()
            if health and health.get("number_of_nodes", 0) >= wanted and health.get("status") in ("green", "yellow"):
                return
            if time.monotonic() > deadline:
                raise OpenSearchUnavailable(f"OpenSearch not ready after {timeout_s:g} s{self.log_tail(0)}")
            time.sleep(0.5)

    def _health(self):
        for i, port in enumerate(self.http_ports):
            if self.processes[i] is None:
                continue
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_cluster/health", timeout=5) as reply:
                    return json.load(reply)
            except (OSError, ValueError):
                continue
        return None

    def log_tail(self, i, lines=15):
        try:
            text = (self.directory / f"node{i}" / "logs" / "stdout.log").read_text(errors="replace")
        except OSError:
            return ""
        return ": " + " | ".join(text.strip().splitlines()[-lines:])[-1500:]

    def running(self):
        return [p is not None and p.poll() is None for p in self.processes]

    def kill_node(self, i, sig=signal.SIGKILL):
        """Signal node ``i`` (SIGKILL by default) and reap it."""
        process = self.processes[i]
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            process.wait(30)

    def stop_node(self, i, grace_s=15):
        process = self.processes[i]
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)

    def stop(self, grace_s=15):
        for i in range(len(self.processes)):
            self.stop_node(i, grace_s)

    def rss_bytes(self):
        """Resident memory of every running node, summed (Linux ``/proc``)."""
        total = 0
        for process in self.processes:
            if process is None or process.poll() is not None:
                continue
            try:
                for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run a private OpenSearch node (or cluster) on loopback, "
                                                 "from Maven Central jars.")
    parser.add_argument("directory", help="where data and logs go (kept between runs)")
    parser.add_argument("--nodes", type=int, default=1, help="nodes (JVMs) in the cluster (default 1)")
    parser.add_argument("--port", type=int, help="the first node's HTTP port (default: a free one)")
    parser.add_argument("--heap", default="512m", help="each node's Java heap (default 512m)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for the cluster (default 180)")
    args = parser.parse_args(argv)
    if args.nodes < 1:
        parser.error("--nodes must be 1 or more")
    cluster = LocalOpenSearch(args.directory, nodes=args.nodes, port=args.port, heap=args.heap,
                              log=lambda msg: print(msg, file=sys.stderr))

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cluster.start(args.timeout)
        print(f"OpenSearch {args.nodes} node(s) ready in {cluster.started_in_s:.1f} s; data and logs in "
              f"{cluster.directory}", file=sys.stderr)
        print(cluster.url, flush=True)
        while all(cluster.running()):
            time.sleep(1)
        dead = cluster.running().index(False)
        print(f"OpenSearch node{dead} exited{cluster.log_tail(dead)}", file=sys.stderr)
        return 1
    except OpenSearchUnavailable as exc:
        print(f"local_opensearch: {exc}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
