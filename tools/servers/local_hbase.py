"""A private Apache HBase on this machine, in one command: jars from Maven Central, no Docker.

    python tools/servers/local_hbase.py DIR [--version 2.6.1] [--framed] [--compact] [--thrift2]
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

The test fixture (``tests/fixtures_hbase_real.py``), the fault tests and the benchmarks use the
classes directly: :class:`servers.hbase_standalone.LocalHBase` (which also kills and restarts each
process on the same rootdir) and :class:`servers.local_hbase_cluster.LocalHBaseCluster`, both on
:mod:`servers.hbase_jars`; this module is only the command, above both.  Without Java or Maven
they raise :class:`HBaseUnavailable` with one line saying what is missing; when HBase does not
come up, the message ends with the tail of its log.
"""

import argparse
import signal
import sys
import time
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its servers package imports
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from servers.hbase_jars import HBaseUnavailable  # noqa: E402
from servers.hbase_standalone import LocalHBase  # noqa: E402
from servers.local_hbase_cluster import LocalHBaseCluster  # noqa: E402


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
