"""Benchmark the embedded engine: batched writes, scans and single-row commits.

    python tools/bench/bench_engine.py [--cells 20000] [--batch 1000] [--runs 3] [--dir DIR]

Prints the median of ``--runs`` runs for each figure.  Values are 2 KB, half random and half
repetitive (roughly how JSON and minidumps compress), written to a compressed (LZO in the spec,
zlib in the engine) and to an uncompressed family side by side, so the codec's cost shows.
"""

import argparse
import os
import random
import statistics
import tempfile
import time

from socorro_store.backends.base import RowMutation
from socorro_store.backends.embedded import EmbeddedBackend
from socorro_store.schema.specs import FamilySpec, TableSpec


def value_2k(rng):
    return rng.randbytes(1024) + b"\x00" * 512 + b'{"ProductName": "Firefox"}' * 19 + b" " * 6


def run_once(directory, cells, batch, compression, single):
    rng = random.Random(7)
    backend = EmbeddedBackend(directory)
    table = f"bench_{compression.lower()}"
    backend.create_table(TableSpec(table, (FamilySpec("d", compression=compression),)))
    values = [value_2k(rng) for _ in range(256)]
    keys = [b"%08x" % rng.getrandbits(32) + b"%06d" % i for i in range(cells)]

    t0 = time.perf_counter()
    for i in range(0, cells, batch):
        backend.mutate_rows(table, [RowMutation(k, {b"d:v": values[j % 256]})
                                    for j, k in enumerate(keys[i:i + batch], i)])
    write_rate = cells / (time.perf_counter() - t0)

    t0 = time.perf_counter()
    scanned = sum(1 for _ in backend.scan(table, page_size=1000))
    scan_rate = scanned / (time.perf_counter() - t0)
    assert scanned == cells, (scanned, cells)

    t0 = time.perf_counter()
    for i in range(single):
        backend.mutate_rows(table, [RowMutation(b"single%06d" % i, {b"d:v": values[i % 256]})])
    single_rate = single / (time.perf_counter() - t0)
    backend.close()
    size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(directory) for f in files)
    return write_rate, scan_rate, single_rate, size / (cells + single)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to put the store (default: a temp dir)")
    args = parser.parse_args()
    print(f"embedded engine, {args.cells} cells of 2 KB, batches of {args.batch}, "
          f"{args.single} single-row commits; median of {args.runs} runs")
    print(f"{'family':<12}{'batched writes/s':>18}{'scan cells/s':>15}{'single commits/s':>18}{'bytes/cell':>12}")
    for compression in ("NONE", "LZO"):
        results = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(dir=args.dir) as directory:
                results.append(run_once(directory, args.cells, args.batch, compression, args.single))
        w, s, c, b = (statistics.median(r[i] for r in results) for i in range(4))
        print(f"{compression:<12}{w:>18,.0f}{s:>15,.0f}{c:>18,.0f}{b:>12,.0f}")
    print("targets: >= 20,000 cells/s batched writes, >= 100,000 cells/s scans")


if __name__ == "__main__":
    main()
