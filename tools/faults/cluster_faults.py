"""Faults on a local HBase cluster under production-shape ingest (issue 31, part 4).

    python tools/faults/cluster_faults.py [--dir DIR] [--region-servers 3] [--faults regionserver,thrift,move-split,master]

Starts a :class:`local_hbase_cluster.LocalHBaseCluster` (ZooKeeper, a master, N region servers,
N Thrift1 and N Thrift2 servers), then runs one trial per fault, each on a fresh table prefix
whose salted tables are pre-split on the 16 salts (created through Thrift2) and spread:

* collector processes (``chaos_harness.py steady-writer``: one crash per call) and processor
  processes (``steady-processor``: take, read, save processed) ingest through the multi-server
  URL naming every Thrift1 server; a typed error makes them try the same call again (saves are
  idempotent), so they ride through the fault;
* mid-ingest, the fault (:data:`FAULTS`):

  - ``regionserver``: SIGKILL region server 1 (its regions are reassigned once its ZooKeeper
    session expires, its WAL split and replayed), restart it after ``hold_s``;
  - ``thrift``: SIGKILL Thrift server 1 (clients go on through the others), restart it after;
  - ``move-split``: move every region of the prefix's tables to the next region server
    (``ClusterAdmin move``), then split a region of ``crash_reports`` (``ClusterAdmin split``);
  - ``master``: SIGKILL the master, restart it after ``hold_s`` (no region moves meanwhile);

* the collectors stop, the processors drain the queue, and :func:`chaos_harness.check_store`
  checks: every acknowledged crash readable, none processed twice, counters exact after
  ``rollup``, queue drained (nothing left to take).

Figures per fault: ``save_stall_s`` (the longest time with no save acknowledged by any collector,
from the fault to the last save) and ``process_stall_s`` (the same for processed crashes), with
the problem counts (all must be 0).
"""

import argparse
import os
import sys
import tempfile
import time
import uuid

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from faults import chaos_harness as chaos  # noqa: E402

FAULTS = ("regionserver", "thrift", "move-split", "master")
#: the Thrift API the ingest goes through.  Thrift2 by default: its scans are one stateless call
#: a page (``getScannerResults``).  A Thrift1 scanner lives in the Thrift server that opened it,
#: and the multi-server pool sends each call to the next server in turn, so a scanner's fetch
#: may reach another server ("scanner ID is invalid"), see the report of issue 31 part 4.
APIS = ("thrift2", "thrift1")
#: client options of the ingest URL: a call stuck on a dead region gives up after 20 s (and is
#: tried again by the child); HBase's own client inside the Thrift server gives up after 60 s
CLIENT_OPTIONS = "timeout_ms=20000&retries=2"
PROBLEMS = ("lost", "lost_processed", "duplicates", "missing_after", "orphan_after", "drift_before",
            "queue_drift_before", "drift_after", "queue_drift_after", "queue_left", "raw_errors", "gave_up")


def create_tables(cluster, prefix):
    """The store's tables under ``prefix``, through Thrift2: salted ones pre-split on the salts."""
    from socorro_store.backends.hbase import HBaseThrift2Backend
    from socorro_store.backends.hbase.servers import parse_servers
    from socorro_store.schema import table_admin

    with HBaseThrift2Backend(servers=parse_servers(cluster.thrift2_url), table_prefix=prefix) as backend:
        report = table_admin.create_tables(backend)
        if report.mismatched or report.not_presplit:
            raise RuntimeError(f"tables under {prefix} not as specified: {report}")


def _wait_saves(paths, n, timeout_s, procs):
    """Until the collectors acknowledged ``n`` more saves (or ``timeout_s``, or they all ended)."""
    start = sum(len(chaos.read_ack_times(p)) for p in paths)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        if sum(len(chaos.read_ack_times(p)) for p in paths) - start >= n:
            return True
        time.sleep(0.2)
    return False


def do_fault(cluster, fault, prefix, hold_s, log, api="thrift2"):
    """Inflict ``fault`` on ``cluster`` (``thrift``: a server of ``api``); returns ``{step: seconds}``."""
    steps = {}

    def step(name, call):
        began = time.monotonic()
        out = call()
        steps[name] = round(time.monotonic() - began, 1)
        log(f"  {fault}: {name} in {steps[name]} s{f' ({out})' if out else ''}")

    if fault in ("regionserver", "thrift", "master"):
        role = {"regionserver": "regionserver", "thrift": "thrift2" if api == "thrift2" else "thrift",
                "master": "master"}[fault]
        index = 0 if role == "master" else 1
        step(f"kill {role}-{index}", lambda: cluster.kill(role, index))
        time.sleep(hold_s)
        step(f"restart {role}-{index}", lambda: cluster.restart(role, index))
    elif fault == "move-split":
        step("move every region", lambda: cluster.admin("move", prefix + "_"))
        # a crash row key starts with its salt; split the 8 salt's region in the middle of it
        step("split crash_reports", lambda: cluster.admin("split", f"{prefix}_crash_reports", b"88".hex()))
    else:
        raise ValueError(f"unknown fault {fault!r} (one of {', '.join(FAULTS)})")
    return steps


def run_fault(cluster, fault, workdir, collectors=1, processors=2, per_collector=20000, warmup=40,
              hold_s=20, after_s=10, api="thrift2", log=print):
    """One trial of ``fault`` under ingest (see the module docstring) through every server of
    ``api`` (:data:`APIS`); returns its figures."""
    prefix = f"f{fault[:2]}{uuid.uuid4().hex[:6]}"
    create_tables(cluster, prefix)
    base = f"{cluster.thrift2_url if api == 'thrift2' else cluster.url}&table_prefix={prefix}"
    url = f"{base}&{CLIENT_OPTIONS}"
    work = os.path.join(str(workdir), prefix)
    os.makedirs(work)
    stop, done = os.path.join(work, "stop"), os.path.join(work, "done")
    seed = f"cluster-{fault}"
    save_paths = [os.path.join(work, f"collector-{c}") for c in range(collectors)]
    proc_paths = [os.path.join(work, f"processor-{p}") for p in range(processors)]
    writers = [chaos.spawn("steady-writer", url, seed, c * per_collector, per_collector, path, stop)
               for c, path in enumerate(save_paths)]
    readers = [chaos.spawn("steady-processor", url, path, done, 20) for path in proc_paths]
    try:
        _wait_saves(save_paths, warmup, 120, writers)
        killed_mid_ingest = all(p.poll() is None for p in writers + readers)
        fault_at = time.time()
        steps = do_fault(cluster, fault, prefix, hold_s, log, api)
        recovered = _wait_saves(save_paths, warmup, 180, writers)  # ingest goes on after the fault
        time.sleep(after_s)
        open(stop, "w").close()
        for proc in writers:
            proc.wait(300)
        ingest_end = time.time()
        open(done, "w").close()
        for proc in readers:
            proc.wait(600)
    finally:
        for proc in writers + readers:
            chaos.kill(proc)
    saved, processed = chaos.merge_acks(save_paths), chaos.merge_acks(proc_paths)
    acks = {"S": saved["S"], "P": processed["P"], "E": saved["E"] + processed["E"],
            "X": saved["X"] + processed["X"]}
    # every crash a collector tried: the acknowledged ones, and the one in flight when it stopped
    workload = [(seed, c * per_collector, min(per_collector, len(chaos.read_acks(p)["S"]) + 1))
                for c, p in enumerate(save_paths)]
    save_times = [t for p in save_paths for t in chaos.read_ack_times(p)]
    process_times = [t for p in proc_paths for t in chaos.read_ack_times(p)]
    result = chaos.check_store(url, workload, acks)
    result["queue_left"] = len(chaos.drain_queue(url))
    result.update(
        fault=fault, api=api, steps=steps, killed_mid_ingest=killed_mid_ingest, recovered=recovered,
        save_stall_s=round(chaos.longest_gap(save_times, fault_at, max(save_times, default=fault_at)), 1),
        process_stall_s=round(chaos.longest_gap(process_times, fault_at,
                                                min(ingest_end, max(process_times, default=fault_at))), 1),
        retries=sum(chaos.count_retries(p) for p in save_paths + proc_paths),
        raw_errors=len(acks["X"]), gave_up=len(acks["E"]), error_examples=(acks["X"] + acks["E"])[:3],
        crashes_per_s=round(len(save_times) / max(1e-9, max(save_times) - min(save_times)), 1) if save_times else 0)
    return result


COLUMNS = [("fault", "{}"), ("api", "{}"), ("acknowledged", "{}"), ("processed_acknowledged", "{}"),
           ("save_stall_s", "{}"),
           ("process_stall_s", "{}"), ("retries", "{}"), ("lost", "{}"), ("duplicates", "{}"),
           ("drift_after", "{}"), ("queue_drift_after", "{}"), ("queue_left", "{}"), ("raw_errors", "{}")]


def table(results):
    """The figures as a plain-text table, one line a fault."""
    rows = [[name for name, _fmt in COLUMNS]] + [[fmt.format(r.get(name)) for name, fmt in COLUMNS]
                                                  for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows)


def problems(result):
    """The problem counts of a trial that are not 0 (``{}``: the store held)."""
    return {k: result.get(k) for k in PROBLEMS if result.get(k)}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tools/faults/cluster_faults.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="the cluster's directory (default: a new temporary one)")
    parser.add_argument("--region-servers", type=int, default=3)
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of {', '.join(FAULTS)}")
    parser.add_argument("--api", choices=APIS, default="thrift2", help="the Thrift API the ingest goes through")
    parser.add_argument("--collectors", type=int, default=1)
    parser.add_argument("--processors", type=int, default=2)
    parser.add_argument("--hold-s", type=float, default=20, help="how long a killed process stays down")
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)} (of {', '.join(FAULTS)})")
    from servers.local_hbase_cluster import LocalHBaseCluster

    directory = args.dir or tempfile.mkdtemp(prefix="cluster-faults-")
    cluster = LocalHBaseCluster(directory, region_servers=args.region_servers, thrift2=True, log=print)
    results, failed = [], False
    try:
        cluster.start()
        print(f"cluster of {args.region_servers} region servers up in {cluster.started_in_s:.1f} s: {cluster.url}")
        for fault in faults:
            result = run_fault(cluster, fault, directory, args.collectors, args.processors, hold_s=args.hold_s,
                               api=args.api)
            results.append(result)
            bad = problems(result)
            failed |= bool(bad)
            print(f"{fault}: steps {result['steps']}, problems {bad or 'none'}, "
                  f"{result['crashes_per_s']} crashes/s{', errors ' + str(result['error_examples']) if bad else ''}",
                  flush=True)
    finally:
        cluster.stop(grace_s=10)
    print(table(results))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
