"""The build half of tools/bench/bench_web.py: fill a store with ``crashes`` synthetic crashes over
``days`` days ending today, in several writer processes at once.

Why several processes: a profile of the one-process build (py-spy, 30 k crashes, 40 k names)
shows it CPU-bound in Python in the saving process (engine puts and increments, counter
coalescing, pruning, dimension lookups), not in SQLite I/O, so a second core gives it nearly a
second build.  Each writer takes every ``writers``-th day, newest first (so a stopped build still
holds the newest days the pages read most), generates a day, saves it with the batch calls and
reports it done.  They share one store: on the embedded engine every write is one SQLite
``BEGIN IMMEDIATE`` transaction, so writers of other processes wait for each other per table
file and a counter increment (read + put in one transaction) stays exact; on HBase the server
does the same per row.  Counters are coalesced for a minute in each writer and flushed at the end
of each day.

The progress file (``bench-web-progress.json``) lists the days done; a resumed build saves the
others (the crashes of a day stopped half-way are retries, which the store skips).
"""

import json
import multiprocessing
import random
import signal
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from socorro_store import open_store
from socorro_store.demo import signature_names, synthetic_crashes, weighted_choice

BATCH = 2000
# Fenix and Focus run on Android; the desktop products' crashes split over the three desktop OSes.
MOBILE = {"Fenix", "Focus"}
DESKTOP_OS = [("Windows NT", 0.75), ("Mac OS X", 0.15), ("Linux", 0.10)]
MARKER = "bench-web.json"
PROGRESS = "bench-web-progress.json"
COUNTER_FLUSH_MS = 60_000  # a Zipf mix repeats the same few counter cells: coalesce them


def per_day(crashes, days):
    return {d: crashes // days + (1 if d < crashes % days else 0) for d in range(days)}


def day_crashes(first_day, d, count, seed, signatures, draw=0):
    """Day ``d``'s crashes as ``[(raw, crash_id, signature, os)]``, the same in every process
    (``draw``: another draw of the day's crashes, new ids, the same names: late crashes).

    ``synthetic_crashes`` draws its names from its own seed, a new list each day: each day's rank
    is mapped back to one list so that a signature keeps its rank (and trend) across days.  The
    Notes annotation is dropped (metadata only: no page reads it, and it would double the bytes
    written)."""
    stable = signature_names(signatures, random.Random(seed))
    rng = random.Random(seed * 1000 + d + draw * 7919)
    day = first_day + timedelta(days=d)
    drawn = seed + d + draw * 100_003
    ranks = {name: rank for rank, name in enumerate(signature_names(signatures, random.Random(drawn)))}
    out = []
    for raw, _dumps, cid, sig in synthetic_crashes(count, day, seed=drawn, dump_kb=0, signatures=signatures):
        raw.pop("Notes", None)
        sig = stable[ranks[sig]] if sig else sig  # None (failed) and "" (empty) stay as drawn
        os_name = "Android" if raw["ProductName"] in MOBILE else weighted_choice(rng, DESKTOP_OS)
        out.append((raw, cid, sig, os_name))
    return out


def processed_of(raw, cid, sig, os_name):
    # as the demo's processors: None is a failed processing; process_type feeds the per-process
    # ranking rows and columns
    return {"uuid": cid, "signature": sig, "product": raw["ProductName"], "version": raw["Version"],
            "os_name": os_name, "process_type": raw.get("ProcessType", "default"),
            "release_channel": raw.get("ReleaseChannel"), "build": raw.get("BuildID"),
            "success": sig is not None, "completeddatetime": raw["submitted_timestamp"]}


def _writer(url, first_day, days, seed, signatures, batch, done_q, stop_event):
    """Child process: generate and save each ``(day index, count)`` of ``days``; put
    ``(day index, crashes, seconds)`` on ``done_q`` after each day, ``None`` at the end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us between batches
    try:
        with open_store(url, counter_flush_ms=COUNTER_FLUSH_MS) as store:
            for d, count in days:
                t0 = time.perf_counter()
                crashes = day_crashes(first_day, d, count, seed, signatures)
                for i in range(0, len(crashes), batch):
                    chunk = crashes[i:i + batch]
                    store.save_raw_crashes([(raw, {}, cid) for raw, cid, _sig, _os in chunk])
                    store.save_processed_crashes([processed_of(*c) for c in chunk])
                    if stop_event.is_set():
                        return  # closing the store sends the counters it holds
                store.flush_counters()
                # the buffer's background flusher drops a failed flush silently (``lost``, no log):
                # say it, so that a build needing ``rollup`` to repair its counters is seen to
                buffer = getattr(store.live_counters, "buffer", None)
                done_q.put((d, count, time.perf_counter() - t0, getattr(buffer, "lost", 0)))
    finally:
        done_q.put(None)


def build(directory, crashes, days, seed, signatures, writers=2, url=None, batch=BATCH):
    """Fill the store (``url``, else ``embedded://directory``) once; ``directory`` keeps the
    marker and progress files.  Returns the marker's dict (size, build seconds and rate)."""
    directory = Path(directory)
    url = url or f"embedded://{directory}"
    marker, progress = directory / MARKER, directory / PROGRESS
    size = {"crashes": crashes, "days": days, "seed": seed, "signatures": signatures}
    if marker.exists():
        info = json.loads(marker.read_text())
        if all(info.get(k, v) == v for k, v in size.items()):
            return info
        raise SystemExit(f"{directory} holds a store of {info['crashes']:,} crashes over {info['days']} days "
                         f"({info.get('signatures', 3000):,} names): use another --dir")
    state = json.loads(progress.read_text()) if progress.exists() else None
    if state and any(state.get(k) != v for k, v in size.items()):
        raise SystemExit(f"{directory} holds an unfinished build of another size: remove it or use another --dir")
    if state is None:
        today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        state = dict(size, done=[], seconds=0.0, writers=writers, url=url,
                     first_day=(today - timedelta(days=days - 1)).date().isoformat())
        directory.mkdir(parents=True, exist_ok=True)
    first_day = datetime.fromisoformat(state["first_day"]).replace(tzinfo=timezone.utc)
    counts = per_day(crashes, days)
    todo = [d for d in range(days - 1, -1, -1) if d not in state["done"]]  # newest day first
    with open_store(url) as store:
        store.create_tables()  # idempotent: a resumed build finds them
    ctx = multiprocessing.get_context("fork")
    done_q, stop_event = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_writer, args=(url, first_day, [(d, counts[d]) for d in todo[w::writers]],
                                                seed, signatures, batch, done_q, stop_event))
             for w in range(min(writers, len(todo)))]
    for p in procs:
        p.start()
    stopping = []

    def stop(*_):
        stopping.append(True)
        stop_event.set()
    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    started = time.perf_counter()
    base_seconds, saved_here = state["seconds"], 0
    done_count = sum(counts[d] for d in state["done"])
    running = len(procs)
    try:
        while running:
            item = done_q.get()
            if item is None:
                running -= 1
                continue
            d, n, _secs, lost = item
            state["done"].append(d)
            done_count, saved_here = done_count + n, saved_here + n
            elapsed = time.perf_counter() - started
            state["seconds"] = round(base_seconds + elapsed, 1)
            progress.write_text(json.dumps(state))
            rate = saved_here / elapsed
            left = (crashes - done_count) / rate if rate else 0
            print(f"  {(first_day + timedelta(days=d)).date()} ({len(state['done'])}/{days} days, {len(procs)} writers): "
                  f"{done_count:,} / {crashes:,} crashes saved ({rate:,.0f} crashes/s; about {left / 60:,.0f} min left)"
                  + (f"; {lost:,} counter cells lost so far by this writer: run rollup --since {state['first_day']}"
                     if lost else ""), file=sys.stderr, flush=True)
    finally:
        for p in procs:
            p.join()
        for s, h in old.items():
            signal.signal(s, h)
    if stopping or len(state["done"]) < days:
        raise SystemExit(f"stopped after {len(state['done'])} of {days} days: the same command resumes")
    info = dict(size, first_day=state["first_day"], build_seconds=state["seconds"], writers=writers,
                build_rate=round(crashes / max(state["seconds"], 1e-9), 1))
    marker.write_text(json.dumps(info))
    progress.unlink()
    return info


def partial(directory):
    """What an unfinished build in ``directory`` holds (its progress file), for ``--partial``; a
    finished build's own record when it is finished (``--partial --flatness``: one store may be)."""
    if not (Path(directory) / PROGRESS).exists() and (Path(directory) / MARKER).exists():
        info = json.loads((Path(directory) / MARKER).read_text())
        return {**info, "of": info["crashes"], "days_done": info["days"]}
    state = json.loads((Path(directory) / PROGRESS).read_text())
    counts = per_day(state["crashes"], state["days"])
    saved = sum(counts[d] for d in state["done"])
    return {"of": state["crashes"], "crashes": saved, "days": state["days"], "days_done": len(state["done"]),
            "first_day": state["first_day"], "signatures": state["signatures"], "build_seconds": state["seconds"],
            "build_rate": round(saved / max(state["seconds"], 1e-9), 1)}
