"""A private Apache HBase on this machine, in one command: jars from Maven Central, no Docker.

    python tools/local_hbase.py DIR [--version 2.6.1] [--framed] [--compact] [--thrift2]
                                    [--region-servers N]

* **Jars.**  HBase's Thrift server (``org.apache.hbase:hbase-thrift``), the pure-Java codecs
  (``hbase-compression-aircompressor``: LZO, LZ4, Snappy, Zstd without native libraries) and a
  log4j2 binding are resolved with Maven into a cache outside the repository
  (``$SOCORRO_STORE_HBASE_CACHE``, default ``~/.cache/socorro-store/hbase/VERSION``), once.
  The version is the newest 2.6.x Maven Central lists, a ``-hadoop3`` build first (the next one
  when Maven cannot resolve it); ``--version`` (or ``$SOCORRO_STORE_HBASE_VERSION``) pins one.
* **Configuration** under DIR: rootdir, WAL and ZooKeeper data on local disk, ZooKeeper and every
  port on loopback (the Thrift and ZooKeeper ports are chosen free, the master's and region
  server's are random), no web UIs, ``COMPRESSION => 'LZO'`` served by aircompressor.
* **Processes.**  The master in standalone mode (master, region server and ZooKeeper in one JVM)
  and HBase's own Thrift1 server: thread pool, buffered transport, binary protocol by default,
  framed and/or compact on request.  With ``thrift2=True`` (``--thrift2``) also HBase's Thrift2
  server (``org.apache.hadoop.hbase.thrift2.ThriftServer``, thread pool, buffered + binary) on a
  port of its own: ``thrift2_url`` is ``hbase://127.0.0.1:PORT?api=thrift2``.
* **Ready** when a happybase ``tables()`` call answers and a table can be created and dropped (the
  Thrift port accepts, and even answers ``tables()``, before the master takes DDL); and, with
  Thrift2, when the Thrift2 server answers a data call (a ``get`` on ``hbase:meta``: it starts
  answering 3-7 s after start).
* **Stop.**  SIGTERM to the Thrift servers, then the master, SIGKILL after a grace period; on exit
  or on SIGINT/SIGTERM to this tool.

``--region-servers N`` runs a pseudo-distributed cluster instead (ZooKeeper, a master and N region
servers, each its own JVM, and one Thrift server per region server): see ``local_hbase_cluster.py``.

Used as a library by the test fixture (``tests/fixtures_hbase_real.py``), the fault tests and the
benchmarks: :class:`LocalHBase` also kills and restarts each process on the same rootdir.
Without Java or Maven it raises :class:`HBaseUnavailable` with one line saying what is missing;
when HBase does not come up, the message ends with the tail of its log.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MAVEN_REPO = os.environ.get("SOCORRO_STORE_MAVEN_REPO", "https://repo.maven.apache.org/maven2")
FALLBACK_VERSION = "2.6.1"
LOG4J_VERSION = "2.17.2"

# Java 17 closes the JDK internals HBase and Hadoop reach into (HBase's own bin/hbase passes these).
JAVA_FLAGS = [
    *[f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.io", "java.nio", "sun.nio.ch", "java.lang", "jdk.internal.ref", "java.lang.reflect",
        "java.util", "java.util.concurrent")],
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-modules=jdk.unsupported",
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "-XX:+UseSerialGC",  # two cores: the parallel collectors' threads only compete with HBase's
    "-XX:TieredStopAtLevel=1",  # C1 only: a short-lived test instance starts and warms up sooner
]

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>socorro-store-hbase</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.hbase</groupId><artifactId>hbase-thrift</artifactId>
      <version>{version}</version>
      <exclusions>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency><groupId>org.apache.hbase</groupId><artifactId>hbase-compression-aircompressor</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
    <!-- Hadoop 2's classes call log4j 1 directly: the bridge, instead of reload4j -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-1.2-api</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:hbase.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger = WARN,file
"""


class HBaseUnavailable(RuntimeError):
    """HBase cannot run here (no Java, no Maven, jars unresolvable) or did not come up."""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cache_root():
    return Path(os.environ.get("SOCORRO_STORE_HBASE_CACHE", Path.home() / ".cache" / "socorro-store" / "hbase"))


def require_tools():
    """Raise :class:`HBaseUnavailable` naming what is missing: java (17) or mvn."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        raise HBaseUnavailable(f"real HBase needs {' and '.join(missing)} on PATH "
                               "(a JDK 17 and Maven 3; HBase's jars come from Maven Central)")


def _version_key(version):
    return [int(part) for part in re.findall(r"\d+", version.split("-")[0])]


def candidate_versions(series="2.6"):
    """``series``.x versions Maven Central lists, best first: ``-hadoop3`` builds, then newest.

    Falls back to the versions already cached, then to :data:`FALLBACK_VERSION`, when the
    repository cannot be read.
    """
    url = f"{MAVEN_REPO}/org/apache/hbase/hbase-thrift/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            listed = re.findall(r"<version>([^<]+)</version>", reply.read().decode())
    except OSError:
        listed = []
    listed = [v for v in listed if v.startswith(series + ".") and "alpha" not in v and "beta" not in v]
    if not listed:
        cached = [p.name for p in cache_root().glob(series + ".*") if (p / "complete").exists()]
        listed = cached or [FALLBACK_VERSION]
    return sorted(set(listed), key=lambda v: (v.endswith("-hadoop3"), _version_key(v)), reverse=True)


def fetch_jars(version=None, log=print):
    """The directory holding HBase's runtime jars, resolved with Maven on first use.

    ``version`` (or ``$SOCORRO_STORE_HBASE_VERSION``) pins one; otherwise the candidates are tried
    best first; a candidate already in the cache is used as it is.
    """
    require_tools()
    pinned = version or os.environ.get("SOCORRO_STORE_HBASE_VERSION")
    candidates = [pinned] if pinned else candidate_versions()
    errors = []
    for candidate in candidates:
        try:
            return _fetch_version(candidate, log)
        except HBaseUnavailable as exc:
            errors.append(str(exc))
    raise HBaseUnavailable("; ".join(errors))


def _fetch_version(version, log):
    home = cache_root() / version
    lib = home / "lib"
    if (home / "complete").exists():
        return lib
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(_POM.format(version=version, log4j=LOG4J_VERSION))
    log(f"fetching HBase {version} jars with Maven into {lib} (once)")
    shutil.rmtree(lib, ignore_errors=True)
    result = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
         "-DincludeScope=runtime", f"-DoutputDirectory={lib}"],
        capture_output=True, text=True)
    if result.returncode != 0:
        tail = " | ".join(line for line in (result.stdout + result.stderr).splitlines()
                          if "ERROR" in line)[:600]
        raise HBaseUnavailable(f"Maven could not resolve org.apache.hbase:hbase-thrift:{version}: {tail}")
    (home / "complete").write_text(version + "\n")
    return lib


def _site_xml(properties):
    body = "\n".join(f"  <property><name>{k}</name><value>{v}</value></property>"
                     for k, v in properties.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{body}\n</configuration>\n"


class LocalHBase:
    """A standalone HBase (one JVM) plus its Thrift1 server (and, with ``thrift2``, its Thrift2
    server), under ``directory``.

    ``start()`` writes the configuration (once: a restart keeps rootdir and ports), starts the
    processes and waits until they serve.  ``url`` is the store URL for Thrift1, ``thrift2_url``
    the one for Thrift2.
    """

    def __init__(self, directory, version=None, transport="buffered", protocol="binary",
                 master_heap="1g", thrift_heap="512m", log=print, thrift2=False):
        if transport not in ("buffered", "framed") or protocol not in ("binary", "compact"):
            raise ValueError(f"transport must be buffered|framed and protocol binary|compact, "
                             f"not {transport}/{protocol}")
        self.directory = Path(directory).resolve()
        self.version = version
        self.transport, self.protocol = transport, protocol
        self.master_heap, self.thrift_heap = master_heap, thrift_heap
        self.log = log
        self.lib = None
        self.thrift_port = None
        self.master = None
        self.thrift = None
        self.extra_thrift = []
        self.with_thrift2 = bool(thrift2)
        self.thrift2_port = None
        self.thrift2 = None

    # -- configuration ---------------------------------------------------------------------

    @property
    def conf_dir(self):
        return self.directory / "conf"

    def _configure(self):
        ports_file = self.conf_dir / "ports"
        if ports_file.exists():  # a restart on the same rootdir keeps its ports
            # "ZK THRIFT1 [THRIFT2]": files written before Thrift2 hold two ports
            ports = [int(p) for p in ports_file.read_text().split()]
            zk_port, self.thrift_port = ports[:2]
            self.thrift2_port = ports[2] if len(ports) > 2 else None
            if self.with_thrift2 and self.thrift2_port is None:
                self.thrift2_port = free_port()
                ports_file.write_text(f"{zk_port} {self.thrift_port} {self.thrift2_port}\n")
            return
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        data = self.directory / "data"
        zk_port, self.thrift_port = free_port(), free_port()
        self.thrift2_port = free_port() if self.with_thrift2 else None
        properties = {
            "hbase.cluster.distributed": "false",
            "hbase.rootdir": f"file://{data / 'root'}",
            "hbase.tmp.dir": str(data / "tmp"),
            "hbase.zookeeper.property.dataDir": str(data / "zookeeper"),
            "hbase.zookeeper.quorum": "127.0.0.1",
            "hbase.zookeeper.property.clientPort": zk_port,
            "hbase.localcluster.assign.random.ports": "true",
            "hbase.master.info.port": -1,
            "hbase.regionserver.info.port": -1,
            "hbase.thrift.info.port": -1,
            # the local filesystem has no hflush/hsync capability; the WAL still reaches the file
            "hbase.unsafe.stream.capability.enforce": "false",
            "hbase.io.compress.lzo.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.LzoCodec",
            "hbase.io.compress.lz4.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.Lz4Codec",
            "hbase.io.compress.zstd.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.ZstdCodec",
            # DDL waits poll at hbase.client.pause (100 ms) and the master batches its region
            # server calls for 150 ms: a create took ~0.6 s, mostly waiting.
            "hbase.client.pause": 10,
            "hbase.procedure.remote.dispatcher.delay.msec": 1,
            # a test instance holds hundreds of small tables: no 2 MB memstore chunk per family
            "hbase.hregion.memstore.mslab.enabled": "false",
            "hbase.thrift.minWorkerThreads": 32,
            # at shutdown the region server retries deleting its ZooKeeper node after the
            # in-process ZooKeeper has gone: 4 retries with backoff made a stop take ~30 s
            "zookeeper.recovery.retry": 1,
            "zookeeper.recovery.retry.intervalmill": 200,
        }
        (self.conf_dir / "hbase-site.xml").write_text(_site_xml(properties))
        (self.conf_dir / "log4j2.properties").write_text(_LOG4J2)
        ports = [zk_port, self.thrift_port] + ([self.thrift2_port] if self.thrift2_port else [])
        ports_file.write_text(" ".join(map(str, ports)) + "\n")

    @property
    def url(self):
        return f"hbase://127.0.0.1:{self.thrift_port}?transport={self.transport}&protocol={self.protocol}"

    @property
    def thrift2_url(self):
        """The store URL of the Thrift2 server (None unless started with ``thrift2=True``)."""
        return f"hbase://127.0.0.1:{self.thrift2_port}?api=thrift2" if self.thrift2_port else None

    # -- processes ---------------------------------------------------------------------------

    def _java(self, name, heap, main_class, args, jvm_args=()):
        log_file = self.directory / f"{name}.log"
        command = ["java", f"-Xmx{heap}", *JAVA_FLAGS, *jvm_args, f"-Dhbase.log.file={log_file}",
                   "-cp", f"{self.conf_dir}:{self.lib}/*", main_class, *args]
        env = dict(os.environ, MALLOC_ARENA_MAX="4")
        with open(self.directory / f"{name}.out", "ab") as out:
            return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    stdin=subprocess.DEVNULL, start_new_session=True)

    def start_master(self):
        self.master = self._java("master", self.master_heap, "org.apache.hadoop.hbase.master.HMaster", ["start"])

    def _thrift_server(self, name, port, transport, protocol):
        args = ["-b", "127.0.0.1", "-p", str(port), "-threadpool"]
        if transport == "framed":
            args.append("-f")
        if protocol == "compact":
            args.append("-c")
        return self._java(name, self.thrift_heap, "org.apache.hadoop.hbase.thrift.ThriftServer", [*args, "start"])

    def start_thrift(self):
        self.thrift = self._thrift_server("thrift", self.thrift_port, self.transport, self.protocol)

    def start_thrift2(self):
        """Start HBase's Thrift2 server (thread pool, buffered transport, binary protocol)."""
        args = ["-b", "127.0.0.1", "-p", str(self.thrift2_port), "-threadpool", "start"]
        self.thrift2 = self._java("thrift2", self.thrift_heap, "org.apache.hadoop.hbase.thrift2.ThriftServer", args)

    def start_extra_thrift(self, transport, protocol, timeout_s=60):
        """Another Thrift1 server on the same HBase (say framed + compact beside buffered + binary).

        Returns its store URL; :meth:`stop` stops it too.
        """
        port = free_port()
        name = f"thrift-{transport}-{protocol}"
        proc = self._thrift_server(name, port, transport, protocol)
        self.extra_thrift.append(proc)
        self._wait_answering(time.monotonic() + timeout_s, [(name, proc)], port, transport, protocol, ddl=False)
        return f"hbase://127.0.0.1:{port}?transport={transport}&protocol={protocol}"

    def start(self, timeout_s=120):
        """Fetch, configure, start both processes and wait until DDL works.  Returns ``self``."""
        self.lib = fetch_jars(self.version, log=self.log)
        self._configure()
        began = time.monotonic()
        try:  # whatever fails (a Thrift server that cannot start, Ctrl-C), nothing started outlives it
            if self.master is None or self.master.poll() is not None:
                self.start_master()
            if self.thrift is None or self.thrift.poll() is not None:
                self.start_thrift()
            if self.with_thrift2 and (self.thrift2 is None or self.thrift2.poll() is not None):
                self.start_thrift2()  # beside Thrift1: the two JVMs start in parallel
            self.wait_ready(began + timeout_s)
            if self.with_thrift2:
                self.wait_thrift2(began + timeout_s)
        except BaseException:
            self.stop()
            raise
        self.started_in_s = time.monotonic() - began
        return self

    def wait_ready(self, deadline, ddl=True):
        """Until ``tables()`` answers and (``ddl``) a probe table can be created and dropped."""
        self._wait_answering(deadline, [("master", self.master), ("thrift", self.thrift)],
                             self.thrift_port, self.transport, self.protocol, ddl)

    def wait_thrift2(self, deadline):
        """Until the Thrift2 server answers a data call: a ``get`` of a row of ``hbase:meta``
        (the port accepts, and admin calls answer, before it serves data)."""
        from socorro_store.backends.hbase_thrift2_idl import hbase2
        from thriftpy2.rpc import make_client

        last = None
        while time.monotonic() < deadline:
            for name, proc in (("master", self.master), ("thrift2", self.thrift2)):
                if proc is not None and proc.poll() is not None:
                    raise HBaseUnavailable(f"HBase {name} exited with {proc.returncode}{self.log_tail(name)}")
            client = None
            try:
                client = make_client(hbase2.THBaseService, "127.0.0.1", self.thrift2_port, timeout=20000)
                client.get(b"hbase:meta", hbase2.TGet(row=b"socorro_store_ready_probe"))
                return
            except Exception as exc:  # refused, reset, TIOError while the server warms up
                last = exc
                time.sleep(0.3)
            finally:
                if client is not None:
                    client.close()
        raise HBaseUnavailable(f"HBase's Thrift2 server did not answer on 127.0.0.1:{self.thrift2_port}: "
                               f"{type(last).__name__}: {str(last)[:200]}{self.log_tail('thrift2')}")

    def _wait_answering(self, deadline, watched, port, transport, protocol, ddl):
        """Poll the Thrift server on ``port`` until it answers (see :meth:`wait_ready`); a
        ``watched`` ``(name, process)`` that exits, or the deadline, raises with a log tail."""
        import happybase

        last = None
        while time.monotonic() < deadline:
            for name, proc in watched:
                if proc is not None and proc.poll() is not None:
                    raise HBaseUnavailable(f"HBase {name} exited with {proc.returncode}{self.log_tail(name)}")
            conn = None
            try:
                conn = happybase.Connection("127.0.0.1", port, timeout=20000, transport=transport,
                                            protocol=protocol)
                names = conn.tables()
                if ddl:
                    probe = b"socorro_store_ready_probe"
                    if probe in names:
                        conn.delete_table(probe, disable=True)
                    conn.create_table(probe, {"f": {}})
                    conn.delete_table(probe, disable=True)
                return
            except Exception as exc:  # refused, reset, IOError while the master initializes
                last = exc
                time.sleep(0.3)
            finally:
                if conn is not None:
                    conn.close()
        raise HBaseUnavailable(f"HBase did not answer on 127.0.0.1:{port}: {type(last).__name__}: "
                               f"{str(last)[:200]}{self.log_tail(watched[0][0])}")

    def log_tail(self, name, lines=25):
        path = self.directory / f"{name}.log"
        out = self.directory / f"{name}.out"
        text = ""
        for source in (path, out):
            if source.exists():
                text += source.read_text(errors="replace")
        tail = text.splitlines()[-lines:]
        return ("\n--- tail of " + str(path) + " ---\n" + "\n".join(tail)) if tail else ""

    @staticmethod
    def _end(proc, sig, grace_s):
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def kill_thrift(self):
        """SIGKILL the Thrift server (the master keeps running)."""
        self._end(self.thrift, signal.SIGKILL, 10)

    def kill_thrift2(self):
        """SIGKILL the Thrift2 server (the master and the Thrift1 server keep running)."""
        self._end(self.thrift2, signal.SIGKILL, 10)

    def kill_master(self):
        """SIGKILL the HBase JVM: master, region server and ZooKeeper at once, no flush."""
        self._end(self.master, signal.SIGKILL, 10)

    #: the roles :meth:`kill` and :meth:`restart` take, with the attribute holding each process
    ROLES = {"master": "master", "thrift": "thrift", "thrift2": "thrift2"}

    def process(self, role, index=0):
        """The ``subprocess.Popen`` of ``role`` (one of :attr:`ROLES`); standalone has index 0 only."""
        if role not in self.ROLES or index != 0:
            raise ValueError(f"no process {role}[{index}] (roles: {', '.join(self.ROLES)}, index 0)")
        return getattr(self, self.ROLES[role])

    def kill(self, role, index=0):
        """SIGKILL one process (``role`` as in :attr:`ROLES`); the others keep running."""
        self._end(self.process(role, index), signal.SIGKILL, 10)

    def restart(self, role, index=0, timeout_s=120):
        """Start ``role`` again (after :meth:`kill`: a live one is SIGKILLed first) on the same
        rootdir and port, and wait until the HBase answers through it."""
        self.kill(role, index)
        {"master": self.start_master, "thrift": self.start_thrift, "thrift2": self.start_thrift2}[role]()
        deadline = time.monotonic() + timeout_s
        if role == "thrift2":
            self.wait_thrift2(deadline)
        else:
            self.wait_ready(deadline)

    def stop(self, grace_s=30):
        """SIGTERM the Thrift servers, then the master (SIGKILL after ``grace_s`` each).

        Each runs in its own session (a Ctrl-C at the terminal reaches none of them), so an
        interruption while stopping (a second Ctrl-C inside a wait) must not leave any running:
        whatever is still alive then is SIGKILLed before the interruption goes on.
        """
        procs = [*self.extra_thrift, self.thrift, self.thrift2, self.master]
        try:
            for proc in procs[:-1]:
                self._end(proc, signal.SIGTERM, grace_s)
            self._end(self.master, signal.SIGTERM, grace_s)
        except BaseException:
            for proc in procs:
                if proc is not None and proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            raise

    def all_running(self):
        """True while every process this instance started is alive."""
        return all(proc.poll() is None for proc in (self.master, self.thrift, self.thrift2) if proc is not None)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run a private Apache HBase + Thrift1 (and Thrift2) server on loopback.")
    parser.add_argument("directory", help="where configuration, data and logs go (kept between runs)")
    parser.add_argument("--version", help="HBase version (default: newest 2.6.x on Maven Central)")
    parser.add_argument("--framed", action="store_true", help="framed transport (default buffered)")
    parser.add_argument("--compact", action="store_true", help="compact protocol (default binary)")
    parser.add_argument("--thrift2", action="store_true",
                        help="also run HBase's Thrift2 server and print its URL (api=thrift2) too")
    parser.add_argument("--region-servers", type=int, metavar="N",
                        help="a pseudo-distributed cluster: ZooKeeper, a master, N region servers and N "
                             "Thrift servers, each its own JVM (default: one standalone JVM)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for HBase (default 180; a cluster 180 + 60 a region server)")
    args = parser.parse_args(argv)
    options = dict(version=args.version, transport="framed" if args.framed else "buffered",
                   protocol="compact" if args.compact else "binary",
                   log=lambda msg: print(msg, file=sys.stderr), thrift2=args.thrift2)
    if args.region_servers is not None:
        if args.region_servers < 1:
            parser.error("--region-servers must be 1 or more")
        from local_hbase_cluster import LocalHBaseCluster  # noqa: PLC0415 - it imports this module

        hbase = LocalHBaseCluster(args.directory, region_servers=args.region_servers, **options)
    else:
        hbase = LocalHBase(args.directory, **options)
    timeout = args.timeout if args.timeout is not None else getattr(hbase, "default_timeout_s", 180)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        hbase.start(timeout)
        print(f"HBase {hbase.lib.parent.name} ready in {hbase.started_in_s:.1f} s; "
              f"logs in {hbase.directory}", file=sys.stderr)
        print(hbase.url, flush=True)
        if hbase.thrift2_url:
            print(hbase.thrift2_url, flush=True)
        while hbase.all_running():
            time.sleep(1)
        print(f"HBase exited{hbase.log_tail('master')}", file=sys.stderr)
        return 1
    except HBaseUnavailable as exc:
        print(f"local_hbase: {exc}", file=sys.stderr)
        return 1
    finally:
        hbase.stop()


if __name__ == "__main__":
    sys.exit(main())
