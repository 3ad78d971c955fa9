"""Where the backend calls of production shape come from: each call attributed to the store
functions that made it.

Runs ``bench_crashes``' production shape (T collector threads saving one crash per call, T
processor threads iterating ``new_crashes()``) on a fresh store, then derives what is left, and
prints backend calls per crash by role (the thread: ``collector``, ``processor``, ``counter``
for the deriver, ``MainThread``), kind and the innermost store functions on the stack.  A call
a backend sends from one of its overlap threads is charged to the thread that handed it over
(``Backend.overlap`` and ``mutate_tables`` run on a ``ThreadPoolExecutor``), so the figures
say which step of a save, a take or a pass costs what.

    PYTHONPATH=. python tools/bench/call_sites.py --url 'hbase://127.0.0.1:9090?api=thrift2' --crashes 1000
    PYTHONPATH=. python tools/bench/call_sites.py --crashes 1000          # embedded, temp directory

A stack walk per call slows the run: the call counts are the figure, not its time.
"""

import argparse
import collections
import concurrent.futures
import sys
import tempfile
import threading
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_crashes import Timings, bench_data, mode_p, with_pool_size  # noqa: E402

from socorro_store import open_store  # noqa: E402

_origin = threading.local()


def _store_frames(depth):
    """The innermost ``depth`` frames of the store's own code on this thread's stack."""
    frames = [f for f in traceback.extract_stack()[:-2] if "socorro_store" in f.filename and "/backends/" not in f.filename]
    return "/".join(f"{Path(f.filename).stem}.{f.name}" for f in frames[-depth:])


def _charge_overlap_to_its_caller(depth):
    """Make every executor task carry the role and store frames of the thread that submitted it."""
    submit = concurrent.futures.ThreadPoolExecutor.submit

    def submitting(self, fn, *args, **kwargs):
        origin = getattr(_origin, "value", None) or (threading.current_thread().name.split("-")[0],
                                                      _store_frames(depth))

        def run(*a, **k):
            _origin.value = origin
            try:
                return fn(*a, **k)
            finally:
                _origin.value = None

        return submit(self, run, *args, **kwargs)

    concurrent.futures.ThreadPoolExecutor.submit = submitting
    return lambda: setattr(concurrent.futures.ThreadPoolExecutor, "submit", submit)


def call_sites(url, crashes, threads=8, depth=3, seed=1):
    """``(total calls, Counter {(role, kind, store frames): calls})`` of production shape."""
    counts, lock = collections.Counter(), threading.Lock()
    restore = _charge_overlap_to_its_caller(depth)
    try:
        with open_store(with_pool_size(url, 2 * threads + 2)) as store:
            store.create_tables()
            store.backend.calls.clear()
            original = store.backend.count_call

            def count_call(kind, n=1):
                origin = getattr(_origin, "value", None)
                role, where = origin or (threading.current_thread().name.split("-")[0], "")
                here = _store_frames(depth)
                where = f"{where} >> {here}" if where and here else (where or here)
                with lock:
                    counts[(role, kind, where)] += n
                original(kind, n)

            store.backend.count_call = count_call
            mode_p(store, bench_data(crashes, 0, seed), threads, Timings())
            store.flush_counters()
    finally:
        restore()
    return sum(counts.values()), counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="store URL (default: embedded in a temp dir)")
    parser.add_argument("--crashes", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--depth", type=int, default=3, help="store frames shown per call site")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        total, counts = call_sites(args.url or f"embedded://{tmp}/store", args.crashes, args.threads, args.depth)
    print(f"backend calls per crash: {total / args.crashes:.3f} ({total} calls, {args.crashes} crashes)")
    for (role, kind, where), n in counts.most_common(args.top):
        print(f"{n / args.crashes:7.3f}  {role:10s} {kind:15s} {where}")


if __name__ == "__main__":
    main()
