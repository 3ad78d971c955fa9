"""A standalone Apache HBase (master, region server and ZooKeeper in one JVM) and HBase's own
Thrift1 (and Thrift2) server, each a child process: :class:`LocalHBase`.  ``python
tools/servers/local_hbase.py DIR`` runs one; its docstring says what it configures and when it
is ready.
"""

import os
import signal
import subprocess
import time
from pathlib import Path

from servers.hbase_jars import JAVA_FLAGS, LOG4J2_PROPERTIES, HBaseUnavailable, fetch_jars, free_port, site_xml


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
        (self.conf_dir / "hbase-site.xml").write_text(site_xml(properties))
        (self.conf_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
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
        from socorro_store.backends.hbase.thrift2_idl import hbase2
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

