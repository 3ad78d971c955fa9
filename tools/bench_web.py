#!/usr/bin/env python
"""How fast `socorro-store web` answers on a big store (issue 26: top crashers and signature pages
in <= 100 ms on a store of 1 M crashes).

Builds (once; reused when ``--dir`` holds a finished store of that size) an embedded store of
``--crashes`` crashes spread over ``--days`` days ending today, made by ``socorro_store.demo``'s
generator (Zipf signatures over 3,000 names, four products, versions, process types; no dumps),
saved with the batch calls (``save_raw_crashes``, ``save_processed_crashes``) so the counters and
indexes are the ones live saves write.  Then it times each page through Flask's test client
(``create_app``) and through a real Werkzeug socket (``make_web_server`` + urllib): median and p95
of ``--requests`` requests after one warm-up, the backend calls each page made, and PASS/MISS
against 100 ms for the top-crashers and signature pages.

    PYTHONPATH=. python tools/bench_web.py --dir /tmp/bench-web-1m              # 1,000,000 crashes
    PYTHONPATH=. python tools/bench_web.py --dir /tmp/bench-web --crashes 20000  # a quick look
"""

import argparse
import json
import logging
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

from socorro_store import open_store
from socorro_store.demo import synthetic_crashes
from socorro_store.web import create_app, make_web_server

TARGET_MS = 100
BATCH = 2000


def build(directory, crashes, days, seed):
    """Fill ``directory`` with ``crashes`` crashes over ``days`` days ending today (once)."""
    marker = Path(directory) / "bench-web.json"
    if marker.exists() and json.loads(marker.read_text()).get("crashes") == crashes:
        return json.loads(marker.read_text())
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    started, done = time.perf_counter(), 0
    with open_store(f"embedded://{directory}") as store:
        store.create_tables()
        for d in range(days):
            day = today - timedelta(days=days - 1 - d)
            n = crashes // days + (1 if d < crashes % days else 0)
            data = synthetic_crashes(n, day, seed=seed + d, dump_kb=0)
            for i in range(0, len(data), BATCH):
                chunk = data[i:i + BATCH]
                store.save_raw_crashes([(raw, dumps, cid) for raw, dumps, cid, _sig in chunk])
                store.save_processed_crashes([{"uuid": cid, "signature": sig, "product": raw["ProductName"],
                                               "version": raw["Version"], "os_name": "Windows NT", "success": True,
                                               "completeddatetime": raw["submitted_timestamp"]}
                                              for raw, _d, cid, sig in chunk if sig is not None])
                done += len(chunk)
            rate = done / (time.perf_counter() - started)
            print(f"  built {done:,} / {crashes:,} crashes ({rate:,.0f} crashes/s)", file=sys.stderr, flush=True)
        store.flush_counters()
    info = {"crashes": crashes, "days": days, "build_seconds": round(time.perf_counter() - started, 1),
            "build_rate": round(crashes / (time.perf_counter() - started), 1)}
    marker.write_text(json.dumps(info))
    return info


def _timed(fetch, requests):
    fetch()  # warm-up: page caches, registry reads
    times = []
    for _ in range(requests):
        t0 = time.perf_counter()
        fetch()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return round(statistics.median(times), 1), round(times[max(0, int(len(times) * 0.95) - 1)], 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="the store's directory (built once, then reused)")
    parser.add_argument("--crashes", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines between the figures
    info = build(args.dir, args.crashes, args.days, args.seed)
    print(f"store: {info['crashes']:,} crashes over {info['days']} days, built in {info['build_seconds']} s "
          f"({info['build_rate']:,} crashes/s)")
    with open_store(f"embedded://{args.dir}") as store:
        app = create_app(store).test_client()
        top = app.get("/api/topcrashers?days=7").get_json()["signatures"]
        first, rare = top[0]["signature"], top[-1]["signature"]
        crash = app.get("/api/signature?" + urllib.parse.urlencode({"signature": first})).get_json()["crashes"][0]["crash_id"]
        paths = [("/", False), ("/topcrashers/", True), ("/topcrashers/?days=30", True),
                 ("/topcrashers/?product=Firefox&days=7", True), ("/topcrashers/?product=Firefox&version=120.0.1&os=Windows+NT", True),
                 ("/signature/?" + urllib.parse.urlencode({"signature": first}), True),
                 ("/signature/?" + urllib.parse.urlencode({"signature": rare}), True),
                 (f"/report/index/{crash}", False), ("/api/topcrashers?days=7", True),
                 ("/api/signature?" + urllib.parse.urlencode({"signature": first}), True), ("/api/queue", False)]
        server = make_web_server(store, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        print(f"{'page':<62} {'in-process p50/p95 ms':>22} {'socket p50/p95 ms':>18} {'calls':>6}  target")
        misses = 0
        for path, targeted in paths:
            calls_before = sum(store.backend.calls.values())
            assert app.get(path).status_code == 200, path
            calls = sum(store.backend.calls.values()) - calls_before
            local = _timed(lambda: app.get(path), args.requests)
            remote = _timed(lambda: urllib.request.urlopen(base + path, timeout=60).read(), args.requests)
            verdict = ("PASS" if remote[0] <= TARGET_MS else "MISS") if targeted else ""
            misses += verdict == "MISS"
            print(f"{path[:62]:<62} {local[0]:>10} / {local[1]:<10} {remote[0]:>7} / {remote[1]:<8} {calls:>6}  {verdict}")
        server.shutdown()
        server.server_close()
    print(f"top crashers and signature pages (median over a socket) <= {TARGET_MS} ms: "
          f"{'met' if not misses else f'{misses} MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
