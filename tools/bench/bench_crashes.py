#!/usr/bin/env python
"""Crash lifecycle benchmark: this store vs Socorro's own HBase access pattern vs the bare crash row.

Each mode runs the whole lifecycle of N crashes (save raw -> take from the queue -> save
processed) for each payload shape (metadata-only; ~150 KB dumps), in its own child process on
its own fresh store (a temp sub-directory, or a fresh table prefix through a gateway / HBase).
It prints crashes/s, backend calls per crash (``backend.calls``: one per RPC through the
gateway) in total, by phase and by kind, p50/p99 latencies and peak RSS.

Like is compared with like: every ratio is labelled with both of its modes.

  p   production shape, this store: T collector threads calling ``save_raw_crash`` (one crash
      per call) while T processor threads each iterate ``new_crashes()`` and call
      ``save_processed`` per crash, until every crash is processed
  pb  production shape, Socorro (tools/bench/socorro_2013.py, which cites Socorro's source): T
      collector threads doing Socorro's ``save_raw_crash`` calls; T processor threads sharing
      one 16-scanner queue pass as Socorro's processor did (each pulls the pass's next row under
      a lock, then runs Socorro's ``save_processed``; see ``socorro_2013.SharedPass``)
  a1  this store, one crash per call: per chunk of --batch crashes, ``save_raw_crash`` each, then
      one ``new_crashes()`` pass calling ``save_processed`` per crash
  b   Socorro, one crash per call, same chunks: Socorro's ``save_raw_crash`` each, then one
      ``new_crashes`` pass (16 scanners opened once, one row per fetch, delete + decrement per
      row) calling Socorro's ``save_processed`` per crash
  a2  this store, batched: ``save_raw_crashes`` / ``new_crashes(limit)`` /
      ``save_processed_crashes`` of --batch crashes per call
  c1  bare limit, one crash per call: only the crash row (raw put, processed put)
  c2  bare limit, batched: the same puts, --batch rows per call
  pc  bare limit in production shape: the same T + T threads writing only those two puts, the
      crash ids handed over in memory (no queue, indexes, counters or checks): the most any
      design of the lifecycle could do on this machine and server (not in the default --modes)
  ps  the synchronous budget of one derivation path: p with only what a save must make durable
      before its ack (crash row, queue pointers, submitted_time, a change record) and nothing
      derived (tools/bench/sync_budget.py; not in the default --modes)

Every crash here is an accepted one (``legacy_processing`` 0): those are what Socorro's
processor read (its legacy queue), so ours and Socorro's modes process the same N crashes.

The headline is p/pb (on a real HBase, p~t2/pb); the targets it prints are :func:`targets_of`'s.

    PYTHONPATH=. python tools/bench/bench_crashes.py                 # embedded, temp directory
    PYTHONPATH=. python tools/bench/bench_crashes.py --gateway       # a `socorro-store serve` it starts
    PYTHONPATH=. python tools/bench/bench_crashes.py --url hbase://127.0.0.1:9090 --modes p,pb
    PYTHONPATH=. python tools/bench/bench_crashes.py --local-hbase /tmp/bench-hbase   # a real HBase it starts
    PYTHONPATH=. python tools/bench/bench_crashes.py --local-hbase /tmp/bench-c3 --local-hbase-cluster 3 --modes p

Each mode also reports the CPU each side used over its run, in cores (1.0 = one core busy): the
client process (``time.process_time()``, all its threads), the server processes (the gateway, or
HBase's JVM and its Thrift server), and the whole machine (other users included).  That says what
bounds a figure: a client near one core is bound by Python's GIL, servers near the machine's
free cores by their CPU, and a run where nothing is busy by round trips.
"""

import argparse
import json
import multiprocessing
import queue
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_common import (  # noqa: E402
    CpuShare,
    PhaseCalls,
    RoleCalls,
    isolated,
    peak_rss_mb,
    percentile,
    processed_for,
    start_local_hbase,
    with_pool_size,
)
from bench.socorro_2013 import SharedPass, Socorro2013, crash_row_puts, processed_puts  # noqa: E402
from bench.async_wal import use_async_wal  # noqa: E402
from bench.sync_budget import sync_only  # noqa: E402
from socorro_store import open_store  # noqa: E402
from socorro_store.backends import RowMutation  # noqa: E402
from socorro_store.demo import synthetic_crashes  # noqa: E402
from socorro_store.schema import keys as K  # noqa: E402

DAY = datetime(2016, 9, 18, tzinfo=timezone.utc).date()
SECONDS_PER_CRASH = 86400 / 3_000_000
ALL_MODES = ("p", "pb", "a1", "b", "a2", "c1", "c2", "pc", "ps")
DEFAULT_MODES = ALL_MODES[:-2]
RATIOS = [("p", "pb"), ("pc", "pb"), ("p", "pc"), ("p~t2", "pc"), ("ps", "pb"), ("ps~t2", "pb"), ("ps", "pc"),
          ("ps~t2", "pc"), ("p", "ps"), ("p~t2", "ps~t2"), ("a1", "b"), ("a2", "b"), ("a2", "c2"), ("a2", "c1"), ("a1", "c1"), ("p", "c1"),
          ("p~t2", "pb"), ("a1~t2", "b"), ("a2~t2", "b"), ("p~t2", "p"), ("p~t2a", "pb"), ("p~t2a", "p~t2"), ("a2~t2a", "b")]
#: the modes of this store that also run on HBase's Thrift2 server (``--thrift2``), as ``MODE~t2``;
#: the baselines stay on Thrift1, the API Socorro's code used
THRIFT2_MODES = ("p", "a1", "a2", "ps")


def crash_kind(raw):
    """``plain`` (the browser process, no hang), ``oop`` (another process) or ``hang``."""
    if raw.get("HangID"):
        return "hang"
    return "plain" if raw.get("ProcessType", "default") == "default" else "oop"


class Timings:
    """Latencies (seconds) by step, from any thread."""

    def __init__(self):
        self.steps, self._lock = {}, threading.Lock()

    def add(self, step, seconds):
        with self._lock:
            self.steps.setdefault(step, []).append(seconds)

    def summary(self):
        out = {}
        for step, values in sorted(self.steps.items()):
            values.sort()
            out[step] = {"p50_ms": round(1000 * percentile(values, 0.5), 2),
                         "p99_ms": round(1000 * percentile(values, 0.99), 2)}
        return out


# -- sequential modes --------------------------------------------------------------------------

def _timed(timings, step, call, *args):
    t0 = time.perf_counter()
    result = call(*args)
    timings.add(step, time.perf_counter() - t0)
    return result


def _one_per_call(save_raw, take_pass, save_processed, data, batch, phases, timings, by_kind):
    """Per chunk: save each crash, then one queue pass processing each crash it yields."""
    planned = {cid: sig for _r, _d, cid, sig in data}
    kinds = {cid: crash_kind(raw) for raw, _d, cid, _s in data}
    for i in range(0, len(data), batch):
        for raw, dumps, cid, _sig in data[i:i + batch]:
            _timed(timings, "save_raw_crash", save_raw, raw, dumps, cid)
            by_kind.setdefault(("submit", kinds[cid]), []).append(phases.mark("submit"))
        taken = take_pass()
        while True:
            t0 = time.perf_counter()
            cid = next(taken, None)
            phases.mark("take")
            if cid is None:
                break
            save_processed(processed_for(cid, planned[cid]))
            timings.add("take+save_processed", time.perf_counter() - t0)
            by_kind.setdefault(("process", kinds[cid]), []).append(phases.mark("process"))


def mode_a1(store, data, batch, phases, timings, by_kind):
    _one_per_call(store.save_raw_crash, lambda: store.new_crashes(processor_id="bench-a1"),
                  store.save_processed, data, batch, phases, timings, by_kind)


def mode_b(store, data, batch, phases, timings, by_kind):
    socorro = Socorro2013(store.backend)
    _one_per_call(socorro.save_raw_crash, socorro.new_crashes, socorro.save_processed,
                  data, batch, phases, timings, by_kind)


def mode_a2(store, data, batch, phases, timings, by_kind):
    planned = {cid: sig for _r, _d, cid, sig in data}
    for i in range(0, len(data), batch):
        _timed(timings, "save_raw_crashes(batch)", store.save_raw_crashes,
               [(r, d, c) for r, d, c, _s in data[i:i + batch]])
        phases.mark("submit")
        taken = _timed(timings, "take(batch)", lambda: list(store.new_crashes(limit=batch, processor_id="bench")))
        phases.mark("take")
        _timed(timings, "save_processed_crashes(batch)", store.save_processed_crashes,
               [processed_for(c, planned[c]) for c in taken])
        phases.mark("process")


def mode_c1(store, data, batch, phases, timings, by_kind):
    backend = store.backend
    for raw, dumps, cid, sig in data:
        row = K.crash_row_key(cid)
        _timed(timings, "raw put", backend.mutate_rows, K.CRASH_REPORTS, [RowMutation(row, crash_row_puts(raw, dumps, cid))])
        phases.mark("submit")
        _sig, puts = processed_puts(processed_for(cid, sig))
        _timed(timings, "processed put", backend.mutate_rows, K.CRASH_REPORTS, [RowMutation(row, puts)])
        phases.mark("process")


def mode_c2(store, data, batch, phases, timings, by_kind):
    backend = store.backend
    for i in range(0, len(data), batch):
        chunk = data[i:i + batch]
        _timed(timings, "raw puts(batch)", backend.mutate_rows, K.CRASH_REPORTS,
               [RowMutation(K.crash_row_key(c), crash_row_puts(r, d, c)) for r, d, c, _s in chunk])
        phases.mark("submit")
        _timed(timings, "processed puts(batch)", backend.mutate_rows, K.CRASH_REPORTS,
               [RowMutation(K.crash_row_key(c), processed_puts(processed_for(c, s))[1]) for _r, _d, c, s in chunk])
        phases.mark("process")


# -- production shape --------------------------------------------------------------------------

class ProductionShape:
    """T collector threads and T processor threads on one store, until all N are processed.

    ``save_raw(raw, dumps, crash_id)`` is a collector's call; ``next_batch(processor)`` returns
    the crash ids a processor thread takes next (an iterator; empty when the queue looked
    empty); ``save_processed(processed)`` is a processor's call per crash.
    """

    def __init__(self, data, threads, timings, save_raw, next_batch, save_processed):
        self.data, self.threads, self.timings = data, threads, timings
        self.save_raw, self.next_batch, self.save_processed = save_raw, next_batch, save_processed
        self.planned = {cid: sig for _r, _d, cid, sig in data}
        self.processed = []  # crash ids, in the order saved (list.append is atomic)
        self.errors = []
        self._collectors_done = threading.Event()

    def run(self):
        collectors = [threading.Thread(target=self._guard, args=(self._collect, n), name=f"collector-{n}")
                      for n in range(self.threads)]
        processors = [threading.Thread(target=self._guard, args=(self._process, n), name=f"processor-{n}")
                      for n in range(self.threads)]
        for thread in collectors + processors:
            thread.start()
        for thread in collectors:
            thread.join()
        self._collectors_done.set()
        for thread in processors:
            thread.join()
        if self.errors:
            raise self.errors[0]
        return self.processed

    def _guard(self, body, n):
        try:
            body(n)
        except BaseException as exc:  # surface in the main thread, and stop the others
            self.errors.append(exc)
            self._collectors_done.set()

    def _collect(self, n):
        for raw, dumps, cid, _sig in self.data[n::self.threads]:
            if self.errors:
                return
            _timed(self.timings, "save_raw_crash", self.save_raw, raw, dumps, cid)

    def _process(self, n):
        while len(self.processed) < len(self.data) and not self.errors:
            done_collecting = self._collectors_done.is_set()
            got = 0
            taken = self.next_batch(n)
            while True:
                t0 = time.perf_counter()
                cid = next(taken, None)
                if cid is None:
                    break
                self.save_processed(processed_for(cid, self.planned[cid]))
                self.timings.add("take+save_processed", time.perf_counter() - t0)
                self.processed.append(cid)
                got += 1
            if not got:
                if done_collecting and len(self.processed) < len(self.data) and self._idle_too_long():
                    raise RuntimeError(f"queue empty with {len(self.data) - len(self.processed)} crashes unprocessed")
                time.sleep(0.005)

    def _idle_too_long(self, limit_s=30):
        now = time.monotonic()
        last = getattr(self, "_last_progress", None)
        if last is None or last[1] != len(self.processed):
            self._last_progress = (now, len(self.processed))
            return False
        return now - last[0] > limit_s


def mode_p(store, data, threads, timings):
    shape = ProductionShape(data, threads, timings, store.save_raw_crash,
                            lambda n: store.new_crashes(processor_id=f"bench-p-{n}"), store.save_processed)
    return shape.run()


def mode_pb(store, data, threads, timings):
    socorro = Socorro2013(store.backend)
    shared = SharedPass(socorro)

    def next_batch(_n):
        crash_id = shared.next_crash()
        return iter([crash_id] if crash_id is not None else [])

    shape = ProductionShape(data, threads, timings, socorro.save_raw_crash, next_batch, socorro.save_processed)
    return shape.run()


def mode_pc(store, data, threads, timings):
    """The bare limit in production shape: the same threads write only the crash row (the
    collector's raw put, the processor's processed put), handed over through an in-memory queue:
    no queue tables, no indexes, no counters, no checks."""
    backend, handed = store.backend, queue.SimpleQueue()

    def save_raw(raw, dumps, cid):
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(cid), crash_row_puts(raw, dumps, cid))])
        handed.put(cid)

    def next_batch(_n):
        try:
            return iter([handed.get_nowait()])
        except queue.Empty:
            return iter([])

    def save_processed(processed):
        _sig, puts = processed_puts(processed)
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(processed["uuid"]), puts)])

    return ProductionShape(data, threads, timings, save_raw, next_batch, save_processed).run()


def mode_ps(store, data, threads, timings):
    """p, with the store cut down to the synchronous budget (:mod:`bench.sync_budget`)."""
    return mode_p(sync_only(store), data, threads, timings)


SEQUENTIAL = {"a1": mode_a1, "b": mode_b, "a2": mode_a2, "c1": mode_c1, "c2": mode_c2}
THREADED = {"p": mode_p, "pb": mode_pb, "pc": mode_pc, "ps": mode_ps}


def bench_data(n, dump_kb, seed):
    """Synthetic crashes (``socorro_store.demo``), every one accepted for processing, submitted at
    production's rate: a collector stamps each crash as its upload arrives, 3 M a day
    (``reference/crash-data.md``), so successive crashes are ~29 ms apart, from noon on."""
    data = synthetic_crashes(n, DAY, seed=seed, dump_kb=dump_kb)
    noon = datetime(DAY.year, DAY.month, DAY.day, 12, tzinfo=timezone.utc)
    for i, (raw, _dumps, _cid, _sig) in enumerate(data):
        raw["legacy_processing"] = 0
        raw["submitted_timestamp"] = (noon + timedelta(seconds=i * SECONDS_PER_CRASH)).isoformat()
    return data


def run_mode(args):
    mode, url, n, dump_kb, batch, threads, seed, servers, lanes = args
    label = mode.partition("~")[0].partition("@")[0]
    data = bench_data(n, dump_kb, seed)
    timings, by_kind = Timings(), {}
    if label in THREADED:
        url = with_pool_size(url, 2 * threads + 2)
    options = {} if lanes is None else {"group_lanes": lanes}
    with open_store(url, **options) as store:
        store.create_tables()
        if mode.endswith("~t2a"):
            use_async_wal(store.backend)
        store.backend.calls.clear()
        cpu = CpuShare(servers).start()
        client_cpu0 = time.process_time()
        t0 = time.perf_counter()
        if label in THREADED:
            roles = RoleCalls(store.backend)
            processed = THREADED[label](store, data, threads, timings)
            by_phase = dict(roles.by_role)
            roles.detach()
            if len(processed) != n or len(set(processed)) != n:
                raise RuntimeError(f"{mode}: {len(processed)} saves of {len(set(processed))} distinct crashes, want {n}")
        else:
            phases = PhaseCalls(store.backend)
            SEQUENTIAL[label](store, data, batch, phases, timings, by_kind)
            by_phase = phases.totals
        store.flush_counters()
        elapsed = time.perf_counter() - t0
        cpu_cores = {"client": round((time.process_time() - client_cpu0) / elapsed, 2), **cpu.stop()}
        calls = dict(store.backend.calls)
        groups = {name: round(g.items / g.groups, 2) for name, g in (
            ("raw", store.raw_groups), ("processed", store.processed_groups),
            ("take", store.queue_passes["standard"]._groups)) if g.groups}
        if label in ("p", "a1", "a2") and store.queue_sizes()["standard"] != 0:
            raise RuntimeError(f"{mode}: queue not drained: {store.queue_sizes()}")
    return {
        "mode": mode, "dump_kb": dump_kb, "crashes": n, "threads": threads if label in THREADED else 1,
        "group_lanes": len(store.processed_groups.lanes), "mean_group_size": groups,
        "seconds": round(elapsed, 3), "crashes_per_s": round(n / elapsed, 1),
        "calls_per_crash": round(sum(calls.values()) / n, 2),
        "calls_by_phase": {k: round(v / n, 2) for k, v in sorted(by_phase.items())},
        "calls_by_kind": {k: round(v / n, 2) for k, v in sorted(calls.items())},
        "lifecycle_calls_by_crash_kind": lifecycle_by_kind(by_kind, by_phase.get("take", 0) / n),
        "latency": timings.summary(),
        "peak_rss_mb": peak_rss_mb(),
        "cpu_cores": cpu_cores,
    }


def lifecycle_by_kind(by_kind, take_per_crash):
    """``{kind: calls}``: a crash kind's mean submit and process calls plus the mean take calls."""
    mean = {key: sum(v) / len(v) for key, v in by_kind.items()}
    kinds = sorted({kind for _phase, kind in mean})
    return {kind: round(mean.get(("submit", kind), 0) + take_per_crash + mean.get(("process", kind), 0), 2)
            for kind in kinds}


def ratios_of(results):
    """``{"dump_kb=S p/pb": x}``: throughput ratios of the mode pairs in :data:`RATIOS` that ran."""
    by = {(r["dump_kb"], r["mode"]): r for r in results}
    out = {}
    laned = sorted({r["mode"] for r in results if r["mode"].startswith("p@")},
                   key=lambda m: (m.endswith("~t2"), int(m[2:].partition("~")[0])))
    for shape in sorted({r["dump_kb"] for r in results}):
        for ours, other in RATIOS + [(mode, "pb") for mode in laned]:
            if (shape, ours) in by and (shape, other) in by:
                out[f"dump_kb={shape} {ours}/{other}"] = round(
                    by[(shape, ours)]["crashes_per_s"] / by[(shape, other)]["crashes_per_s"], 2)
    return out


def targets_of(results, ratios, real_hbase=False):
    """The production-shape targets, each with the measured value and whether it is met (None:
    not run).

    On a real HBase: p~t2/pb >= 3x metadata-only and >= 2x with dumps, p/pb (Thrift1) >= 2x,
    a2~t2/b >= 6.5x, at most 2.5 calls per crash on Thrift2 and 3.5 on Thrift1 (whose one-cell
    check-and-puts cannot fold).  Through ``serve`` (and elsewhere, indicative only): p/pb >= 2.5x.
    """
    by = {(r["dump_kb"], r["mode"]): r for r in results}
    out = []
    for shape in sorted({r["dump_kb"] for r in results}):
        meta = shape == 0
        for api in ("", "~t2"):
            p, a2 = "p" + api, "a2" + api
            if not real_hbase and api:
                continue
            if real_hbase:
                ratio = (3 if meta else 2) if api else 2
            else:
                ratio = 2.5 if meta else None
            checks = [(f"dump_kb={shape} {p}/pb", ratios.get(f"dump_kb={shape} {p}/pb"), ratio, True)]
            if real_hbase:
                checks += [(f"dump_kb={shape} {p} calls/crash", by.get((shape, p), {}).get("calls_per_crash"),
                            2.5 if api else 3.5, False)]
                if api:
                    checks += [(f"dump_kb={shape} {a2}/b", ratios.get(f"dump_kb={shape} {a2}/b"), 6.5, True)]
            for name, value, limit, at_least in checks:
                if limit is None:
                    continue
                met = None if value is None else (value >= limit if at_least else value <= limit)
                out.append({"target": f"{name} {'>=' if at_least else '<='} {limit}", "value": value, "met": met})
    return out


def _print_result(result):
    print(f"dump_kb={result['dump_kb']:<4} {result['mode']:<4} T={result['threads']:<2} L={result['group_lanes']:<2} "
          f"{result['crashes_per_s']:>8} crashes/s  {result['calls_per_crash']:>6} calls/crash  "
          f"by phase {result['calls_by_phase']}  rss {result['peak_rss_mb']} MB", flush=True)
    if result["mean_group_size"]:
        print(f"{'':20}mean group size (crashes or takers per group): {result['mean_group_size']}")
    if result["lifecycle_calls_by_crash_kind"]:
        print(f"{'':20}lifecycle calls per crash, by crash kind: {result['lifecycle_calls_by_crash_kind']}")
    print(f"{'':20}latency: " + "  ".join(f"{step} p50 {v['p50_ms']} / p99 {v['p99_ms']} ms"
                                          for step, v in result["latency"].items()), flush=True)
    cpu = dict(result["cpu_cores"])
    print(f"{'':20}cpu (cores busy over the run): " + ", ".join(
        f"{name} {value}" for name, value in cpu.items() if name not in ("machine", "cores"))
        + f"; whole machine {cpu['machine']} of {cpu['cores']}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", default=None, help="store URL (default: embedded in a temp dir)")
    target.add_argument("--gateway", action="store_true", help="start a `socorro-store serve` and bench through it")
    target.add_argument("--local-hbase", metavar="DIR",
                        help="start a private Apache HBase + Thrift1 (tools/servers/local_hbase.py) under DIR and bench on it")
    parser.add_argument("--local-hbase-cluster", type=int, metavar="N", default=None,
                        help="with --local-hbase: start a cluster of N region servers there instead "
                             "(tools/servers/local_hbase_cluster.py); the modes go through the URL naming its N Thrift2 servers")
    parser.add_argument("--thrift2", nargs="?", const="local", metavar="URL",
                        help="also run this store's modes (p, a1, a2, p@N) on HBase's Thrift2 server, as MODE~t2: "
                             "the one --local-hbase starts beside its Thrift1 server, or URL (hbase://H:P?api=thrift2)")
    parser.add_argument("--async-wal", action="store_true",
                        help="with --thrift2: also run those modes as MODE~t2a, the tables the deriver writes "
                             "put with ASYNC_WAL (tools/bench/async_wal.py)")
    parser.add_argument("--crashes", type=int, default=300)
    parser.add_argument("--batch", type=int, default=100, help="chunk for a1/b, batch for a2/c2")
    parser.add_argument("--threads", type=int, default=8, help="collector and processor threads (p, pb)")
    parser.add_argument("--shapes", default="0,150", help="average dump KB per shape, comma-separated")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES))
    parser.add_argument("--lanes", default=None, metavar="N[,N...]",
                        help="group lanes of the store (default: the store's); several: mode p runs once per "
                             "count, the first as p, the others as p@N")
    parser.add_argument("--gateway-caches", choices=("capped", "default"), default="capped",
                        help="the gateway's SQLite page caches: capped (the engine's) or SQLite's default "
                             "2 MB a connection (tools/bench/serve_default_caches.py), to compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    lane_counts = [int(n) for n in args.lanes.split(",")] if args.lanes else [None]
    unknown = [m for m in modes if m not in SEQUENTIAL and m not in THREADED]
    if unknown:
        parser.error(f"unknown modes {unknown}: choose from {','.join(ALL_MODES)}")
    results = []
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="bench-crashes-") as workdir:
        gateway, hbase, url, servers = None, None, args.url, {}
        if args.gateway:
            from servers.gateway import Gateway
            program = ("-m", "socorro_store") if args.gateway_caches == "capped" else \
                (str(Path(__file__).with_name("serve_default_caches.py")),)
            gateway = Gateway(f"{workdir}/gateway", program=program)
            url, servers = gateway.url(), {"gateway": gateway.proc.pid}
        elif args.local_hbase and args.local_hbase_cluster:
            from servers.local_hbase_cluster import LocalHBaseCluster
            hbase = LocalHBaseCluster(args.local_hbase, region_servers=args.local_hbase_cluster, thrift2=True,
                                      log=lambda msg: print(msg, file=sys.stderr)).start()
            servers = {name: proc.pid for name, proc in hbase._watched()}
            # through every Thrift2 server: a Thrift1 scanner cannot yet span several servers
            url = hbase.thrift2_url
        elif args.local_hbase:
            hbase, servers = start_local_hbase(args.local_hbase, log=lambda msg: print(msg, file=sys.stderr),
                                               thrift2=args.thrift2 is not None)
            url = hbase.url
        thrift2_url = (hbase.thrift2_url if hbase is not None and args.thrift2 == "local" else args.thrift2)
        if args.thrift2 == "local" and hbase is None:
            parser.error("--thrift2 without a URL needs --local-hbase")
        try:
            runs = [(mode, lanes) for mode in modes for lanes in lane_counts] if lane_counts[0] else \
                [(mode, None) for mode in modes]
            runs = [(m if m != "p" or lanes == lane_counts[0] else f"p@{lanes}", lanes)
                    for m, lanes in runs if m == "p" or lanes == lane_counts[0]]
            if thrift2_url:  # each of this store's modes on Thrift2 right after its Thrift1 run
                variants = ["~t2", "~t2a"] if args.async_wal else ["~t2"]
                runs = [run for mode, lanes in runs for run in [(mode, lanes)] + (
                    [(f"{mode}{v}", lanes) for v in variants] if mode.partition("@")[0] in THRIFT2_MODES else [])]
            for shape in [int(s) for s in args.shapes.split(",")]:
                for mode, lanes in runs:
                    base_url = thrift2_url if mode.endswith(("~t2", "~t2a")) else url
                    tag = mode.replace("@", "L").replace("~", "")
                    case_url = isolated(base_url, workdir, f"{tag}{shape}{uuid.uuid4().hex[:6]}")
                    with ctx.Pool(1) as pool:
                        result = pool.apply(run_mode, ((mode, case_url, args.crashes, shape, args.batch,
                                                        args.threads, 7, servers, lanes),))
                    results.append(result)
                    if not args.json:
                        _print_result(result)
        finally:
            if gateway is not None:
                gateway_peak_mb = round(gateway.rss_kb("VmHWM") / 1024, 1)
                gateway.stop()
            if hbase is not None:
                hbase.stop()
    ratios = ratios_of(results)
    targets = targets_of(results, ratios, real_hbase=hbase is not None or bool(thrift2_url) or
                         (args.url or "").startswith("hbase://") and not args.gateway)
    where = ("gateway (socorro-store serve)" if args.gateway else
             f"local Apache HBase {hbase.lib.parent.name} cluster of {args.local_hbase_cluster} region servers"
             if hbase and args.local_hbase_cluster else
             f"local Apache HBase {hbase.lib.parent.name} (tools/servers/local_hbase.py)" if hbase else
             (args.url or "embedded (temp)"))
    if args.json:
        print(json.dumps({"url": where, "results": results, "ratios": ratios, "targets": targets}, indent=2))
    else:
        headline = ", ".join(f"{k.split()[0]} {v}x" for k, v in ratios.items() if k.endswith(" p/pb"))
        print(f"HEADLINE production shape p/pb ({args.threads}+{args.threads} threads, {where}): {headline or 'not run'}")
        if gateway is not None:
            print(f"gateway peak RSS {gateway_peak_mb} MB (page caches: {args.gateway_caches})")
        print("throughput ratios (ours/baseline):")
        for name, value in ratios.items():
            print(f"  {name:<22} {value}")
        print("targets (real HBase, or through serve):")
        for target in targets:
            state = {True: "met", False: "NOT met", None: "not run"}[target["met"]]
            print(f"  {target['target']:<48} {target['value']!s:>8}  {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
