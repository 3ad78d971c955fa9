#!/usr/bin/env python
"""Roll-up memory: the peak RSS of a roll-up of one day, as the day grows.

For each size N (crashes in the day) it loads a store with N crashes drawn from ``--signatures``
signature names (Zipf, with products, versions and OSes: :mod:`bulk_crashes`), in a process of
its own, then runs ``rollup`` over that day in a fresh process and reads that process's peak RSS
(``ru_maxrss``): what the roll-up alone holds, the loader's memory excluded.  Live counters are
not written by the loader, so the roll-up writes every counter of the day (its most work).

    python tools/bench/bench_rollup_memory.py --sizes 100000,300000 --signatures 30000
    python tools/bench/bench_rollup_memory.py --sizes 300000 --url hbase://127.0.0.1:9090

Prints, per size: crashes, distinct signatures, seconds, cells written, peak RSS (MB), and the
ratio of each peak to the first size's (flat memory: about 1.0x).  An embedded store's peak
includes the engine's own caches (it runs in the roll-up's process); against ``--url`` it is
the roll-up's alone.  The issue 32 target: <= 150 MB for 300 k crashes with 30 k signatures.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_common import isolated  # noqa: E402
from bench.bulk_crashes import START, load_direct  # noqa: E402

from socorro_store import open_store
from socorro_store.jobs import rollup
from socorro_store.schema import keys as K


def load(url, per_day, signatures, seed):
    with open_store(url) as store:
        store.create_tables()
        return load_direct(store.backend, 1, per_day, seed, signatures=signatures)


def run_rollup(url):
    """The child: one roll-up of the day; prints its figures as JSON."""
    with open_store(url, background_counters=False) as store:
        t0 = time.perf_counter()
        report = rollup.run_rollup(store.backend, until=START + timedelta(days=1), grace_s=0, since=START)
        seconds = time.perf_counter() - t0
        signatures = sum(1 for _ in store.backend.scan(K.SIGNATURES, columns=[K.FAMILY_COUNTERS]))
    print(json.dumps({"seconds": round(seconds, 1), "cells_written": report["cells_written"],
                      "crashes_read": report["crashes_read"], "signatures": signatures,
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


def child(*args):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), *args], check=True,
                         stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    return out.stdout.strip().splitlines()[-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000", help="crashes in the day, comma-separated")
    parser.add_argument("--signatures", type=int, default=30000, help="signature names (default 30000)")
    parser.add_argument("--url", help="store URL (default: an embedded store in a temp directory)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child-load", nargs=3, metavar=("URL", "N", "SIGNATURES"), help=argparse.SUPPRESS)
    parser.add_argument("--child-rollup", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_load:
        url, n, signatures = args.child_load
        print(json.dumps({"crashes": load(url, int(n), int(signatures), args.seed)}))
        return 0
    if args.child_rollup:
        run_rollup(args.child_rollup)
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-rollup-mem-") as workdir:
        for n in sizes:
            url = isolated(args.url, workdir, f"n{n}")
            t0 = time.perf_counter()
            loaded = json.loads(child("--seed", str(args.seed), "--child-load", url, str(n), str(args.signatures)))
            figures = json.loads(child("--child-rollup", url))
            results.append({"crashes": loaded["crashes"], "load_seconds": round(time.perf_counter() - t0, 1),
                            **figures})
            print(f"N={n}: {results[-1]}", file=sys.stderr)
    first = results[0]["peak_rss_mb"]
    for r in results:
        r["peak_vs_first"] = round(r["peak_rss_mb"] / first, 2)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'crashes':>9} {'signatures':>10} {'seconds':>8} {'cells':>9} {'peak RSS MB':>12} {'vs first':>9}")
        for r in results:
            print(f"{r['crashes']:>9} {r['signatures']:>10} {r['seconds']:>8} {r['cells_written']:>9} "
                  f"{r['peak_rss_mb']:>12} {r['peak_vs_first']:>8}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
