#!/usr/bin/env python
"""Stored bytes per crash on a real HBase, against the payload's own bytes.

For each payload shape (metadata-only; ~150 KB dumps) it starts a private HBase 2.6
(tools/servers) under ``DIR/<shape>``, saves ``--crashes`` crashes through this store on Thrift2
(the raw crash with its dumps, then Socorro-shaped processed crashes from the demo, batches of
100), stops HBase (a graceful stop flushes every memstore), starts it again on the same rootdir,
major-compacts every table and waits until the tables' files stop changing.  It then prints, per
table and in total, the bytes of the store files under the rootdir against the payload: the raw
crash's JSON, its dumps and the processed crash's JSON, as a client would send them.

    python tools/bench/bench_stored_bytes.py DIR [--crashes 1000] [--shapes 0,150]

Everything the store keeps counts: crash rows, the 7 indexes, the queue's claim rows, counters,
rankings, registry rows.  WALs, archived (compacted-away) files and HBase's own tables do not.
"""

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from servers.hbase_jars import HBaseUnavailable  # noqa: E402
from servers.hbase_standalone import LocalHBase  # noqa: E402
from socorro_store import open_store  # noqa: E402
from socorro_store.demo import processed_crash, synthetic_crashes  # noqa: E402

DAY = date(2016, 9, 18)
PREFIX = "storedbytes"


def table_bytes(root):
    """``{table: bytes}`` of the store files of this store's tables under an HBase rootdir."""
    out = {}
    tables = root / "data" / "default"
    for table in sorted(tables.glob(PREFIX + "*")) if tables.exists() else []:
        total = 0
        for region in table.iterdir():
            if not region.is_dir() or region.name.startswith("."):
                continue
            for family in region.iterdir():
                if family.is_dir() and not family.name.startswith(".") and family.name != "recovered.edits":
                    total += sum(f.stat().st_size for f in family.iterdir() if f.is_file())
        out[table.name[len(PREFIX):].lstrip("_")] = total
    return out


def ingest(url, crashes, dump_kb, seed=7):
    """Save ``crashes`` crashes raw and processed; return the payload's bytes."""
    data = synthetic_crashes(crashes, DAY, seed=seed, dump_kb=dump_kb)
    payload = 0
    with open_store(url) as store:
        store.create_tables()
        for i in range(0, len(data), 100):
            chunk = data[i:i + 100]
            store.save_raw_crashes([(raw, dumps, cid) for raw, dumps, cid, _sig in chunk])
            processed = [processed_crash(raw, cid, sig) for raw, _dumps, cid, sig in chunk]
            store.save_processed_crashes(processed)
            for (raw, dumps, _cid, _sig), doc in zip(chunk, processed):
                payload += len(json.dumps(raw)) + sum(len(d) for d in dumps.values()) + len(json.dumps(doc))
        store.flush_counters()
    return payload


def compact_and_settle(hbase, url, root, timeout_s=300):
    """Major-compact every table, then wait until the tables' files stop changing."""
    with open_store(url) as store:
        for table in store.backend.list_tables():
            store.backend.compact(table)
    deadline, last, steady_since = time.monotonic() + timeout_s, None, time.monotonic()
    while time.monotonic() < deadline:
        now = table_bytes(root)
        if now != last:
            last, steady_since = now, time.monotonic()
        elif time.monotonic() - steady_since > 15:
            break
        time.sleep(3)
    return last


def measure(directory, crashes, dump_kb, log):
    hbase = LocalHBase(directory, log=log, thrift2=True).start()
    try:
        payload = ingest(hbase.thrift2_url + f"&table_prefix={PREFIX}", crashes, dump_kb)
    finally:
        hbase.stop()  # a graceful stop flushes the memstores into store files
    hbase = LocalHBase(directory, log=log, thrift2=True).start()
    try:
        stored = compact_and_settle(hbase, hbase.url + f"&table_prefix={PREFIX}", Path(directory) / "data" / "root")
    finally:
        hbase.stop()
    return payload, stored


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="where the private HBase of each shape lives (DIR/<shape>)")
    parser.add_argument("--crashes", type=int, default=1000)
    parser.add_argument("--shapes", default="0,150", help="dump sizes in KB, comma-separated")
    args = parser.parse_args(argv)
    try:
        shapes = [int(s) for s in args.shapes.split(",") if s]
    except ValueError:
        parser.error(f"--shapes takes integers: {args.shapes!r}")
    for dump_kb in shapes:
        try:
            payload, stored = measure(Path(args.directory) / f"kb{dump_kb}", args.crashes, dump_kb,
                                      log=lambda msg: None)
        except HBaseUnavailable as exc:
            print(f"bench_stored_bytes: {exc}", file=sys.stderr)
            return 1
        total = sum(stored.values())
        print(f"dump_kb={dump_kb}: {args.crashes} crashes, payload {payload / args.crashes:,.0f} B/crash, "
              f"stored {total / args.crashes:,.0f} B/crash: {total / payload:.2f}x the payload")
        for table, n in sorted(stored.items(), key=lambda item: -item[1]):
            print(f"  {table:<45} {n / args.crashes:>10,.0f} B/crash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
