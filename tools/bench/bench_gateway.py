"""Benchmark ``socorro-store serve`` through happybase.

Starts the gateway as a subprocess on a free loopback port over a fresh temporary directory and
prints, as the median of ``--runs`` runs:

* single-call rates (calls/s) for put, get (``row``) and increment (``counter_inc``);
* batched 2 KB rows/s (``table.batch(batch_size=…)``);
* scan rows/s over the batched rows.

Targets (issue 3): >= 2,000 single calls/s and >= 40,000 batched rows/s.

    python tools/bench/bench_gateway.py [--transport buffered|framed] [--protocol binary|compact]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import happybase

_SERVING = re.compile(r"serving \S+ on 127\.0\.0\.1:(\d+) ")


def start_gateway(directory, transport, protocol):
    proc = subprocess.Popen(
        [sys.executable, "-m", "socorro_store", "--url", f"embedded://{directory}", "serve", "--create", "--port", "0",
         "--transport", transport, "--protocol", protocol],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()
    match = _SERVING.search(line)
    if not match:
        proc.kill()
        raise SystemExit(f"gateway did not start: {line!r}")
    return proc, int(match.group(1))


def rate(count, seconds):
    return count / seconds if seconds > 0 else float("inf")


def one_run(conn, run, singles, batched, batch_size):
    name = f"bench{run}"
    conn.create_table(name, {"cf": {"max_versions": 1}, "c": {"max_versions": 1}})
    table = conn.table(name)
    small = b"v" * 100
    figures = {}

    start = time.perf_counter()
    for i in range(singles):
        table.put(b"s%08d" % i, {b"cf:a": small})
    figures["put calls/s"] = rate(singles, time.perf_counter() - start)

    start = time.perf_counter()
    for i in range(singles):
        table.row(b"s%08d" % i)
    figures["get calls/s"] = rate(singles, time.perf_counter() - start)

    start = time.perf_counter()
    for i in range(singles):
        table.counter_inc(b"counter", b"c:n%d" % (i % 16))
    figures["increment calls/s"] = rate(singles, time.perf_counter() - start)

    value = os.urandom(1024).hex().encode()  # 2 KB, incompressible-ish
    start = time.perf_counter()
    with table.batch(batch_size=batch_size) as batch:
        for i in range(batched):
            batch.put(b"b%08d" % i, {b"cf:payload": value})
    figures["batched 2KB rows/s"] = rate(batched, time.perf_counter() - start)

    start = time.perf_counter()
    scanned = sum(1 for _ in table.scan(row_prefix=b"b", batch_size=1000))
    figures["scan rows/s"] = rate(scanned, time.perf_counter() - start)
    assert scanned == batched, (scanned, batched)

    conn.delete_table(name, disable=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=["buffered", "framed"], default="buffered")
    parser.add_argument("--protocol", choices=["binary", "compact"], default="binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--singles", type=int, default=3000)
    parser.add_argument("--batched", type=int, default=30000)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as directory:
        proc, port = start_gateway(directory, args.transport, args.protocol)
        try:
            conn = happybase.Connection("127.0.0.1", port, transport=args.transport, protocol=args.protocol)
            runs = [one_run(conn, run, args.singles, args.batched, args.batch_size) for run in range(args.runs)]
            conn.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"gateway {args.transport}/{args.protocol}, median of {args.runs} runs "
          f"({args.singles} single calls, {args.batched} batched rows, batch_size {args.batch_size})")
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"  {key:<20} {statistics.median(values):>10,.0f}   (runs: {', '.join(f'{v:,.0f}' for v in values)})")


if __name__ == "__main__":
    main()
