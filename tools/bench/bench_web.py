#!/usr/bin/env python
"""How fast `socorro-store web` answers on a big store (issue 33: `/`, top crashers and the first
signature page in <= 100 ms median in process and <= 150 ms over a socket at 1 M crashes and
40 k signatures).  It prints figures; it is not a test.

Build (``tools/bench/bench_web_build.py``; once: reused when ``--dir`` holds a finished store of that
size, resumed when it holds an unfinished one): ``--crashes`` crashes over the ``--days`` days
ending today, made by ``socorro_store.demo.synthetic_crashes`` (Zipf signatures over
``--signatures`` names, kept across days; four products, versions, channels, process types;
Windows, macOS and Linux for the desktop products, Android for the mobile ones; metadata only: no
dumps, no Notes) and saved with the batch calls (2,000 crashes a call, counters coalesced for a
minute) by ``--writers`` processes at once, each taking every n-th day, newest first, so the
counters, rankings and indexes are the ones live saves write (closed days get their top rows from
``socorro-store rollup``, as in production).  The store is embedded in ``--dir``, or the one
``--url`` names (HBase: ``hbase://127.0.0.1:PORT?api=thrift2``; ``--dir`` then keeps only the
progress files).  On the shared 2-core machine 1 M crashes took 53 minutes in one process, 46
with two writers on a loaded machine (docs/web-figures.md).

Timing: every page through Flask's test client (``create_app``) and through a real Werkzeug
socket (``make_web_server`` + urllib), the median and p95 of ``--requests`` requests after one
warm-up and the in-process CPU time, the backend calls of one request by kind (the backend's
``calls`` counters), and PASS or MISS against the targets for the targeted pages.  ``--partial``
times an unfinished build as it stands (the days it finished).  ``--flatness N`` also builds (or
reuses) a store of the same crashes with N names (``DIR-sigN``, or ``--flatness-url``) and times
the top-crashers pages on both, alternating, printing the ratio of the medians labelled with both
modes.

    python tools/bench/bench_web.py --dir /tmp/bench-web-1m                   # 1 M crashes, 40 k names
    python tools/bench/bench_web.py --dir /tmp/bench-web-20k --crashes 20000  # quick mode: ~1 minute
    python tools/bench/bench_web.py --dir /tmp/bw-flat --crashes 66666 --days 2 --flatness 2000 --no-pages
    python tools/bench/bench_web.py --dir /tmp/bw-hb --url 'hbase://127.0.0.1:PORT?api=thrift2' --crashes 100000
"""

import argparse
import collections
import logging
import random
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_web_build  # noqa: E402

from socorro_store import open_store  # noqa: E402
from socorro_store.demo import signature_names  # noqa: E402
from socorro_store.web import create_app, make_web_server  # noqa: E402

TARGET_MS = 100
SOCKET_TARGET_MS = 150
DEFAULT_SIGNATURES = 40_000


def _timed(fetch, requests):
    """Median and p95 wall ms of ``requests`` calls after one warm-up, and the median CPU ms of
    this process (the in-process figure on a loaded shared machine: wall time there includes the
    time other processes hold both cores; CPU time does not, but it leaves out a server's)."""
    fetch()  # warm-up: page caches, registry reads
    times, cpu = [], []
    for _ in range(requests):
        t0, c0 = time.perf_counter(), time.process_time()
        fetch()
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    times.sort()
    return (round(statistics.median(times), 1), round(times[max(0, int(len(times) * 0.95) - 1)], 1),
            round(statistics.median(cpu), 1))


def _paths(app, seed, signatures):
    """The pages to time: ``[(path, targeted)]`` (targeted: one the issue's targets are about)."""
    top = app.get("/api/topcrashers?days=7").get_json()["signatures"]
    # the generator's least likely name: a few crashes, or none, in a 1 M store
    first, rare = top[0]["signature"], signature_names(signatures, random.Random(seed))[-1]
    crash = app.get("/api/signature?" + urllib.parse.urlencode({"signature": first})).get_json()["crashes"][0]["crash_id"]
    top_sig, rare_sig = (urllib.parse.urlencode({"signature": name}) for name in (first, rare))
    pages = {}  # page 5 and page 50: follow the "older" cursor (pages go by cursor)
    cursor = top_sig
    for n in range(2, 51):
        older = app.get(f"/api/signature?{cursor}").get_json().get("older")
        if not older:
            break
        cursor = urllib.parse.urlencode({"signature": first, "before": older})
        if n in (5, 50):
            pages[n] = cursor
    print(f"top signature: {first!r}; rare signature: {rare!r}; signature pages reached: {sorted(pages)}")
    paths = [("/", True), ("/topcrashers/", True), ("/topcrashers/?days=30", True),
             ("/topcrashers/?product=Firefox&days=7", True), ("/topcrashers/?product=Firefox&days=30", True),
             ("/topcrashers/?product=Firefox&version=120.0.1&os=Windows+NT", True),
             ("/topcrashers/?process_type=content&days=7", True),
             (f"/signature/?{top_sig}", True), (f"/signature/?{rare_sig}", True)]
    paths += [(f"/signature/?{cursor}", False) for cursor in pages.values()]
    paths += [(f"/report/index/{crash}", False), ("/api/topcrashers?days=7", True),
              (f"/api/signature?{top_sig}", True), (f"/api/report/{crash}", False), ("/api/queue", False)]
    return paths


def time_pages(store, paths, requests):
    """Print one line per page; return the number of targeted pages that miss a target."""
    app = create_app(store).test_client()
    server = make_web_server(store, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    print(f"{'page':<58} {'in-process p50/p95 ms':>21} {'cpu':>6} {'socket p50/p95 ms':>18}  target  backend calls")
    misses = 0
    try:
        for path, targeted in paths:
            before = collections.Counter(store.backend.calls)
            status = app.get(path).status_code
            calls = collections.Counter(store.backend.calls)
            calls.subtract(before)
            local = _timed(lambda: app.get(path), requests)
            remote = _timed(lambda: urllib.request.urlopen(base + path, timeout=60).read(), requests)
            ok = local[0] <= TARGET_MS and remote[0] <= SOCKET_TARGET_MS
            verdict = ("PASS" if ok else "MISS") if targeted else ""
            misses += verdict == "MISS"
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(calls.items()) if n)
            shown = path if len(path) <= 58 else path[:55] + "..."
            print(f"{shown:<58} {local[0]:>9} / {local[1]:<9} {local[2]:>6} {remote[0]:>7} / {remote[1]:<8}  {verdict:<6}  "
                  f"{sum(calls.values())} ({kinds}){'' if status == 200 else f' HTTP {status}'}", flush=True)
    finally:
        server.shutdown()
        server.server_close()
    return misses


FLAT_PATHS = ["/", "/topcrashers/", "/topcrashers/?days=30", "/topcrashers/?product=Firefox&days=7",
              "/topcrashers/?product=Firefox&days=30", "/api/topcrashers?days=7"]


def flatness(stores, labels, requests):
    """Time the top-crashers pages on two stores, alternating request by request (so that the
    shared machine's load falls on both alike); print each median and the ratio."""
    apps = [create_app(s).test_client() for s in stores]
    print(f"flatness: {labels[1]} vs {labels[0]}, median ms in process, backend calls per page")
    worst = 0.0
    for path in FLAT_PATHS:
        times, cpus, calls = [[], []], [[], []], []
        for i, app in enumerate(apps):
            before = collections.Counter(stores[i].backend.calls)
            app.get(path)  # warm-up
            after = collections.Counter(stores[i].backend.calls)
            after.subtract(before)
            calls.append(sum(after.values()))
        for _ in range(requests):
            for i, app in enumerate(apps):
                t0, c0 = time.perf_counter(), time.process_time()
                app.get(path)
                times[i].append((time.perf_counter() - t0) * 1000)
                cpus[i].append((time.process_time() - c0) * 1000)
        med = [statistics.median(t) for t in times]
        cpu = [statistics.median(t) for t in cpus]
        ratio = med[1] / med[0]
        worst = max(worst, ratio)
        print(f"  {path:<40} {labels[0]}: {med[0]:7.1f} ms (cpu {cpu[0]:.1f}, {calls[0]} calls)   {labels[1]}: "
              f"{med[1]:7.1f} ms (cpu {cpu[1]:.1f}, {calls[1]} calls)   ratio {labels[1]} / {labels[0]}: {ratio:.2f}x "
              f"(cpu {cpu[1] / cpu[0]:.2f}x)", flush=True)
    print(f"flatness ({labels[1]} / {labels[0]}, worst page): {worst:.2f}x "
          f"({'PASS' if worst <= 1.5 else 'MISS'} against 1.5x)")


def save_late_crashes(store, info, count, seed):
    """Save ``count`` crashes into the store's closed days (every day but today), spread evenly,
    as a backlog processed late would arrive: after those days' rollup, so their head and top
    rows are bounds widened by the slack, not exact.  New crash ids, the same signature names."""
    first_day = datetime.fromisoformat(info["first_day"]).replace(tzinfo=timezone.utc)
    today = datetime.now(timezone.utc).date()
    days = [d for d in range(info["days"]) if (first_day + timedelta(days=d)).date() < today]
    t0 = time.perf_counter()
    for d, n in bench_web_build.per_day(count, len(days)).items():
        crashes = bench_web_build.day_crashes(first_day, days[d], n, seed, info["signatures"], draw=1)
        store.save_raw_crashes([(raw, {}, cid) for raw, cid, _sig, _os in crashes])
        store.save_processed_crashes([bench_web_build.processed_of(*c) for c in crashes])
    store.settle()
    print(f"late crashes: {count:,} over {len(days)} closed days, saved and derived in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)


def _store_info(args, directory, url, signatures):
    if args.partial:
        info = bench_web_build.partial(directory)
        print(f"store (unfinished build of {info['of']:,}): {info['crashes']:,} crashes over {info['days_done']} "
              f"of {info['days']} days, {info['signatures']:,} names, saved in {info['build_seconds']} s "
              f"({info['build_rate']:,} crashes/s)")
        return info
    info = bench_web_build.build(directory, args.crashes, args.days, args.seed, signatures, args.writers, url,
                                 args.batch)
    print(f"store {url or directory}: {info['crashes']:,} crashes over {info['days']} days, "
          f"{info['signatures']:,} names, built in {info['build_seconds']} s by {info.get('writers', 1)} writers "
          f"({info['build_rate']:,} crashes/s)")
    return info


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="the store's directory (built once, then reused)")
    parser.add_argument("--url", help="build on and time this store instead of embedded://DIR")
    parser.add_argument("--crashes", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--signatures", type=int, default=DEFAULT_SIGNATURES, help="signature names drawn from")
    parser.add_argument("--writers", type=int, default=2, help="processes saving at once (the build)")
    parser.add_argument("--batch", type=int, default=bench_web_build.BATCH, help="crashes per save call")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--flatness", type=int, metavar="N",
                        help="also time the top-crashers pages against a store of the same crashes with N names")
    parser.add_argument("--flatness-url", help="the store of --flatness (default: embedded DIR-sigN)")
    parser.add_argument("--build-only", action="store_true", help="build, do not time")
    parser.add_argument("--no-pages", action="store_true", help="time only the --flatness comparison")
    parser.add_argument("--late", type=int, default=0, metavar="N",
                        help="before timing, save N late crashes into the closed days (after their rollup), "
                             "spread evenly, and let derivation catch up")
    parser.add_argument("--partial", action="store_true",
                        help="time the store in --dir as it stands, an unfinished build (stop the build first)")
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines between the figures
    info = _store_info(args, args.dir, args.url, args.signatures)
    if args.flatness:
        other_dir = f"{args.dir.rstrip('/')}-sig{args.flatness}"
        _store_info(args, other_dir, args.flatness_url, args.flatness)
    if args.build_only:
        return 0
    today = datetime.now(timezone.utc).date()
    last_day = datetime.fromisoformat(info["first_day"]).date() + timedelta(days=info["days"] - 1)
    if last_day != today:
        print(f"note: the store ends on {last_day}, the pages read the days up to today ({today})")
    with open_store(args.url or f"embedded://{args.dir}") as store:
        if args.late:
            save_late_crashes(store, info, args.late, args.seed)
        if not args.no_pages:
            paths = _paths(create_app(store).test_client(), args.seed, info["signatures"])
            misses = time_pages(store, paths, args.requests)
            print(f"targeted pages, median <= {TARGET_MS} ms in process and <= {SOCKET_TARGET_MS} ms over a socket: "
                  f"{'PASS' if not misses else f'{misses} MISS'}")
        if args.flatness:
            with open_store(args.flatness_url or f"embedded://{other_dir}") as other:
                flatness([other, store], [f"{args.flatness:,} names", f"{info['signatures']:,} names"], args.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
