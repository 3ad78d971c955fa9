#!/usr/bin/env python
"""Soak: the crash lifecycle, sustained, at production scale (issue 12).

T collector threads save one crash per ``save_raw_crash`` call while T processor threads take
work through ``new_crashes()`` and save one processed crash per ``save_processed`` call, on the
embedded engine or through ``socorro-store serve``.  Crashes look like production
(``reference/crash-data.md``): 2-4 KB of annotations, hang pairs, a Zipf signature mix with empty
signatures and failures, submitted at 3 M a day (``--per-day``), so minute and hour counter rows
fill as they do in production.  ``--payloads 2017`` adds dumps drawn from 2017's sizes: lognormal,
mean ~500 KB, p95 ~1.5 MB, clipped at 3 MB.

Collectors stay at most ``--max-backlog`` crashes ahead of the processors (a processor pool that
keeps up with its collectors, as in production); the queue never drains to nothing between
windows either, since collectors keep submitting.

For each window of ``--window`` processed crashes it prints crashes/s, p50/p99 of
``save_raw_crash`` and of take + ``save_processed``, backend calls per crash
(``store.backend.calls``), client and gateway RSS, store bytes on disk per crash against the
raw bytes submitted, and the CPU the client, the servers (a gateway, or HBase's JVM and Thrift
server with ``--local-hbase``) and the whole machine used, in cores: what bounds the window.  Then it checks that every crash was processed exactly once, runs
``rollup`` over the whole range and ``verify-indexes``, each in a child process (time and peak
RSS), and says whether the issue's done-when holds: the last window's crashes/s is at least 0.8x
the first's, and its take p99 at most 1.5x the first's.

    PYTHONPATH=. python tools/faults/soak.py                                  # 1,000,000 on embedded (temp dir)
    PYTHONPATH=. python tools/faults/soak.py --url embedded:///data/soak --crashes 100000 --window 20000
    PYTHONPATH=. python tools/faults/soak.py --gateway                        # 300,000 through `serve`
    PYTHONPATH=. python tools/faults/soak.py --local-hbase /tmp/soak-hbase --window 20000   # 100,000 on Apache HBase
    PYTHONPATH=. python tools/faults/soak.py --payloads 2017 --crashes 5000 --window 1000
"""

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import random
import shutil
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
    peak_rss_mb,
    percentile,
    proc_rss_kb,
    processed_for,
    start_local_hbase,
    with_pool_size,
)

from socorro_store import open_store
from socorro_store.demo import CHANNELS, PROCESS_TYPES, PRODUCTS, Zipf, signature_names, weighted_choice

DEFAULT_CRASHES = {"embedded": 1_000_000, "gateway": 300_000, "hbase": 100_000, "2017": 5_000}
DUMP_2017_MEAN, DUMP_2017_P95, DUMP_2017_MAX = 500 * 1024, 1536 * 1024, 3 * 1024 * 1024
_Z95 = 1.6449


def lognormal_for(mean, p95):
    """``(mu, sigma)`` of the lognormal with this mean and 95th percentile."""
    # mean = exp(mu + s^2/2), p95 = exp(mu + z s)  =>  s^2/2 - z s + ln(p95/mean) = 0
    ratio = math.log(p95 / mean)
    sigma = _Z95 - math.sqrt(_Z95 ** 2 - 2 * ratio)
    return math.log(mean) - sigma ** 2 / 2, sigma


class Workload:
    """Crash number ``i`` -> a deterministic crash: ``(raw_crash, dumps, crash_id)``.

    The crash id carries ``i`` (hex digits 2-8), so a processed crash id says which crash it was
    without a table of a million ids; its first digit (the salt) is random.
    """

    def __init__(self, seed, start, per_day, payloads, signatures=3000):
        self.seed, self.start, self.payloads = seed, start, payloads
        self.spacing_s = 86400.0 / per_day
        rng = random.Random(seed)
        self.names = signature_names(signatures, rng)
        self.zipf = Zipf(len(self.names))
        self.dump_mu, self.dump_sigma = lognormal_for(DUMP_2017_MEAN, DUMP_2017_P95)

    def submitted(self, i):
        return self.start + timedelta(seconds=i * self.spacing_s)

    def crash_id(self, i):
        digest = hashlib.blake2b(f"{self.seed}:{i}".encode(), digest_size=10).hexdigest()
        day = self.submitted(i).strftime("%y%m%d")
        return f"{digest[0]}{i:07x}-{digest[1:5]}-4{digest[5:8]}-{digest[8:12]}-{digest[12:17]}2{day}"

    @staticmethod
    def number_of(crash_id):
        return int(crash_id[1:8], 16)

    def signature(self, i):
        """What a processor computes for crash ``i`` (None: processing failed)."""
        rng = random.Random(self.seed * 7919 + i)
        roll = rng.random()
        return None if roll < 0.01 else ("" if roll < 0.015 else self.names[self.zipf.draw(rng)])

    def crash(self, i):
        rng = random.Random(self.seed * 1_000_003 + i)
        crash_id, submitted = self.crash_id(i), self.submitted(i)
        build = submitted - timedelta(days=rng.randint(1, 40))
        process_type = weighted_choice(rng, PROCESS_TYPES)
        raw = {
            "ProductName": weighted_choice(rng, PRODUCTS), "Version": f"{rng.randint(115, 125)}.0.{rng.randint(0, 3)}",
            "BuildID": build.strftime("%Y%m%d%H%M%S"), "ReleaseChannel": weighted_choice(rng, CHANNELS),
            "ProcessType": process_type, "CPUArchitecture": rng.choice(["amd64", "arm64", "x86"]),
            "CrashTime": str(int(submitted.timestamp()) - rng.randint(0, 60)),
            "InstallTime": str(int(build.timestamp())), "AvailablePhysicalMemory": str(rng.randrange(2**30, 2**35)),
            "TotalVirtualMemory": str(rng.randrange(2**32, 2**47)), "SystemMemoryUsePercentage": str(rng.randint(20, 99)),
            "MozCrashReason": rng.choice(["", "MOZ_CRASH(Shutdown hanging)", "MOZ_RELEASE_ASSERT(aIndex < mLength)"]),
            "StartupCrash": rng.choice(["0", "0", "0", "1"]), "Add-ons": ",".join(
                f"addon{rng.randrange(10**5)}@example.org:{rng.randint(1, 9)}.{rng.randint(0, 9)}"
                for _ in range(rng.randint(2, 12))),
            "Notes": "".join(rng.choices("abcdefghij \n", k=rng.randint(900, 2500))),
            "submitted_timestamp": submitted.isoformat(), "uuid": crash_id,
            "legacy_processing": 0, "throttle_rate": 100,
        }
        if i % 67 == 1:  # a hang pair: this crash and the next share a HangID
            raw["HangID"], raw["ProcessType"] = self._hang_id(i), "default"
        elif i % 67 == 2:
            raw["HangID"], raw["ProcessType"] = self._hang_id(i - 1), "content"
        dumps = {}
        if self.payloads == "2017":
            size = min(DUMP_2017_MAX, max(1024, int(rng.lognormvariate(self.dump_mu, self.dump_sigma))))
            noise = rng.randbytes(size // 8)  # minidumps are mostly zeros: compressible, as real ones
            dumps["upload_file_minidump"] = noise + bytes(size - len(noise))
        return raw, dumps, crash_id

    def _hang_id(self, i):
        return str(uuid.UUID(bytes=hashlib.blake2b(f"hang:{self.seed}:{i}".encode(), digest_size=16).digest()))


class Window:
    """Latencies of the current window, from any thread; :meth:`swap` ends the window."""

    def __init__(self):
        self._lock = threading.Lock()
        self.save, self.take = [], []

    def add(self, kind, seconds):
        with self._lock:
            (self.save if kind == "save" else self.take).append(seconds)

    def swap(self):
        with self._lock:
            save, take, self.save, self.take = self.save, self.take, [], []
        return sorted(save), sorted(take)


class Soak:
    """The collectors, the processors and the per-window report of one soak run."""

    def __init__(self, store, workload, crashes, threads, window, max_backlog, store_dir, gateway, out, servers=None):
        self.store, self.workload, self.crashes, self.threads = store, workload, crashes, threads
        self.window_size, self.max_backlog, self.store_dir, self.gateway = window, max_backlog, store_dir, gateway
        self.out = out
        self.servers = servers or {}  # name -> pid of the server processes whose CPU each window reports
        self.seen = bytearray(crashes)  # times each crash was processed (saturates at 255)
        self.processed = 0
        self.submitted = 0
        self.raw_bytes = 0
        self.errors = []
        self.windows = []
        self._next = 0
        self._lock = threading.Lock()
        self._window = Window()
        self._stop = threading.Event()

    # -- threads ---------------------------------------------------------------------------
    def _guard(self, body, n):
        try:
            body(n)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.errors.append(exc)
            self._stop.set()

    def _collect(self, _n):
        while not self._stop.is_set():
            with self._lock:
                if self._next >= self.crashes:
                    return
                if self._next - self.processed >= self.max_backlog:
                    i = None
                else:
                    i, self._next = self._next, self._next + 1
            if i is None:
                time.sleep(0.002)
                continue
            raw, dumps, crash_id = self.workload.crash(i)
            size = len(json.dumps(raw)) + sum(len(d) for d in dumps.values())
            t0 = time.perf_counter()
            self.store.save_raw_crash(raw, dumps, crash_id)
            self._window.add("save", time.perf_counter() - t0)
            with self._lock:
                self.submitted += 1
                self.raw_bytes += size

    def _process(self, n):
        name = f"soak-processor-{n}"
        while not self._stop.is_set() and self.processed < self.crashes:
            got = 0
            taken = self.store.new_crashes(processor_id=name)
            while not self._stop.is_set():
                t0 = time.perf_counter()
                crash_id = next(taken, None)
                if crash_id is None:
                    break
                i = Workload.number_of(crash_id)
                self.store.save_processed(processed_for(crash_id, self.workload.signature(i)))
                self._window.add("take", time.perf_counter() - t0)
                with self._lock:
                    self.seen[i] = min(255, self.seen[i] + 1)
                    self.processed += 1
                got += 1
            if not got:
                time.sleep(0.005)

    # -- the run ---------------------------------------------------------------------------
    def run(self):
        threads = [threading.Thread(target=self._guard, args=(self._collect, n), name=f"collector-{n}")
                   for n in range(self.threads)]
        threads += [threading.Thread(target=self._guard, args=(self._process, n), name=f"processor-{n}")
                    for n in range(self.threads)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        window_start, window_calls, boundary = started, sum(self.store.backend.calls.values()), self.window_size
        self._cpu, self._client_cpu = CpuShare(self.servers).start(), time.process_time()
        window_base = 0
        last_progress = (time.monotonic(), 0)
        while not self._stop.is_set():
            time.sleep(0.1)
            processed = self.processed
            if processed != last_progress[1]:
                last_progress = (time.monotonic(), processed)
            elif time.monotonic() - last_progress[0] > 120:
                self.errors.append(RuntimeError(f"no progress for 120 s at {processed} processed"))
                self._stop.set()
            if processed >= min(boundary, self.crashes) and processed > 0:
                now = time.perf_counter()
                calls = sum(self.store.backend.calls.values())
                self._report_window(processed - window_base, now - window_start, calls - window_calls)
                window_start, window_calls, window_base = now, calls, processed
                boundary += self.window_size
                if processed >= self.crashes:
                    break
        self._stop.set()
        for thread in threads:
            thread.join()
        if self.errors:
            raise self.errors[0]
        return time.perf_counter() - started

    def _report_window(self, count, seconds, calls):
        save, take = self._window.swap()
        cpu = {"client": round((time.process_time() - self._client_cpu) / seconds, 2), **self._cpu.stop()}
        self._cpu, self._client_cpu = CpuShare(self.servers).start(), time.process_time()
        disk = du_bytes(self.store_dir) if self.store_dir else None
        window = {
            "window": len(self.windows) + 1, "processed": self.processed, "crashes": count,
            "crashes_per_s": round(count / seconds, 1),
            "save_raw_p50_ms": _ms(save, 0.5),
            "save_raw_p99_ms": _ms(save, 0.99),
            "take_p50_ms": _ms(take, 0.5),
            "take_p99_ms": _ms(take, 0.99),
            "calls_per_crash": round(calls / max(1, count), 2),
            "client_rss_mb": round(proc_rss_kb(os.getpid()) / 1024, 1),
            "gateway_rss_mb": round(self.gateway.rss_kb() / 1024, 1) if self.gateway else None,
            "disk_bytes_per_crash": round(disk / max(1, self.submitted)) if disk is not None else None,
            "raw_bytes_per_crash": round(self.raw_bytes / max(1, self.submitted)),
            "cpu_cores": cpu,
        }
        self.windows.append(window)
        if self.out:
            gw = f"  gateway rss {window['gateway_rss_mb']} MB" if self.gateway else ""
            disk_text = f"{window['disk_bytes_per_crash']}" if disk is not None else "n/a"
            print(f"window {window['window']:>3}  {window['processed']:>9} done  {window['crashes_per_s']:>8} crashes/s  "
                  f"save p50/p99 {window['save_raw_p50_ms']}/{window['save_raw_p99_ms']} ms  "
                  f"take+save p50/p99 {window['take_p50_ms']}/{window['take_p99_ms']} ms  "
                  f"{window['calls_per_crash']} calls/crash  client rss {window['client_rss_mb']} MB{gw}  "
                  f"disk {disk_text} B/crash vs raw {window['raw_bytes_per_crash']} B  cpu cores "
                  + " ".join(f"{k} {v}" for k, v in cpu.items() if k != "cores") + f" of {cpu['cores']}",
                  file=self.out, flush=True)

    def check(self):
        """``{"processed_once", "unprocessed", "duplicates"}`` from the per-crash tallies."""
        once = self.seen.count(1)
        unprocessed = self.seen.count(0)
        return {"processed_once": once, "unprocessed": unprocessed, "duplicates": self.crashes - once - unprocessed}


def _ms(sorted_seconds, fraction):
    """A percentile in ms, or None for a window with no such calls (collectors already done)."""
    return round(1000 * percentile(sorted_seconds, fraction), 2) if sorted_seconds else None


def du_bytes(path):
    """Bytes on disk under ``path`` (allocated blocks, as ``du``)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


# -- jobs, each in a child process (its own peak RSS) ----------------------------------------

def run_job_child(job, url, since, until):
    from socorro_store.jobs import rollup, scrutiny  # noqa: PLC0415 - child process only
    rss_before = peak_rss_mb()
    t0 = time.perf_counter()
    with open_store(url) as store:
        if job == "rollup":
            report = rollup.run_rollup(store.backend, until=until, since=since)
            summary = {k: report.get(k) for k in ("days", "months", "crashes_read", "cells_written", "cells_deleted")}
            summary["drift_cells"] = len(report.get("drift", {}))
        else:
            report = scrutiny.run_verify_indexes(store.backend)
            summary = {k: sum(t[k] for t in report.values()) for k in ("valid", "missing", "orphan")}
    return {"seconds": round(time.perf_counter() - t0, 2),
            "peak_rss_mb": peak_rss_mb(),
            "rss_before_job_mb": rss_before, "report": summary}


def run_jobs(url, since, until, gateway, out):
    ctx = multiprocessing.get_context("spawn")
    jobs = {}
    for job in ("rollup", "verify-indexes"):
        with ctx.Pool(1) as pool:
            result = pool.apply(run_job_child, (job, url, since, until))
        if gateway:
            result["gateway_rss_mb"] = round(gateway.rss_kb() / 1024, 1)
            result["gateway_peak_rss_mb"] = round(gateway.rss_kb("VmHWM") / 1024, 1)
        jobs[job] = result
        if out:
            print(f"{job}: {result['seconds']} s, peak rss {result['peak_rss_mb']} MB "
                  f"({result['rss_before_job_mb']} MB before the job)"
                  + (f", gateway rss {result['gateway_rss_mb']} MB (peak {result['gateway_peak_rss_mb']})"
                     if gateway else "") + f"  {result['report']}", file=out, flush=True)
    return jobs


def done_when(windows):
    """The issue's done-when, from the first and last windows."""
    if len(windows) < 2:
        return {"holds": None, "why": "fewer than two windows"}
    first, last = windows[0], windows[-1]
    throughput = last["crashes_per_s"] / first["crashes_per_s"]
    take = last["take_p99_ms"] / first["take_p99_ms"] if first["take_p99_ms"] else float("inf")
    return {"throughput_last_over_first": round(throughput, 3), "throughput_held": throughput >= 0.8,
            "take_p99_last_over_first": round(take, 3), "take_p99_held": take <= 1.5,
            "holds": throughput >= 0.8 and take <= 1.5}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", help="embedded://PATH (default: a temp dir) or hbase://HOST:PORT")
    where.add_argument("--gateway", action="store_true", help="start a `socorro-store serve` on a temp dir (or --dir)")
    where.add_argument("--local-hbase", metavar="DIR",
                       help="start a private Apache HBase + Thrift1 (tools/servers/local_hbase.py) under DIR and soak on it")
    parser.add_argument("--dir", help="the gateway's data directory (default: a temp dir)")
    parser.add_argument("--crashes", type=int, help="default 1,000,000 embedded, 300,000 gateway, 100,000 "
                        "--local-hbase, 5,000 with --payloads 2017")
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=8, help="collector threads, and as many processor threads")
    parser.add_argument("--payloads", choices=("meta", "2017"), default="meta")
    parser.add_argument("--per-day", type=int, default=3_000_000, help="submission rate the timestamps follow")
    parser.add_argument("--max-backlog", type=int, default=1_000,
                        help="most crashes submitted but not yet processed (default 1,000: processors keep up)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--json", action="store_true", help="print one JSON document (progress goes to stderr)")
    args = parser.parse_args(argv)
    if args.url and not args.url.startswith(("embedded://", "hbase://")):
        parser.error("--url must be embedded://PATH or hbase://HOST:PORT")
    for name in ("window", "threads", "per_day", "max_backlog"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.crashes is None:
        args.crashes = DEFAULT_CRASHES["2017" if args.payloads == "2017" else
                                       "gateway" if args.gateway else "hbase" if args.local_hbase else "embedded"]
    if args.crashes < 1 or args.crashes >= 16**7:
        parser.error("--crashes must be in 1..268435455")
    return args


def main(argv=None):
    args = parse_args(argv)
    out = sys.stderr if args.json else sys.stdout
    tmp = tempfile.mkdtemp(prefix="soak-")
    gateway, hbase, servers = None, None, {}
    try:
        if args.gateway:
            from servers.gateway import Gateway  # noqa: PLC0415 - a gateway only when asked for
            store_dir = args.dir or os.path.join(tmp, "gateway")
            gateway = Gateway(store_dir)
            url = gateway.url(pool_size=2 * args.threads + 2)
            servers = {"gateway": gateway.proc.pid}
        elif args.local_hbase:
            hbase, servers = start_local_hbase(args.local_hbase, log=lambda msg: print(msg, file=out, flush=True))
            # disk per crash: HBase's rootdir (HFiles after flushes) and its WAL
            store_dir, url = str(hbase.directory / "data"), with_pool_size(hbase.url, 2 * args.threads + 2)
        elif args.url and args.url.startswith("hbase://"):
            store_dir, url = None, with_pool_size(args.url, 2 * args.threads + 2)
        else:
            url = args.url or f"embedded://{os.path.join(tmp, 'store')}"
            store_dir = url[len("embedded://"):]
        span_days = math.ceil(args.crashes / args.per_day)
        today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        start = today - timedelta(days=span_days + 1)
        workload = Workload(args.seed, start, args.per_day, args.payloads)
        print(f"soak: {args.crashes} crashes, {args.threads}+{args.threads} threads, window {args.window}, "
              f"payloads {args.payloads}, on {'gateway ' + url if gateway else url}", file=out, flush=True)
        with open_store(url) as store:
            store.create_tables()
            store.backend.calls.clear()
            soak = Soak(store, workload, args.crashes, args.threads, args.window, args.max_backlog,
                        store_dir, gateway, out, servers)
            seconds = soak.run()
            store.flush_counters()
            check = soak.check()
            queue_left = store.queue_sizes()
        print(f"lifecycle: {args.crashes} crashes in {seconds:.1f} s; processed once {check['processed_once']}, "
              f"unprocessed {check['unprocessed']}, duplicates {check['duplicates']}; queues {queue_left}",
              file=out, flush=True)
        until = (workload.submitted(args.crashes - 1) + timedelta(days=1)).replace(
            hour=0, minute=0, second=0, microsecond=0)
        until = min(until, datetime.now(timezone.utc))
        jobs = run_jobs(url, start.date().isoformat(), until.isoformat(), gateway, out)
        verdict = done_when(soak.windows)
        print(f"done-when (last window >= 0.8x first's crashes/s, take p99 <= 1.5x first's): {verdict}",
              file=out, flush=True)
        if args.json:
            print(json.dumps({
                "config": {"crashes": args.crashes, "window": args.window, "threads": args.threads,
                           "payloads": args.payloads, "per_day": args.per_day, "max_backlog": args.max_backlog,
                           "seed": args.seed, "start": start.isoformat(),
                           "target": "gateway" if gateway else url},
                "seconds": round(seconds, 2), "windows": soak.windows, "check": check, "queues": queue_left,
                "jobs": jobs, "done_when": verdict}, indent=2))
        return 0 if check["processed_once"] == args.crashes else 1
    finally:
        if gateway is not None:
            gateway.stop()
        if hbase is not None:
            hbase.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
