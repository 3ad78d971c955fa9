#!/usr/bin/env python
"""How fast `socorro-store web` answers on a big store (issue 26: top crashers and signature pages
in <= 100 ms on a store of 1 M crashes).  It prints figures; it is not a test.

Build (once; reused when ``--dir`` holds a finished store of that size, resumed when it holds an
unfinished one): an embedded store of ``--crashes`` crashes spread over the ``--days`` days ending
today, newest day first, made by ``socorro_store.demo.synthetic_crashes`` (Zipf signatures over
3,000 names, kept across days; four products, versions, channels, process types; Windows, macOS
and Linux for the desktop products, Android for the mobile ones; metadata only: no dumps, no
Notes), generated in a child process beside the saves and saved with the batch calls
(``save_raw_crashes``, ``save_processed_crashes``; 2,000 crashes a call, counters coalesced for a
minute), so the counters and indexes are the ones live saves write.  It prints each day's
progress and the build rate.  On a shared 2-core machine 1 M crashes take about an hour.

Timing: every page through Flask's test client (``create_app``) and through a real Werkzeug
socket (``make_web_server`` + urllib), the median and p95 of ``--requests`` requests after one
warm-up, the backend calls of one request by kind (the backend's ``calls`` counters), and PASS or
MISS against 100 ms (both medians) for the top-crashers and signature pages.  ``--partial`` times
an unfinished build as it stands (the newest days it finished).

    python tools/bench_web.py --dir /tmp/bench-web-1m                 # 1,000,000 crashes
    python tools/bench_web.py --dir /tmp/bench-web-20k --crashes 20000  # quick mode: ~1-2 minutes
    python tools/bench_web.py --dir /tmp/bench-web-1m --partial       # time a build stopped with ^C
"""

import argparse
import collections
import json
import logging
import multiprocessing
import random
import signal
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

from socorro_store import open_store
from socorro_store.demo import signature_names, synthetic_crashes, weighted_choice
from socorro_store.web import create_app, make_web_server

TARGET_MS = 100
BATCH = 2000
# Fenix and Focus run on Android; the desktop products' crashes split over the three desktop OSes.
MOBILE = {"Fenix", "Focus"}
DESKTOP_OS = [("Windows NT", 0.75), ("Mac OS X", 0.15), ("Linux", 0.10)]
SIGNATURES = 3000
MARKER = "bench-web.json"
PROGRESS = "bench-web-progress.json"


def _generate_days(first_day, days, seed, out):
    """Child process: for each ``(day index, crashes)`` of ``days`` in order, put that day's
    crashes on ``out`` as ``[(raw, crash_id, signature, os)]``.

    Generating (``synthetic_crashes``) costs about a fifth of saving, so it runs beside the saves
    instead of before them.  The Notes annotation is dropped (metadata only: no page reads it, and
    it would double the bytes written)."""
    stable = signature_names(SIGNATURES, random.Random(seed))
    for d, count in days:
        rng = random.Random(seed * 1000 + d)
        day = first_day + timedelta(days=d)
        # synthetic_crashes draws its names from its own seed, a new list each day: map each
        # day's rank back to one list so that a signature keeps its rank (and trend) across days
        ranks = {name: rank for rank, name in enumerate(signature_names(SIGNATURES, random.Random(seed + d)))}
        crashes = []
        for raw, _dumps, cid, sig in synthetic_crashes(count, day, seed=seed + d, dump_kb=0, signatures=SIGNATURES):
            raw.pop("Notes", None)
            sig = stable[ranks[sig]] if sig else sig  # None (failed) and "" (empty) stay as drawn
            os_name = "Android" if raw["ProductName"] in MOBILE else weighted_choice(rng, DESKTOP_OS)
            crashes.append((raw, cid, sig, os_name))
        out.put((d, crashes))
    out.put(None)


def build(directory, crashes, days, seed):
    """Fill ``directory`` with ``crashes`` crashes over the ``days`` days ending today (once).

    Days are saved newest first, so that a store still building (or stopped: ``--partial``
    times it) holds the days the pages read most: today, the last 48 hours, the last 7 days.
    The marker file ``bench-web.json`` says the store is finished (and of what size); a build
    that was interrupted resumes at the first day not finished (``bench-web-progress.json``):
    the crashes of that day already saved are retries, which the store skips.
    """
    directory = Path(directory)
    marker, progress = directory / MARKER, directory / PROGRESS
    if marker.exists():
        info = json.loads(marker.read_text())
        if info.get("crashes") == crashes and info.get("days") == days:
            return info
        raise SystemExit(f"{directory} holds a store of {info['crashes']:,} crashes over {info['days']} days: "
                         "use another --dir")
    state = json.loads(progress.read_text()) if progress.exists() else None
    if state and (state["crashes"], state["days"], state["seed"]) != (crashes, days, seed):
        raise SystemExit(f"{directory} holds an unfinished build of another size: remove it or use another --dir")
    if state is None:
        today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        state = {"crashes": crashes, "days": days, "seed": seed, "done_days": 0, "seconds": 0.0,
                 "first_day": (today - timedelta(days=days - 1)).date().isoformat()}
        directory.mkdir(parents=True, exist_ok=True)
    first_day = datetime.fromisoformat(state["first_day"]).replace(tzinfo=timezone.utc)
    per_day = {d: crashes // days + (1 if d < crashes % days else 0) for d in range(days)}
    order = list(range(days - 1, -1, -1))  # newest day first
    queue = multiprocessing.get_context("fork").Queue(maxsize=2)  # at most two days waiting in memory
    generator = multiprocessing.get_context("fork").Process(
        target=_generate_days, args=(first_day, [(d, per_day[d]) for d in order[state["done_days"]:]], seed, queue), daemon=True)
    generator.start()
    done = sum(per_day[d] for d in order[:state["done_days"]])
    started, saved_here = time.perf_counter(), 0
    # SIGTERM/SIGINT stop the build between two batches, so that closing the store sends the
    # counter increments it holds (killed outright, it would lose them and a resumed build's
    # retries would not count them again)
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(True))
    # Counters coalesce in memory for a minute: a Zipf mix repeats the same few counter cells.
    with open_store(f"embedded://{directory}", counter_flush_ms=60_000) as store:
        store.create_tables()  # idempotent: a resumed build finds them
        for n, (d, day_crashes) in enumerate(iter(queue.get, None), state["done_days"] + 1):
            for i in range(0, len(day_crashes), BATCH):
                chunk = day_crashes[i:i + BATCH]
                store.save_raw_crashes([(raw, {}, cid) for raw, cid, _sig, _os in chunk])
                store.save_processed_crashes([  # as the demo's processors: None is a failed processing
                    {"uuid": cid, "signature": sig, "product": raw["ProductName"], "version": raw["Version"],
                     "os_name": os_name, "success": sig is not None, "completeddatetime": raw["submitted_timestamp"]}
                    for raw, cid, sig, os_name in chunk])
                done, saved_here = done + len(chunk), saved_here + len(chunk)
                if stop:
                    break
            if stop:
                generator.kill()
                raise SystemExit(f"stopped: {directory} resumes at {(first_day + timedelta(days=d)).date()}")
            store.flush_counters()
            elapsed = time.perf_counter() - started
            rate = saved_here / elapsed
            state.update(done_days=n, seconds=round(state["seconds"] + elapsed, 1))
            started, saved_here = time.perf_counter(), 0
            progress.write_text(json.dumps(state))
            left = (crashes - done) / rate if rate else 0
            print(f"  {(first_day + timedelta(days=d)).date()} ({n}/{days} days): {done:,} / {crashes:,} crashes saved ({rate:,.0f} crashes/s; "
                  f"about {left / 60:,.0f} min left)", file=sys.stderr, flush=True)
    generator.join()
    info = {"crashes": crashes, "days": days, "first_day": state["first_day"], "build_seconds": state["seconds"],
            "build_rate": round(crashes / max(state["seconds"], 1e-9), 1)}
    marker.write_text(json.dumps(info))
    progress.unlink()
    return info


def _partial(directory):
    """What an unfinished build in ``directory`` holds (its progress file), for ``--partial``."""
    state = json.loads((Path(directory) / PROGRESS).read_text())
    crashes, days, done_days = state["crashes"], state["days"], state["done_days"]
    per_day = [crashes // days + (1 if d < crashes % days else 0) for d in range(days)]
    saved = sum(per_day[days - done_days:])  # the newest days, complete
    return {"of": crashes, "crashes": saved, "days": days, "days_done": done_days, "first_day": state["first_day"],
            "build_seconds": state["seconds"], "build_rate": round(saved / max(state["seconds"], 1e-9), 1)}


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
    parser.add_argument("--partial", action="store_true",
                        help="time the store in --dir as it stands, an unfinished build (stop the build first)")
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines between the figures
    if args.partial:
        info = _partial(args.dir)
        print(f"store (unfinished build of {info['of']:,}): {info['crashes']:,} crashes over the newest "
              f"{info['days_done']} of {info['days']} days, saved in {info['build_seconds']} s "
              f"({info['build_rate']:,} crashes/s)")
    else:
        info = build(args.dir, args.crashes, args.days, args.seed)
        print(f"store: {info['crashes']:,} crashes over {info['days']} days, built in {info['build_seconds']} s "
              f"({info['build_rate']:,} crashes/s)")
    today = datetime.now(timezone.utc).date()
    last_day = datetime.fromisoformat(info["first_day"]).date() + timedelta(days=info["days"] - 1)
    if last_day != today:
        print(f"note: the store ends on {last_day}, the pages read the days up to today ({today})")
    with open_store(f"embedded://{args.dir}") as store:
        app = create_app(store).test_client()
        top = app.get("/api/topcrashers?days=7").get_json()["signatures"]
        # the generator's least likely name: a few dozen crashes in a 1 M store
        first, rare = top[0]["signature"], signature_names(SIGNATURES, random.Random(args.seed))[-1]
        crash = app.get("/api/signature?" + urllib.parse.urlencode({"signature": first})).get_json()["crashes"][0]["crash_id"]
        top_sig, rare_sig = (urllib.parse.urlencode({"signature": name}) for name in (first, rare))
        fifth = top_sig  # page 5: follow the "older" cursor four times (pages go by cursor)
        for _ in range(4):
            older = app.get(f"/api/signature?{fifth}").get_json().get("older")
            if older:
                fifth = urllib.parse.urlencode({"signature": first, "before": older})
        # (path, is it one the 100 ms target is about)
        paths = [("/", False), ("/topcrashers/", True), ("/topcrashers/?days=30", True),
                 ("/topcrashers/?product=Firefox&days=7", True),
                 ("/topcrashers/?product=Firefox&version=120.0.1&os=Windows+NT", True),
                 (f"/signature/?{top_sig}", True), (f"/signature/?{rare_sig}", True),
                 (f"/signature/?{fifth}", True), (f"/report/index/{crash}", False),
                 ("/api/topcrashers?days=7", True), (f"/api/signature?{top_sig}", True),
                 (f"/api/report/{crash}", False), ("/api/queue", False)]
        server = make_web_server(store, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        print(f"top signature: {first!r}; rare signature: {rare!r}")
        print(f"{'page':<58} {'in-process p50/p95 ms':>21} {'socket p50/p95 ms':>18}  target  backend calls")
        misses = 0
        for path, targeted in paths:
            before = collections.Counter(store.backend.calls)
            assert app.get(path).status_code == 200, path
            calls = collections.Counter(store.backend.calls)
            calls.subtract(before)
            local = _timed(lambda: app.get(path), args.requests)
            remote = _timed(lambda: urllib.request.urlopen(base + path, timeout=60).read(), args.requests)
            verdict = ("PASS" if max(local[0], remote[0]) <= TARGET_MS else "MISS") if targeted else ""
            misses += verdict == "MISS"
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(calls.items()) if n)
            shown = path if len(path) <= 58 else path[:55] + "..."
            print(f"{shown:<58} {local[0]:>9} / {local[1]:<9} {remote[0]:>7} / {remote[1]:<8}  {verdict:<6}  "
                  f"{sum(calls.values())} ({kinds})")
        server.shutdown()
        server.server_close()
    print(f"top crashers and signature pages, median in process and over a socket, <= {TARGET_MS} ms: "
          f"{'PASS' if not misses else f'{misses} MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
