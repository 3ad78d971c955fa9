"""Benchmark the engine's column-selective reads (issue 12).

    python tools/bench/bench_selective.py [--wide 80000] [--narrow 100] [--gets 200] [--rows 120] [--dir DIR]

Prints:

* a get of 2 columns from a row of ``--wide`` cells and from a row of ``--narrow`` cells (median
  of ``--gets`` gets), with the cell keys each get examined;
* a scan selecting only ``ids:ooid`` over ``--rows`` crash rows carrying a 1 MB dump each: the
  value bytes loaded and the tracemalloc peak, beside the same scan of whole rows.
"""

import argparse
import os
import statistics
import tempfile
import time
import tracemalloc

from socorro_store.engine import Engine
from socorro_store.schema.specs import FamilySpec


def _get_ms(engine, row, columns, gets):
    times = []
    for _ in range(gets):
        t0 = time.perf_counter()
        engine.get("t", [row], columns)
        times.append((time.perf_counter() - t0) * 1000)
    before = engine.read_stats.snapshot()["keys_examined"]
    engine.get("t", [row], columns)
    return statistics.median(times), engine.read_stats.snapshot()["keys_examined"] - before


def _scan_cost(engine, columns):
    before = engine.read_stats.snapshot()["value_bytes"]
    tracemalloc.start()
    rows = sum(1 for _ in engine.scan("c", columns=columns))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return rows, engine.read_stats.snapshot()["value_bytes"] - before, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wide", type=int, default=80_000)
    parser.add_argument("--narrow", type=int, default=100)
    parser.add_argument("--gets", type=int, default=200)
    parser.add_argument("--rows", type=int, default=120)
    parser.add_argument("--dir", default=None, help="where to put the store (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        engine = Engine(directory)
        engine.create_table("t", [FamilySpec("d", versions=1)])
        for row, count in ((b"wide", args.wide), (b"narrow", args.narrow)):
            engine.mutate("t", [(row, [(b"d", b"q%06d" % i, b"v%d" % i) for i in range(count)], [], False)])
        columns = [(b"d", b"q000010"), (b"d", b"q000050")]
        print(f"get of 2 columns (median of {args.gets})")
        for row, count in ((b"wide", args.wide), (b"narrow", args.narrow)):
            ms, keys = _get_ms(engine, row, columns, args.gets)
            print(f"  row of {count:>7,} cells: {ms:8.3f} ms, {keys} cell keys examined")

        engine.create_table("c", [FamilySpec("ids", versions=1), FamilySpec("raw", versions=1)])
        dump = os.urandom(1 << 20)
        for i in range(args.rows):
            engine.mutate("c", [(b"row%04d" % i, [(b"ids", b"ooid", b"%036d" % i),
                                                 (b"raw", b"upload_file_minidump", dump)], [], False)])
        print(f"scan of {args.rows} crash rows with 1 MB dumps")
        for label, columns in (("ids:ooid only", [(b"ids", b"ooid")]), ("whole rows", None)):
            rows, loaded, peak = _scan_cost(engine, columns)
            print(f"  {label:<14} {rows} rows, {loaded / 1e6:9.3f} MB of values loaded, "
                  f"tracemalloc peak {peak / 1e6:8.3f} MB")
        engine.close()


if __name__ == "__main__":
    main()
