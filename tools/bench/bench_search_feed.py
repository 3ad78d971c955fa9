"""How fresh the search index is: from a processed save's ack to the crash being found.

Production shape: collector threads save crashes at a paced rate (``--rate``, crashes/s; 0: as
fast as they go), processor threads take them from the queue and save them processed (the
demo's Socorro-shaped processed crashes), and the store's background feeder feeds the search
index.  Another process (a spawned observer, with its own store) is told each crash id and the
time its processed save returned, and searches for the crash ids every ``--poll-ms``; a crash's
lag is the time from its ack to the first search that finds it.

    PYTHONPATH=. python tools/bench/bench_search_feed.py --rate 50 --seconds 30
    PYTHONPATH=. python tools/bench/bench_search_feed.py --rate 0 --seconds 30   # the most it sustains

Prints the lag's median, p90, p99 and max, the records still waiting at the end, and the rate
reached; ``--json`` for one JSON document.
"""

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_common import drain_acks, paced_lifecycle, percentile  # noqa: E402

from socorro_store import open_store  # noqa: E402
from socorro_store.demo import synthetic_crashes  # noqa: E402


def _observer(url, search_url, acks, results, poll_s):
    """In its own process: search for acked crash ids until told to stop; send back lags."""
    found_at, pending = {}, {}
    with open_store(url, search_url=search_url, search_feed=False) as store:
        done = False
        while not done or pending:
            if drain_acks(acks, pending, poll_s):
                done, stop_at = True, time.time() + 60  # give the feed a minute to catch up
            if done and time.time() > stop_at:
                break
            ids = list(pending)[:1000]
            if not ids:
                continue
            response = store.super_search({"uuid": ids, "date": [">=2000-01-01", "<2100-01-01"], "_columns": ["uuid"],
                                           "_results_number": "1000", "_facets": ""})
            now = time.time()
            for hit in response["hits"]:
                acked = pending.pop(hit["uuid"], None)
                if acked is not None:
                    found_at[hit["uuid"]] = now - acked
    results.put({"lags": list(found_at.values()), "never_found": len(pending)})


def run(url, search_url, rate, seconds, collectors, processors, poll_ms):
    day = datetime.now(timezone.utc)
    data = synthetic_crashes(int(max(rate, 200) * seconds * 1.2) + 100, day, seed=7, dump_kb=0, until=day)
    plans = {cid: (raw, sig) for raw, _dumps, cid, sig in data}
    ctx = multiprocessing.get_context("spawn")
    acks, results = ctx.Queue(), ctx.Queue()
    with open_store(url, search_url=search_url) as store:
        store.create_tables()
        observer = ctx.Process(target=_observer, args=(url, search_url, acks, results, poll_ms / 1000))
        observer.start()
        run = paced_lifecycle(store, data, plans, rate, seconds, collectors, processors, acks, "bench-feed")
        elapsed = run["elapsed"]
        acks.put(None)
        outcome = results.get()
        observer.join()
        status = store.search_status()
        feed = store.search._feed
        passes = feed.passes if feed is not None else 0
    lags = sorted(outcome["lags"])
    n = run["processed"]
    return {"rate_asked": rate, "seconds": round(elapsed, 1), "processed": n,
            "processed_per_s": round(n / seconds, 1), "found": len(lags),
            "never_found": outcome["never_found"], "pending_at_end": status["pending"],
            "lag_s": {"p50": round(percentile(lags, 0.5), 3), "p90": round(percentile(lags, 0.9), 3),
                      "p99": round(percentile(lags, 0.99), 3), "max": round(lags[-1], 3) if lags else None},
            "poll_ms": poll_ms, "feed_passes": passes,
            "crashes_per_feed_pass": round(n / passes, 1) if passes else None}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=None, help="store URL (default: a fresh embedded store in a temp dir)")
    parser.add_argument("--search-url", default=None, help="search URL (default: the store's own)")
    parser.add_argument("--rate", type=float, default=50.0, help="crashes/s the collectors save (0: unpaced)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--collectors", type=int, default=8)
    parser.add_argument("--processors", type=int, default=8)
    parser.add_argument("--poll-ms", type=int, default=50, help="how often the observer searches")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"embedded://{tmp}/store"
        result = run(url, args.search_url, args.rate, args.seconds, args.collectors, args.processors, args.poll_ms)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        lag = result["lag_s"]
        print(f"rate asked {result['rate_asked']}/s: processed {result['processed']} in {result['seconds']} s "
              f"({result['processed_per_s']}/s); found {result['found']}, never found {result['never_found']}, "
              f"records waiting at the end {result['pending_at_end']}")
        print(f"ack -> found in search: p50 {lag['p50']} s, p90 {lag['p90']} s, p99 {lag['p99']} s, max {lag['max']} s "
              f"(observer polls every {result['poll_ms']} ms)")
        print(f"feed passes {result['feed_passes']} ({result['crashes_per_feed_pass']} crashes a pass, "
              "each pass 4 backend calls: scan the records, read the rows, read them again, delete the records)")


if __name__ == "__main__":
    random.seed(7)
    main()
