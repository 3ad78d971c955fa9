#!/usr/bin/env python
"""How fast the deriver derives a backlog, with the reads it makes now against the reads it made
before (side by side in one run, on two fresh stores of the same crashes).

Both stores get the same crashes (``tools/bench/bench_web_build.day_crashes``: one day, Zipf
signatures over ``--signatures`` names, 2,000 crashes a save call, raw then processed), saved
with ``SOCORRO_DERIVE=inline`` so that nothing derives until the bench asks; then each store's
deriver derives the backlog, batch after batch, the two stores alternating batch by batch (so
the machine's load falls on both alike):

* ``now``: the deriver as it is: a value it wrote or read in its hold is not read again
  (``known_cells``), and the counters it does read, it reads row by row (``get_rows_columns``);
* ``before``: every counter of a batch read again, every row of a table with every column the
  batch names for that table (one ``get_rows``: the cross product, as before).

Prints each mode's crashes derived per second, counter cells read per crash, and the ratio
labelled with both modes.  It is not a test.

    PYTHONPATH=. python tools/bench/bench_deriver.py --crashes 20000
    PYTHONPATH=. python tools/bench/bench_deriver.py --crashes 20000 --url 'hbase://127.0.0.1:PORT?api=thrift2'
"""

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

os.environ.setdefault("SOCORRO_DERIVE", "inline")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bench_web_build  # noqa: E402
from bench.bench_common import isolated  # noqa: E402

from socorro_store import open_store  # noqa: E402
from socorro_store.backends.base import Backend  # noqa: E402
from socorro_store.crashstore import counter_deriver  # noqa: E402
from socorro_store.crashstore.dimensions import Dimensions  # noqa: E402
from socorro_store.crashstore.known_cells import KnownCells  # noqa: E402


def _fill(store, crashes, batch):
    for i in range(0, len(crashes), batch):
        chunk = crashes[i:i + batch]
        store.save_raw_crashes([(raw, {}, cid) for raw, cid, _sig, _os in chunk])
        store.save_processed_crashes([bench_web_build.processed_of(*c) for c in chunk])


def _deriver(store, before):
    deriver = counter_deriver.admitting_deriver(store.backend, Dimensions(), background=False)
    if before:
        deriver._known = KnownCells(known_seconds=0)  # nothing known: every cell read
        backend = store.backend
        backend.get_rows_columns = lambda table, columns_by_row: Backend.get_rows_columns(backend, table, columns_by_row)
    return deriver


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crashes", type=int, default=20_000)
    parser.add_argument("--signatures", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=2_000, help="crashes per save call")
    parser.add_argument("--url", help="a server's store (each mode on tables of its own); default: embedded")
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args(argv)
    first_day = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    crashes = bench_web_build.day_crashes(first_day, 0, args.crashes, args.seed, args.signatures)
    workdir = tempfile.mkdtemp(prefix="bench-deriver-")
    modes = ("before", "now")
    stores, derivers = {}, {}
    try:
        for mode in modes:
            url = isolated(args.url, workdir, mode)
            stores[mode] = open_store(url, search_url="none")
            stores[mode].create_tables()
            t0 = time.perf_counter()
            _fill(stores[mode], crashes, args.batch)
            print(f"{mode}: {args.crashes:,} crashes saved in {time.perf_counter() - t0:.1f} s (not derived)", flush=True)
            derivers[mode] = _deriver(stores[mode], mode == "before")
        seconds = dict.fromkeys(modes, 0.0)
        done = dict.fromkeys(modes, False)
        while not all(done.values()):
            for mode in modes:
                if done[mode]:
                    continue
                t0 = time.perf_counter()
                result = derivers[mode].derive_pass()
                seconds[mode] += time.perf_counter() - t0
                done[mode] = not result["records"]
        for mode in modes:
            d = derivers[mode]
            print(f"{mode:>6}: {d.derived:,} crashes derived in {seconds[mode]:.1f} s "
                  f"({d.derived / seconds[mode]:,.0f} crashes/s, {d.passes} passes), "
                  f"{d.cells_read / max(d.derived, 1):.1f} counter cells read per crash", flush=True)
        print(f"derivation rate now / before: {seconds['before'] / seconds['now']:.2f}x", flush=True)
    finally:
        for mode, store in stores.items():
            derivers.get(mode) and derivers[mode].close()
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
