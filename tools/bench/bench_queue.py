#!/usr/bin/env python
"""Production-shaped queue benchmark: collector threads save, processor threads take and process.

Collectors share one store and save crashes one at a time; each processor thread has its own store
(its own connections), iterates ``new_crashes()`` and saves each crash processed, so its calls
split exactly into take and process.  Prints backend calls per crash: submit, take, process and
overall, plus crashes processed twice (must be 0).  Usage::

    python -m socorro_store --url embedded:///tmp/q serve --port 9191 &
    python tools/bench/bench_queue.py --url hbase://127.0.0.1:9191 --crashes 2000
"""

import argparse
import collections
import tempfile
import threading
import time
from datetime import date, datetime, timezone

from socorro_store import open_store
from socorro_store.demo import synthetic_crashes


def run(url, crashes, collectors, processors, seed=11):
    data = synthetic_crashes(crashes, date(2016, 9, 18), seed=seed, dump_kb=0)
    planned = {cid: sig for _r, _d, cid, sig in data}
    with open_store(url) as admin:
        admin.create_tables()
    submit_store = open_store(url)
    done_saving = threading.Event()
    taken = collections.Counter()
    phases = collections.Counter()
    lock = threading.Lock()

    def collector(share):
        for raw, dumps, cid, _sig in share:
            submit_store.save_raw_crash(raw, dumps, cid)

    def processor(name):
        with open_store(url) as store:
            calls = store.backend.calls
            while True:
                idle = True
                mark = sum(calls.values())
                for cid in store.new_crashes(processor_id=name):
                    idle = False
                    now = sum(calls.values())
                    with lock:
                        phases["take"] += now - mark
                        taken[cid] += 1
                    store.save_processed({"uuid": cid, "signature": planned[cid], "success": True,
                                          "completeddatetime": datetime.now(timezone.utc).isoformat()})
                    mark = sum(calls.values())
                    with lock:
                        phases["process"] += mark - now
                with lock:
                    phases["take"] += sum(calls.values()) - mark  # the empty or last group's calls
                if idle:
                    if done_saving.is_set() and len(taken) >= crashes:
                        return
                    time.sleep(0.01)

    began = time.monotonic()
    threads = [threading.Thread(target=collector, args=(data[i::collectors],)) for i in range(collectors)]
    workers = [threading.Thread(target=processor, args=(f"p{i}",)) for i in range(processors)]
    for thread in threads + workers:
        thread.start()
    for thread in threads:
        thread.join()
    done_saving.set()
    for thread in workers:
        thread.join()
    seconds = time.monotonic() - began
    phases["submit"] = sum(submit_store.backend.calls.values())
    submit_store.close()
    return {
        "crashes": crashes, "collectors": collectors, "processors": processors, "seconds": round(seconds, 2),
        "processed_twice": sum(n - 1 for n in taken.values()),
        "calls_per_crash": {k: round(v / crashes, 2) for k, v in phases.items()},
        "calls_per_crash_overall": round(sum(phases.values()) / crashes, 2),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tools/bench/bench_queue.py")
    parser.add_argument("--url", default=None, help="default: a temporary embedded store")
    parser.add_argument("--crashes", type=int, default=2000)
    parser.add_argument("--collectors", type=int, default=8)
    parser.add_argument("--processors", type=int, default=8)
    args = parser.parse_args(argv)
    url = args.url or f"embedded://{tempfile.mkdtemp(prefix='bench-queue-')}/store"
    print(run(url, args.crashes, args.collectors, args.processors))


if __name__ == "__main__":
    main()
