#!/usr/bin/env python
"""Crash lifecycle benchmark: our store vs Socorro's 2013 access pattern vs the bare crash row.

For each payload shape (metadata-only; meta ~2 KB plus ~150 KB dumps) and each mode, in one run
on the same backend, it runs the whole lifecycle of N crashes — save raw -> take from the queue
-> save processed — and prints crashes/s, backend calls per crash by kind (``backend.calls``),
p50/p99 latency per lifecycle step (per crash, or per batch for batched modes) and peak RSS.

Modes:
  a1  this store, one crash at a time          a2  this store, batched (--batch crashes per call)
  b   Socorro 2013 re-created: one blocking call per index put and one per counter per level,
      queue scanned one row per call, claims as plain puts
  c1  bare limit, one at a time: only the crash row (raw put, processed put)
  c2  bare limit, batched

Each mode runs in its own child process (fresh namespace, own peak RSS).  Usage:

    python tools/bench_crashes.py                       # embedded, temp directory
    python tools/bench_crashes.py --url hbase://127.0.0.1:9090   # through the gateway / HBase
"""

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone

from bench_common import isolated

from socorro_store.backends import RowMutation, open_backend
from socorro_store.crashstore.counters import oop_counter, throttle_counter
from socorro_store.crashstore.crashes import prepare_processed, prepare_raw
from socorro_store.crashstore.store import CrashStore
from socorro_store.demo import synthetic_crashes
from socorro_store.schema import keys as K

DAY = datetime(2016, 9, 18, tzinfo=timezone.utc).date()


def processed_for(crash_id, signature):
    return {"uuid": crash_id, "signature": signature, "success": signature is not None,
            "completeddatetime": datetime.now(timezone.utc).isoformat()}


class PhaseCalls:
    """Attributes the backend calls made since the last :meth:`mark` to a lifecycle phase."""

    def __init__(self, backend):
        self.backend, self.totals, self._seen = backend, {}, 0
        self.by_kind = {}  # submit calls of each one-at-a-time save, by crash kind

    def mark(self, phase):
        """Attribute the calls since the last mark to ``phase``; return how many there were."""
        now = sum(self.backend.calls.values())
        delta = now - self._seen
        self.totals[phase] = self.totals.get(phase, 0) + delta
        self._seen = now
        return delta


def _spread(values):
    """``"4 (n=116)"`` or ``"7-8 (n=5)"``: the range of a list of call counts, and its size."""
    low, high = min(values), max(values)
    return f"{low if low == high else f'{low}-{high}'} (n={len(values)})"


def crash_kind(raw):
    """Which index tables a save touches besides the three every crash has."""
    kind = [name for name, present in (("legacy", raw.get("legacy_processing") == 0),
                                       ("hang", bool(raw.get("HangID")))) if present]
    return "+".join(kind) or "plain"


# -- modes -----------------------------------------------------------------------------------

def mode_a1(store, data, batch, phases):
    lat = []
    for raw, dumps, cid, sig in data:
        t0 = time.perf_counter()
        store.save_raw_crash(raw, dumps, cid)
        phases.by_kind.setdefault(crash_kind(raw), []).append(phases.mark("submit"))
        taken = list(store.new_crashes(limit=1, processor_id="bench"))
        phases.mark("take")
        for tid in taken:
            store.save_processed(processed_for(tid, sig))
        phases.mark("process")
        lat.append(time.perf_counter() - t0)
    return lat


def mode_a2(store, data, batch, phases):
    lat = []
    planned = {cid: sig for _r, _d, cid, sig in data}
    for i in range(0, len(data), batch):
        t0 = time.perf_counter()
        store.save_raw_crashes([(r, d, c) for r, d, c, _s in data[i:i + batch]])
        phases.mark("submit")
        taken = list(store.new_crashes(limit=batch, processor_id="bench"))
        phases.mark("take")
        store.save_processed_crashes([processed_for(c, planned[c]) for c in taken])
        phases.mark("process")
        lat.append(time.perf_counter() - t0)
    return lat


def mode_b(store, data, batch, phases):
    """Socorro 2013 (hbaseClient.put_json_dump / put_processed_json), re-created call for call."""
    backend = store.backend
    lat = []
    for raw, dumps, cid, sig in data:
        t0 = time.perf_counter()
        prep = prepare_raw(raw, dumps, cid)
        key = K.time_index_key(cid, prep.submitted)
        ooid = {K.COL_OOID: cid.encode()}
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(prep.row, prep.puts)])
        backend.mutate_rows(K.SUBMITTED_TIME, [RowMutation(key, dict(ooid))])
        backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(key, dict(ooid))])
        if prep.legacy == 0:
            backend.mutate_rows(K.LEGACY_UNPROCESSED_FLAG, [RowMutation(key, dict(ooid))])
            backend.mutate_rows(K.LEGACY_SUBMITTED_TIME, [RowMutation(key, dict(ooid))])
        if prep.hang_id:
            backend.mutate_rows(K.HANG_ID, [RowMutation(K.hang_row_key(prep.hang_id),
                                                        {K.hang_column(prep.process_type): cid.encode()})])
            backend.mutate_rows(K.HANG_ID_SUBMITTED_TIME, [RowMutation(key, dict(ooid))])
        names = ["submitted_crash_reports"]
        if prep.legacy is not None:
            names.append(throttle_counter(prep.legacy))
        if prep.process_type != "default":
            names.append(oop_counter(prep.process_type))
        for row in K.metrics_rows(prep.submitted).values():
            for name in names:
                backend.increment(K.METRICS, row, K.counter_column(name), 1)
        backend.increment(K.METRICS, K.QUEUE_ROW, b"counters:inserts_unprocessed", 1)
        phases.mark("submit")
        # processor side: scan the queue one row per call (scannerGet), plain-put the claim
        first = None
        for salt_char in K.SALTS:
            for row, cells in backend.scan(K.UNPROCESSED_FLAG, prefix=salt_char.encode(), limit=1, page_size=1):
                if first is None or row[1:] < first[0][1:]:
                    first = (row, cells)
        qrow, qcells = first
        backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(qrow, {K.FAMILY_PROCESSOR_STATE + b":claim": b"bench"})])
        phases.mark("take")
        tid = qcells[K.COL_OOID].decode()
        backend.get_row(K.CRASH_REPORTS, K.crash_row_key(tid), columns=[b"flags", K.COL_SUBMITTED])
        proc = prepare_processed(processed_for(tid, sig))
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(tid), proc.puts)])
        backend.mutate_rows(K.SIGNATURE_OOID, [RowMutation(sig_key_socorro(proc.signature, tid), dict(ooid))])
        backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(qrow, delete_row=True)])
        backend.increment(K.METRICS, K.QUEUE_ROW, b"counters:deletes_unprocessed", 1)
        if prep.legacy == 0:
            backend.mutate_rows(K.LEGACY_UNPROCESSED_FLAG, [RowMutation(key, delete_row=True)])
        phases.mark("process")
        lat.append(time.perf_counter() - t0)
    return lat


def sig_key_socorro(signature, crash_id):
    return signature.encode("utf-8", "surrogatepass") + crash_id.encode()  # Socorro's ambiguous layout


def mode_c1(store, data, batch, phases):
    backend, lat = store.backend, []
    for raw, dumps, cid, sig in data:
        t0 = time.perf_counter()
        prep = prepare_raw(raw, dumps, cid)
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(prep.row, prep.puts)])
        proc = prepare_processed(processed_for(cid, sig))
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(prep.row, proc.puts)])
        lat.append(time.perf_counter() - t0)
    return lat


def mode_c2(store, data, batch, phases):
    backend, lat = store.backend, []
    for i in range(0, len(data), batch):
        t0 = time.perf_counter()
        chunk = data[i:i + batch]
        preps = [prepare_raw(r, d, c) for r, d, c, _s in chunk]
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(p.row, p.puts) for p in preps])
        procs = [prepare_processed(processed_for(c, s)) for _r, _d, c, s in chunk]
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(p.crash_id), p.puts) for p in procs])
        lat.append(time.perf_counter() - t0)
    return lat


MODES = {"a1": mode_a1, "a2": mode_a2, "b": mode_b, "c1": mode_c1, "c2": mode_c2}


def run_mode(args):
    mode, url, n, dump_kb, batch, seed = args
    data = synthetic_crashes(n, DAY, seed=seed, dump_kb=dump_kb)
    with CrashStore(open_backend(url)) as store:
        store.create_tables()
        store.backend.calls.clear()
        phases = PhaseCalls(store.backend)
        t0 = time.perf_counter()
        lat = MODES[mode](store, data, batch, phases)
        elapsed = time.perf_counter() - t0
        calls = dict(store.backend.calls)
        if mode in ("a1", "a2"):
            assert store.queue_sizes()["standard"] == 0, "queue not drained"
    lat.sort()
    return {
        "mode": mode, "dump_kb": dump_kb, "crashes": n, "seconds": round(elapsed, 3),
        "crashes_per_s": round(n / elapsed, 1),
        "calls_per_crash": round(sum(calls.values()) / n, 2),
        "calls_by_kind": {k: round(v / n, 2) for k, v in sorted(calls.items())},
        "calls_by_phase": {k: round(v / n, 2) for k, v in phases.totals.items()},
        "submit_calls_by_crash_kind": {kind: _spread(calls) for kind, calls in sorted(phases.by_kind.items())},
        "latency_unit": "batch" if mode in ("a2", "c2") else "crash",
        "p50_ms": round(1000 * lat[len(lat) // 2], 2),
        "p99_ms": round(1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=None, help="store URL (default: embedded in a temp dir)")
    parser.add_argument("--crashes", type=int, default=300)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--shapes", default="0,150", help="average dump KB per shape, comma-separated")
    parser.add_argument("--modes", default="a1,a2,b,c1,c2")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = []
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="bench-crashes-") as workdir:
        for shape in [int(s) for s in args.shapes.split(",")]:
            for mode in args.modes.split(","):
                url = isolated(args.url, workdir, f"{mode}{shape}{uuid.uuid4().hex[:6]}")
                with ctx.Pool(1) as pool:
                    result = pool.apply(run_mode, ((mode, url, args.crashes, shape, args.batch, 7),))
                results.append(result)
                if not args.json:
                    print(f"dump_kb={shape:<4} {mode:<3} {result['crashes_per_s']:>8} crashes/s  "
                          f"{result['calls_per_crash']:>6} calls/crash  p50 {result['p50_ms']:>8} ms  "
                          f"p99 {result['p99_ms']:>8} ms per {result['latency_unit']:<5}  "
                          f"rss {result['peak_rss_mb']} MB  per phase {result['calls_by_phase']}", flush=True)
                    if result["submit_calls_by_crash_kind"]:
                        print(f"{'':18}submit calls by crash kind: {result['submit_calls_by_crash_kind']}")
    by = {(r["dump_kb"], r["mode"]): r for r in results}
    ratios = {}
    for shape in {r["dump_kb"] for r in results}:
        for ours in ("a1", "a2"):
            for other in ("b", "c1", "c2"):
                if (shape, ours) in by and (shape, other) in by:
                    ratios[f"dump_kb={shape} {ours}/{other}"] = round(
                        by[(shape, ours)]["crashes_per_s"] / by[(shape, other)]["crashes_per_s"], 2)
    if args.json:
        print(json.dumps({"url": args.url or "embedded (temp)", "results": results, "ratios": ratios}, indent=2))
    else:
        print("throughput ratios:", json.dumps(ratios, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
