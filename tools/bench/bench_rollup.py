#!/usr/bin/env python
"""Roll-up benchmark: time, backend calls and rows read for 1, 7 and 30 days of synthetic crashes.

For each D it ingests ``--per-day`` crashes a day for D days (2016-09-01 onwards; 30 days close
September, so the month roll-up runs too) into a fresh store through the public API (save raw,
take from the queue, save processed), corrupts ``--drift`` of the live counter cells (+1) so the
roll-up has something to correct, then runs ``rollup.run_rollup`` with every day closed and
reports: seconds, backend calls by kind, rows read (rows yielded by ``scan`` plus rows returned
by ``get_rows``, by table; and unbounded scans, which read a whole table server-side), counter cells written (puts and deletes to ``metrics`` and
``crash_report_signatures``) and the most times any one (table, row, column) was written (must
be 1).  Ratios against D=1 show whether cost grows linearly with the rows read.  Usage:

    python tools/bench/bench_rollup.py                                  # embedded, temp directories
    python tools/bench/bench_rollup.py --days 1,7,30 --per-day 200 --json
    python tools/bench/bench_rollup.py --url hbase://127.0.0.1:9090     # gateway / HBase (table_prefix per D)

At scale (``--direct``): the crashes are written straight into the tables with batched mutations
(:mod:`bulk_crashes`; no live counters, so the roll-up writes every counter once), and the run
also reports its memory: the process's peak RSS before and after the roll-up, and with
``--tracemalloc`` the peak of Python allocations during the roll-up alone.  Run two sizes in two
processes to compare (the peak RSS of a process only grows):

    python tools/bench/bench_rollup.py --direct --days 30 --per-day 100000
    python tools/bench/bench_rollup.py --direct --days 30 --per-day 20000 --memory-only   # peak RSS, no probe
    python tools/bench/bench_rollup.py --direct --days 1 --per-day 20000 --memory-only --tracemalloc
"""

import argparse
import array
import collections
import hashlib
import json
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_common import isolated  # noqa: E402
from bench.bulk_crashes import load_direct  # noqa: E402

from socorro_store import open_store
from socorro_store.backends.base import RowMutation
from socorro_store.demo import Zipf, signature_names, synthetic_crashes
from socorro_store.jobs import rollup
from socorro_store.schema import keys as K

START = datetime(2016, 9, 1, tzinfo=timezone.utc)
COUNTER_TABLES = (K.METRICS, K.SIGNATURES)
BATCH = 200


def ingest(store, days, per_day, seed):
    """Save, take and process ``per_day`` crashes a day; signatures Zipf over one shared name list."""
    rng = random.Random(seed)
    names = signature_names(3000, rng)
    zipf = Zipf(len(names))
    total = 0
    for d in range(days):
        day = (START + timedelta(days=d)).date()
        data = synthetic_crashes(per_day, day, seed=seed * 1000 + d, dump_kb=0)
        planned = {}
        for raw, _dumps, cid, sig in data:
            planned[cid] = sig if sig in (None, "") else names[zipf.draw(rng)]
        for i in range(0, len(data), BATCH):
            store.save_raw_crashes([(r, {}, c) for r, _d, c, _s in data[i:i + BATCH]])
        while True:
            ids = list(store.new_crashes(limit=BATCH, processor_id="bench"))
            if not ids:
                break
            store.save_processed_crashes([
                {"uuid": cid, "signature": planned[cid], "success": planned[cid] is not None,
                 "completeddatetime": datetime.now(timezone.utc).isoformat()} for cid in ids])
        total += len(data)
    return total


def corrupt(backend, fraction, seed):
    """Add 1 to ``fraction`` of the counter cells, so the roll-up must rewrite them."""
    rng = random.Random(seed)
    touched = 0
    for table in COUNTER_TABLES:
        batch = []
        for row, cells in backend.scan(table, columns=[K.FAMILY_COUNTERS], page_size=1000):
            if row == K.QUEUE_ROW:
                continue
            puts = {c: K.encode_counter(K.decode_counter(v) + 1) for c, v in cells.items()
                    if len(v) == 8 and rng.random() < fraction}
            if puts:
                batch.append(RowMutation(row, puts))
                touched += len(puts)
        for i in range(0, len(batch), 1000):
            backend.mutate_rows(table, batch[i:i + 1000])
    return touched


class KeyTally:
    """How often each (table, row, column) was written, in 8 bytes per write.

    At 3 M crashes the roll-up writes about a million counter cells; a Counter of those keys would
    outweigh the roll-up it measures.  A 64-bit digest per write (a collision among a million keys
    has odds of about 3e-8) keeps the probe to a few MB; the tallies are computed after the run.
    """

    def __init__(self):
        self._digests = array.array("Q")

    def add(self, table, row, column):
        key = b"\0".join((table.encode() if isinstance(table, str) else table, row, column))
        self._digests.append(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little"))

    def __len__(self):
        return len(self._digests)

    def distinct_and_max(self):
        """(distinct keys, most writes of any one key)."""
        distinct = most = run = 0
        previous = None
        for digest in sorted(self._digests):
            run = run + 1 if digest == previous else 1
            distinct += digest != previous
            most, previous = max(most, run), digest
        return distinct, most


class Probe:
    """Wraps one backend's scan/get_rows/mutate_rows (instance attributes) to count rows and writes."""

    def __init__(self, backend):
        self.backend = backend
        self.rows_read = collections.Counter()     # table -> rows
        self.writes = KeyTally()                   # (table, row, column) -> puts + deletes
        self.marks = KeyTally()                    # same, for non-counter columns (timestamps:*)
        self.full_scans = collections.Counter()    # table -> unbounded scans (read the whole table)
        scan, get_rows, mutate_rows = backend.scan, backend.get_rows, backend.mutate_rows

        def counted_scan(table, *args, **kwargs):
            if not args and not any(kwargs.get(k) for k in ("start", "stop", "prefix")):
                self.full_scans[table] += 1
            for item in scan(table, *args, **kwargs):
                self.rows_read[table] += 1
                yield item

        def counted_get_rows(table, rows, *args, **kwargs):
            found = get_rows(table, rows, *args, **kwargs)
            self.rows_read[table] += len(found)
            return found

        def counted_mutate_rows(table, mutations, *args, **kwargs):
            if table in COUNTER_TABLES:
                for m in mutations:
                    for column in list(m.puts) + list(m.deletes):
                        target = self.writes if column.startswith(K.FAMILY_COUNTERS + b":") else self.marks
                        target.add(table, m.row, column)
            return mutate_rows(table, mutations, *args, **kwargs)

        backend.scan, backend.get_rows, backend.mutate_rows = counted_scan, counted_get_rows, counted_mutate_rows

    def close(self):
        for name in ("scan", "get_rows", "mutate_rows"):
            self.backend.__dict__.pop(name, None)


def peak_rss_mb():
    """This process's peak resident set size so far, in MB (Linux reports KB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def bench_one(url, days, per_day, drift, seed, direct=False, trace=False, probe_writes=True, signatures=3000):
    with open_store(url) as store:
        store.create_tables()
        t0 = time.perf_counter()
        crashes = load_direct(store.backend, days, per_day, seed, signatures=signatures) if direct else ingest(store, days, per_day, seed)
        ingest_s = time.perf_counter() - t0
        rss_before = peak_rss_mb()
        corrupted = corrupt(store.backend, drift, seed)
        backend = store.backend
        probe = Probe(backend) if probe_writes else Probe.__new__(Probe)  # the probe holds every key written
        if not probe_writes:
            probe.backend, probe.rows_read, probe.writes, probe.marks, probe.full_scans = (
                backend, collections.Counter(), KeyTally(), KeyTally(), collections.Counter())
        backend.calls.clear()
        until = START + timedelta(days=days)
        if trace:
            tracemalloc.start()
        t0 = time.perf_counter()
        try:
            report = rollup.run_rollup(backend, until=until, grace_s=0, since=START)
        finally:
            seconds = time.perf_counter() - t0
            probe.close()
            traced_peak = tracemalloc.get_traced_memory()[1] if trace else None
            if trace:
                tracemalloc.stop()
        rss_after = peak_rss_mb()  # before the tallies below sort the probe's digests
        keys_written, max_writes = probe.writes.distinct_and_max()
        calls = dict(sorted(backend.calls.items()))
        rows_read = sum(probe.rows_read.values())
        n_calls = sum(calls.values())
        return {
            "days": days, "crashes": crashes, "ingest_seconds": round(ingest_s, 2),
            "counter_cells_corrupted": corrupted, "seconds": round(seconds, 3), "calls": calls,
            "calls_total": n_calls, "rows_read": rows_read, "rows_read_by_table": dict(probe.rows_read),
            "full_table_scans": dict(probe.full_scans),
            "rows_per_second": round(rows_read / seconds) if seconds else None,
            "counter_cells_written": len(probe.writes), "counter_keys_written": keys_written,
            "max_writes_per_key": max_writes if probe_writes else None,
            "max_writes_per_mark": probe.marks.distinct_and_max()[1],
            "drift_reported": sum(report["drift"].values()), "months_rolled_up": report["months"],
            "us_per_row": round(seconds / rows_read * 1e6, 1) if rows_read else None,
            "peak_rss_mb_before_rollup": rss_before, "peak_rss_mb_after_rollup": rss_after,
            "rollup_tracemalloc_peak_mb": round(traced_peak / 2**20, 2) if traced_peak is not None else None,
            "kept_intervals": report["kept_intervals"], "loader": "direct" if direct else "api",
            "calls_per_1k_rows": round(n_calls / rows_read * 1000, 2) if rows_read else None,
        }


def add_ratios(results):
    base = results[0]
    for r in results:
        scale = r["rows_read"] / base["rows_read"] if base["rows_read"] else None
        r["vs_first"] = {
            "crashes_x": round(r["crashes"] / base["crashes"], 2),
            "rows_read_x": round(scale, 2) if scale else None,
            "seconds_x": round(r["seconds"] / base["seconds"], 2) if base["seconds"] else None,
            "calls_x": round(r["calls_total"] / base["calls_total"], 2) if base["calls_total"] else None,
            "rows_per_crash": round(r["rows_read"] / r["crashes"], 2),
        }
    return results


def print_table(results):
    fields = [("days", "days"), ("crashes", "crashes"), ("seconds", "seconds"), ("calls_total", "calls"),
              ("rows_read", "rows read"), ("rows_per_second", "rows/s"), ("counter_cells_written", "counter cells"),
              ("max_writes_per_key", "max writes/key"), ("us_per_row", "µs/row"),
              ("calls_per_1k_rows", "calls/1k rows")]
    width = max(len(label) for _f, label in fields) + 2
    print("".join(f"{label:>{width}}" for _f, label in fields))
    for r in results:
        print("".join(f"{r[f]!s:>{width}}" for f, _label in fields))
    print()
    for r in results:
        v = r["vs_first"]
        print(f"D={r['days']:>2}: calls {r['calls']}")
        print(f"      rows read by table {r['rows_read_by_table']}; full-table scans {r['full_table_scans']}")
        print(f"      vs D={results[0]['days']}: crashes x{v['crashes_x']}, rows read x{v['rows_read_x']}, "
              f"seconds x{v['seconds_x']}, calls x{v['calls_x']}; rows read per crash {v['rows_per_crash']}; "
              f"drift corrected {r['drift_reported']} (corrupted {r['counter_cells_corrupted']}); "
              f"months {r['months_rolled_up']}; max writes per mark {r['max_writes_per_mark']}")
        print(f"      loader {r['loader']} ({r['ingest_seconds']} s); peak RSS {r['peak_rss_mb_before_rollup']} MB "
              f"before the roll-up, {r['peak_rss_mb_after_rollup']} MB after; roll-up tracemalloc peak "
              f"{r['rollup_tracemalloc_peak_mb']} MB; max writes per key {r['max_writes_per_key']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", default="1,7,30", help="comma-separated day counts (default 1,7,30)")
    parser.add_argument("--per-day", type=int, default=200, help="crashes per day (default 200)")
    parser.add_argument("--drift", type=float, default=0.5, help="fraction of counter cells to corrupt")
    parser.add_argument("--url", help="store URL (default: embedded store in a temp directory per D)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--direct", action="store_true",
                        help="write the crashes straight into the tables (batched; for large volumes)")
    parser.add_argument("--signatures", type=int, default=3000,
                        help="signature names the crashes are drawn from (Zipf; --direct only; default 3000)")
    parser.add_argument("--tracemalloc", action="store_true", help="report the roll-up's Python allocation peak")
    parser.add_argument("--memory-only", action="store_true",
                        help="no write probe (it holds 8 bytes per counter cell written, about 8 MB at 3 M "
                             "crashes); rows read and max writes per key are not reported")
    args = parser.parse_args(argv)
    day_counts = [int(d) for d in args.days.split(",") if d.strip()]
    if not day_counts or min(day_counts) < 1 or max(day_counts) > 365:
        parser.error("--days: integers in 1..365")
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-rollup-") as workdir:
        for days in day_counts:
            results.append(bench_one(isolated(args.url, workdir, f"d{days}"), days, args.per_day,
                                     args.drift, args.seed, args.direct, args.tracemalloc,
                                     not args.memory_only, args.signatures))
            print(f"D={days}: {results[-1]['seconds']} s", file=sys.stderr)
    add_ratios(results)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
    ok = all((r["max_writes_per_key"] or 0) <= 1 for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
