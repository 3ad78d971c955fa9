"""A pseudo-distributed Apache HBase on this machine: ZooKeeper, a master and N region servers.

    python tools/servers/local_hbase.py DIR --region-servers 3 [--thrift2] [--framed] [--compact]

Each process is its own JVM, started from the jars :func:`servers.hbase_jars.fetch_jars` caches:

* ``zookeeper``: ZooKeeper's own ``ZooKeeperServerMain`` (the jar HBase ships), standalone, on
  loopback, its admin web server off, ``tickTime`` 500 ms so sessions may be as short as 1 s.
* ``master``: ``HMaster start`` with ``hbase.cluster.distributed=true`` (it hosts no region).
* ``regionserver`` 0..N-1: ``HRegionServer start``, each with its own RPC port.
* ``thrift`` 0..N-1: one HBase Thrift1 server per region server (as a production cluster runs one
  per region server host); with ``thrift2=True`` also ``thrift2`` 0..N-1.

The rootdir (``DIR/data/root``) and the WALs are on local disk; every port is on loopback and
chosen free once (a restart on the same DIR keeps them); no process has a web UI (every info port
is -1).  :meth:`LocalHBaseCluster.start` writes ``DIR/cluster.json`` (each process's role, index,
pid and ports, and the URLs) and rewrites it whenever a process is restarted.

:attr:`url` names every Thrift1 server: ``hbase://127.0.0.1:P1,127.0.0.1:P2,…?…``, which the
store's clients spread over (see ``socorro_store/backends/hbase_servers.py``).

**Failure detection** is short, for tests: :data:`FAST_FAILURE` lists the settings, each with why.
A SIGKILLed region server is noticed when its ZooKeeper session expires
(``zookeeper.session.timeout``, HBase's default 90 s, here 10 s); the master then splits its WAL
and reassigns its regions.

**Pre-split and spread.**  The master waits for all N region servers before it assigns anything
(``hbase.master.wait.on.regionservers.mintostart``), so a table created afterwards has its regions
assigned round-robin over all of them; the balancer runs every 20 s, per table, so regions spread
again after a region server comes back.  Thrift1 cannot pre-split: create the salted tables
through a Thrift2 server (``--thrift2``, ``?api=thrift2``), which pre-splits them on the 16 salts.

:class:`LocalHBaseCluster` is a :class:`servers.hbase_standalone.LocalHBase`: ``kill(role, index)`` SIGKILLs
one process, ``restart(role, index)`` starts it again on the same ports and rootdir; ``stop()``
ends them all (Thrift servers, region servers, the master, then ZooKeeper), and whatever fails
while starting or stopping leaves no process behind.
"""

import json
import os
import signal
import socket
import subprocess
import time

from servers.hbase_jars import JAVA_FLAGS, LOG4J2_PROPERTIES, HBaseUnavailable, fetch_jars, free_port, site_xml
from servers.hbase_standalone import LocalHBase

#: Settings that make a dead process noticed in seconds (HBase's defaults are for a data centre).
FAST_FAILURE = {
    # a SIGKILLed region server's ZooKeeper node goes when its session expires (default 90 s);
    # 10 s, not less: 11 JVMs share 2 cores here, and a live server that misses its heartbeats
    # for that long is declared dead and aborts
    "zookeeper.session.timeout": 10000,
    # the HBase client inside each Thrift server: retry a region that moved for up to 60 s (not
    # 20 min), so a call in flight when a region server dies ends within the test's bounds
    "hbase.client.operation.timeout": 60000,
    "hbase.client.retries.number": 35,
    "hbase.client.pause": 20,
    # one RPC to a region server that stopped answering fails after 10 s, not 60 s
    "hbase.rpc.timeout": 10000,
    # a region server checks in with the master every second (default 3 s)
    "hbase.regionserver.msginterval": 1000,
    # at shutdown, or after ZooKeeper went away, give up on ZooKeeper quickly
    "zookeeper.recovery.retry": 1,
    "zookeeper.recovery.retry.intervalmill": 200,
}

#: A tiny HBase Admin client (compiled once with ``javac`` against the cached jars): what Thrift
#: cannot do.  ``move PREFIX``: every region of the tables named ``PREFIX*`` to the next region
#: server (by port); ``split TABLE HEXKEY``: split the region holding the key at it (waits);
#: ``balance``: run the balancer once.
ADMIN_JAVA = """
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.*;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.util.Bytes;

public class ClusterAdmin {
  public static void main(String[] a) throws Exception {
    try (Connection c = ConnectionFactory.createConnection(HBaseConfiguration.create());
         Admin admin = c.getAdmin()) {
      List<ServerName> servers = new ArrayList<>(admin.getRegionServers());
      servers.sort(Comparator.comparingInt(ServerName::getPort));
      if (a[0].equals("move")) {
        int moved = 0;
        for (TableName t : admin.listTableNames()) {
          if (!t.getNameAsString().startsWith(a[1])) continue;
          for (HRegionLocation loc : c.getRegionLocator(t).getAllRegionLocations()) {
            ServerName to = servers.get((servers.indexOf(loc.getServerName()) + 1) % servers.size());
            admin.move(loc.getRegion().getEncodedNameAsBytes(), to);
            moved++;
          }
        }
        System.out.println("moved " + moved);
      } else if (a[0].equals("split")) {
        byte[] key = Bytes.fromHex(a[2]);
        RegionInfo region = c.getRegionLocator(TableName.valueOf(a[1])).getRegionLocation(key, true).getRegion();
        admin.splitRegionAsync(region.getRegionName(), key).get(120, TimeUnit.SECONDS);
        System.out.println("split " + region.getRegionNameAsString());
      } else if (a[0].equals("balance")) {
        System.out.println("balanced " + admin.balance());
      } else {
        throw new IllegalArgumentException("move PREFIX | split TABLE HEXKEY | balance");
      }
    }
  }
}
"""

ROLE_ORDER = ("zookeeper", "master", "regionserver", "thrift", "thrift2")


def _ruok(port, timeout_s=2.0):
    """True when the ZooKeeper on ``port`` answers its ``ruok`` four-letter word."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            sock.sendall(b"ruok")
            return sock.recv(16) == b"imok"
    except OSError:
        return False


class LocalHBaseCluster(LocalHBase):
    """ZooKeeper, a master, ``region_servers`` region servers and as many Thrift servers, under
    ``directory`` (see the module docstring).  ``url`` names every Thrift1 server, ``thrift2_url``
    every Thrift2 server (None without ``thrift2``)."""

    ROLES = {role: role for role in ROLE_ORDER}

    def __init__(self, directory, region_servers=3, version=None, transport="buffered", protocol="binary",
                 master_heap="768m", regionserver_heap="1g", thrift_heap="384m", zookeeper_heap="256m",
                 log=print, thrift2=False):
        if not isinstance(region_servers, int) or region_servers < 1:
            raise ValueError(f"region_servers must be an int >= 1, not {region_servers!r}")
        super().__init__(directory, version=version, transport=transport, protocol=protocol,
                         master_heap=master_heap, thrift_heap=thrift_heap, log=log, thrift2=thrift2)
        self.region_servers = region_servers
        self.regionserver_heap, self.zookeeper_heap = regionserver_heap, zookeeper_heap
        self.default_timeout_s = 180 + 60 * region_servers
        self.ports = {}  # role -> [port, ...] (zookeeper, master: one)
        self.procs = {role: [None] * self._count(role) for role in ROLE_ORDER}

    def _count(self, role):
        if role in ("zookeeper", "master"):
            return 1
        if role == "thrift2" and not self.with_thrift2:
            return 0
        return self.region_servers

    # -- the attributes LocalHBase's methods use ----------------------------------------------
    @property
    def master(self):
        return self.procs["master"][0] if hasattr(self, "procs") else None

    @master.setter
    def master(self, proc):
        if hasattr(self, "procs"):
            self.procs["master"][0] = proc

    @property
    def thrift(self):
        return self.procs["thrift"][0] if hasattr(self, "procs") else None

    @thrift.setter
    def thrift(self, proc):
        if hasattr(self, "procs"):
            self.procs["thrift"][0] = proc

    @property
    def thrift2(self):
        return self.procs["thrift2"][0] if hasattr(self, "procs") and self.procs["thrift2"] else None

    @thrift2.setter
    def thrift2(self, proc):
        if hasattr(self, "procs") and self.procs["thrift2"]:
            self.procs["thrift2"][0] = proc

    # -- configuration ---------------------------------------------------------------------
    def _configure(self):
        ports_file = self.conf_dir / "cluster-ports.json"
        if ports_file.exists():  # a restart on the same rootdir keeps its ports
            saved = json.loads(ports_file.read_text())
            if saved.get("region_servers") != self.region_servers:
                raise HBaseUnavailable(f"{self.directory} holds a cluster of {saved.get('region_servers')} "
                                       f"region servers, not {self.region_servers}: use another directory")
            self.ports = saved["ports"]
            if self.with_thrift2 and not self.ports.get("thrift2"):
                self.ports["thrift2"] = [free_port() for _ in range(self.region_servers)]
                ports_file.write_text(json.dumps({"region_servers": self.region_servers, "ports": self.ports}))
        else:
            n = self.region_servers
            self.ports = {"zookeeper": [free_port()], "master": [free_port()],
                          "regionserver": [free_port() for _ in range(n)],
                          "thrift": [free_port() for _ in range(n)],
                          "thrift2": [free_port() for _ in range(n)] if self.with_thrift2 else []}
            self.conf_dir.mkdir(parents=True, exist_ok=True)
            ports_file.write_text(json.dumps({"region_servers": n, "ports": self.ports}))
        self.thrift_port = self.ports["thrift"][0]
        self.thrift2_port = self.ports["thrift2"][0] if self.with_thrift2 else None
        data = self.directory / "data"
        properties = {
            "hbase.cluster.distributed": "true",
            "hbase.rootdir": f"file://{data / 'root'}",
            "hbase.tmp.dir": str(data / "tmp"),
            "hbase.zookeeper.quorum": "127.0.0.1",
            "hbase.zookeeper.property.clientPort": self.ports["zookeeper"][0],
            "hbase.master.port": self.ports["master"][0],
            "hbase.master.ipc.address": "127.0.0.1",
            "hbase.regionserver.ipc.address": "127.0.0.1",
            "hbase.master.info.port": -1,
            "hbase.regionserver.info.port": -1,
            "hbase.thrift.info.port": -1,
            "hbase.unsafe.stream.capability.enforce": "false",
            "hbase.io.compress.lzo.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.LzoCodec",
            "hbase.io.compress.lz4.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.Lz4Codec",
            "hbase.io.compress.zstd.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.ZstdCodec",
            "hbase.procedure.remote.dispatcher.delay.msec": 1,
            "hbase.hregion.memstore.mslab.enabled": "false",
            "hbase.thrift.minWorkerThreads": 16,
            # assign nothing before every region server has checked in: regions then spread over all
            "hbase.master.wait.on.regionservers.mintostart": self.region_servers,
            # the balancer every 20 s (default 5 min), table by table, so each table spreads
            "hbase.balancer.period": 20000,
            "hbase.master.loadbalance.bytable": "true",
            **FAST_FAILURE,
        }
        (self.conf_dir / "hbase-site.xml").write_text(site_xml(properties))
        (self.conf_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        zk_data = data / "zookeeper"
        zk_data.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "zoo.cfg").write_text("\n".join([
            f"dataDir={zk_data}", f"clientPort={self.ports['zookeeper'][0]}", "clientPortAddress=127.0.0.1",
            "tickTime=500", "minSessionTimeout=1000", "maxSessionTimeout=60000", "maxClientCnxns=0",
            "admin.enableServer=false", "4lw.commands.whitelist=ruok,srvr,stat", ""]))

    def _thrift_urls(self, ports, query):
        servers = ",".join(f"127.0.0.1:{port}" for port in ports)
        return f"hbase://{servers}?{query}"

    @property
    def url(self):
        """The store URL naming every Thrift1 server."""
        return self._thrift_urls(self.ports["thrift"], f"transport={self.transport}&protocol={self.protocol}")

    @property
    def thrift2_url(self):
        """The store URL naming every Thrift2 server (None unless started with ``thrift2=True``)."""
        if not self.with_thrift2:
            return None
        return self._thrift_urls(self.ports["thrift2"], "api=thrift2")

    def thrift_urls(self, api="thrift1"):
        """One single-server store URL per Thrift server of ``api``."""
        if api == "thrift2":
            return [f"hbase://127.0.0.1:{p}?api=thrift2" for p in self.ports["thrift2"]]
        return [f"hbase://127.0.0.1:{p}?transport={self.transport}&protocol={self.protocol}"
                for p in self.ports["thrift"]]

    # -- processes ---------------------------------------------------------------------------
    def process(self, role, index=0):
        """The ``subprocess.Popen`` of ``role`` (see :data:`ROLE_ORDER`) number ``index``."""
        if role not in self.procs or not 0 <= index < len(self.procs[role]):
            raise ValueError(f"no process {role}[{index}] (roles: {', '.join(ROLE_ORDER)}; "
                             f"{self.region_servers} region servers)")
        return self.procs[role][index]

    def _name(self, role, index):
        return role if role in ("zookeeper", "master") else f"{role}-{index}"

    def _launch(self, role, index):
        name, port = self._name(role, index), self.ports[role][index]
        if role == "zookeeper":
            proc = self._java(name, self.zookeeper_heap, "org.apache.zookeeper.server.ZooKeeperServerMain",
                              [str(self.conf_dir / "zoo.cfg")], jvm_args=["-Dzookeeper.admin.enableServer=false"])
        elif role == "master":
            proc = self._java(name, self.master_heap, "org.apache.hadoop.hbase.master.HMaster", ["start"])
        elif role == "regionserver":
            proc = self._java(name, self.regionserver_heap, "org.apache.hadoop.hbase.regionserver.HRegionServer",
                              [f"-Dhbase.regionserver.port={port}", "start"])
        elif role == "thrift":
            proc = self._thrift_server(name, port, self.transport, self.protocol)
        else:
            proc = self._java(name, self.thrift_heap, "org.apache.hadoop.hbase.thrift2.ThriftServer",
                              ["-b", "127.0.0.1", "-p", str(port), "-threadpool", "start"])
        self.procs[role][index] = proc
        return proc

    def start_master(self):
        self._launch("master", 0)

    def start_thrift(self):
        self._launch("thrift", 0)

    def start_thrift2(self):
        self._launch("thrift2", 0)

    def start(self, timeout_s=None):
        """Fetch, configure, start every process not running, wait until each Thrift server
        answers and DDL works, write ``cluster.json``.  Returns ``self``."""
        timeout_s = self.default_timeout_s if timeout_s is None else timeout_s
        self.lib = fetch_jars(self.version, log=self.log)
        self._configure()
        began = time.monotonic()
        deadline = began + timeout_s
        try:  # whatever fails (a JVM that cannot start, Ctrl-C), nothing started outlives it
            if not self._alive("zookeeper", 0):
                self._launch("zookeeper", 0)
            self._wait_zookeeper(deadline)
            for role in ROLE_ORDER[1:]:
                for index in range(self._count(role)):
                    if not self._alive(role, index):
                        self._launch(role, index)
            self.write_cluster_json()
            self.wait_ready(deadline)
        except BaseException:
            self.stop()
            raise
        self.started_in_s = time.monotonic() - began
        return self

    def _alive(self, role, index):
        proc = self.procs[role][index]
        return proc is not None and proc.poll() is None

    def _watched(self):
        return [(self._name(role, i), proc) for role in ROLE_ORDER for i, proc in enumerate(self.procs[role])]

    def _wait_zookeeper(self, deadline):
        while time.monotonic() < deadline:
            proc = self.procs["zookeeper"][0]
            if proc.poll() is not None:
                raise HBaseUnavailable(f"ZooKeeper exited with {proc.returncode}{self.log_tail('zookeeper')}")
            if _ruok(self.ports["zookeeper"][0]):
                return
            time.sleep(0.2)
        raise HBaseUnavailable(f"ZooKeeper did not answer on 127.0.0.1:{self.ports['zookeeper'][0]}"
                               f"{self.log_tail('zookeeper')}")

    def wait_ready(self, deadline, ddl=True):
        """Until DDL works through the first Thrift1 server (the master has all N region servers:
        it assigns nothing before), and every Thrift1 (and Thrift2) server answers."""
        watched = self._watched()
        for index, port in enumerate(self.ports["thrift"]):
            self._wait_answering(deadline, [("master", self.master), *watched], port, self.transport,
                                 self.protocol, ddl=ddl and index == 0)
        for index in range(self._count("thrift2")):
            self.thrift2_port = self.ports["thrift2"][index]
            try:
                self.wait_thrift2(deadline)
            finally:
                self.thrift2_port = self.ports["thrift2"][0]

    def kill(self, role, index=0):
        """SIGKILL one process (``role`` in :data:`ROLE_ORDER`, ``index`` from 0): no flush, no
        goodbye to ZooKeeper; the others keep running."""
        self._end(self.process(role, index), signal.SIGKILL, 10)

    def restart(self, role, index=0, timeout_s=None, wait=True):
        """Start one process again on its ports and the same rootdir (a live one is SIGKILLed
        first); ``wait``: until it serves (a Thrift server answers; a region server or the
        master: until DDL works again).  Rewrites ``cluster.json``."""
        self.kill(role, index)
        self._launch(role, index)
        self.write_cluster_json()
        if not wait:
            return
        deadline = time.monotonic() + (self.default_timeout_s if timeout_s is None else timeout_s)
        if role == "zookeeper":
            self._wait_zookeeper(deadline)
        elif role == "thrift":
            self._wait_answering(deadline, [(self._name(role, index), self.procs[role][index])],
                                 self.ports["thrift"][index], self.transport, self.protocol, ddl=False)
        elif role == "thrift2":
            saved, self.thrift2_port = self.thrift2_port, self.ports["thrift2"][index]
            try:
                self.wait_thrift2(deadline)
            finally:
                self.thrift2_port = saved
        else:
            self._wait_answering(deadline, [(self._name(role, index), self.procs[role][index])],
                                 self.ports["thrift"][0], self.transport, self.protocol, ddl=True)

    def admin(self, *args, timeout_s=300):
        """Run :data:`ADMIN_JAVA` (``move PREFIX``, ``split TABLE HEXKEY``, ``balance``) against
        the cluster; returns its last output line.  Compiled into ``DIR/conf/admin`` on first use."""
        classes = self.conf_dir / "admin"
        if not (classes / "ClusterAdmin.class").exists():
            classes.mkdir(parents=True, exist_ok=True)
            (classes / "ClusterAdmin.java").write_text(ADMIN_JAVA)
            subprocess.run(["javac", "-nowarn", "-cp", f"{self.lib}/*", "-d", str(classes),
                            str(classes / "ClusterAdmin.java")], check=True, capture_output=True, timeout=timeout_s)
        done = subprocess.run(["java", "-Xmx256m", *JAVA_FLAGS, f"-Dhbase.log.file={self.directory / 'admin.log'}", "-cp",
                               f"{self.conf_dir}:{classes}:{self.lib}/*", "ClusterAdmin", *map(str, args)],
                              capture_output=True, text=True, timeout=timeout_s)
        if done.returncode:
            raise HBaseUnavailable(f"ClusterAdmin {' '.join(map(str, args))} failed: {done.stderr[-2000:]}")
        return (done.stdout.strip().splitlines() or [""])[-1]

    def all_running(self):
        return all(proc is not None and proc.poll() is None for _name, proc in self._watched())

    def describe(self):
        """What ``cluster.json`` holds: every process's role, index, pid and ports, and the URLs."""
        port_names = {"zookeeper": "client", "master": "rpc", "regionserver": "rpc", "thrift": "thrift",
                      "thrift2": "thrift2"}
        processes = []
        for role in ROLE_ORDER:
            for index, proc in enumerate(self.procs[role]):
                processes.append({"role": role, "index": index, "name": self._name(role, index),
                                  "pid": proc.pid if proc is not None and proc.poll() is None else None,
                                  "ports": {port_names[role]: self.ports[role][index]},
                                  "log": str(self.directory / f"{self._name(role, index)}.log")})
        return {"region_servers": self.region_servers, "directory": str(self.directory),
                "version": self.lib.parent.name if self.lib else None, "url": self.url,
                "thrift2_url": self.thrift2_url, "processes": processes}

    def write_cluster_json(self):
        path = self.directory / "cluster.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.describe(), indent=2) + "\n")
        os.replace(tmp, path)

    def stop(self, grace_s=30):
        """End every process: the Thrift servers, then the region servers, then the master, then
        ZooKeeper; each group gets SIGTERM at once and SIGKILL after ``grace_s``.  An interruption
        while stopping (a second Ctrl-C) SIGKILLs whatever is still running before it goes on."""
        procs = [proc for _name, proc in self._watched()]
        try:
            extra = list(getattr(self, "extra_thrift", []))  # start_extra_thrift's servers
            procs += extra
            for group in (("thrift", "thrift2"), ("regionserver",), ("master",), ("zookeeper",)):
                self._end_all([p for role in group for p in self.procs[role]] + (extra if "thrift" in group else []),
                              signal.SIGTERM, grace_s)
        except BaseException:
            for proc in procs:
                if proc is not None and proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            raise

    def _end_all(self, procs, sig, grace_s):
        """Signal every live one of ``procs`` at once, then wait for each (SIGKILL at the end of
        ``grace_s``)."""
        live = [p for p in procs if p is not None and p.poll() is None]
        for proc in live:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace_s
        for proc in live:
            self._end(proc, sig, max(0.1, end - time.monotonic()))


def kill_cluster_processes(cluster_json):
    """SIGKILL every process a ``cluster.json`` lists that still runs (a cluster whose owner was
    itself SIGKILLed).  Returns the pids signalled."""
    described = json.loads(open(cluster_json).read())
    killed = []
    for process in described["processes"]:
        if process["pid"]:
            try:
                os.killpg(process["pid"], signal.SIGKILL)
                killed.append(process["pid"])
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def start_cluster(directory, region_servers=3, thrift2=True, log=print, timeout_s=None):
    """A started :class:`LocalHBaseCluster` (for tests and benchmarks)."""
    return LocalHBaseCluster(directory, region_servers=region_servers, thrift2=thrift2, log=log).start(timeout_s)


__all__ = ["FAST_FAILURE", "LocalHBaseCluster", "ROLE_ORDER", "kill_cluster_processes", "start_cluster"]
