"""The demo: a collector, several processors and the readers, on one store.

:func:`synthetic_crashes` makes crashes that look like production (``reference/crash-data.md``):
Socorro crash ids, ProductName/Version/BuildID/ReleaseChannel/ProcessType, hang pairs sharing a
HangID, a mix of legacy throttle results, dumps of realistic (compressible) size, and signatures
drawn from a Zipf distribution (s = 1) over a few thousand names, submitted over one UTC day with
a daily cycle.  :func:`run_demo` saves them in batches from a collector thread while processor
threads drain the queue, then reads back what the store says: crashes stored, queue sizes, top
signatures, hourly counts and crashes/s.
"""

import bisect
import itertools
import math
import random
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

from .crashstore.store import open_store
from .schema import keys as K

PRODUCTS = [("Firefox", 0.70), ("Fenix", 0.15), ("Thunderbird", 0.08), ("Focus", 0.07)]
CHANNELS = [("release", 0.75), ("beta", 0.12), ("nightly", 0.06), ("esr", 0.05), ("aurora", 0.02)]
PROCESS_TYPES = [("default", 0.45), ("content", 0.35), ("gpu", 0.08), ("rdd", 0.04),
                 ("socket", 0.03), ("utility", 0.03), ("gmplugin", 0.02)]
THROTTLE = [(0, 0.6), (1, 0.3), (2, 0.1)]
_FRAMES = ["mozilla::dom::", "js::gc::", "nsThread::", "mozilla::layers::", "libxul.so@0x",
           "RtlpWaitOnCriticalSection", "OOM | small", "IPCError-browser | ShutDownKill",
           "mozilla::ipc::MessageChannel::", "core::panicking::panic"]


def weighted_choice(rng, table):
    """A value of ``table`` (``[(value, weight)]``, weights summing to 1) drawn with ``rng``."""
    x, acc = rng.random(), 0.0
    for value, weight in table:
        acc += weight
        if x < acc:
            return value
    return table[-1][0]


def signature_names(count, rng):
    """``count`` plausible signatures; some are prefixes of others on purpose."""
    names = []
    for i in range(count):
        base = rng.choice(_FRAMES)
        name = f"{base}Func{i}" if not base.endswith("0x") else f"{base}{rng.randrange(16**6):06x}"
        if i % 97 == 1 and names:
            name = names[-1] + " | " + name  # a signature extending another one
        names.append(name)
    return names


class Zipf:
    """Draw ranks 0..n-1 with probability proportional to 1/(rank+1)**s."""

    def __init__(self, n, s=1.0):
        weights = [1.0 / (k + 1) ** s for k in range(n)]
        self.cumulative = list(itertools.accumulate(weights))

    def draw(self, rng):
        return bisect.bisect_left(self.cumulative, rng.random() * self.cumulative[-1])


def crash_id_for(day, rng):
    """A Socorro crash id (random UUID, depth 2, the day's YYMMDD)."""
    text = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return text[:-7] + "2" + day.strftime("%y%m%d")


def _daily_cycle_second(rng):
    """A second of the day, denser when Europe and the Americas are awake."""
    while True:
        second = rng.randrange(86400)
        hour = second / 3600.0
        load = 0.55 + 0.45 * math.sin((hour - 9) / 24 * 2 * math.pi)
        if rng.random() < load:
            return second


def synthetic_crashes(n, day, seed=None, dump_kb=150, signatures=3000):
    """``n`` crashes as ``[(raw_crash, dumps, crash_id, planned signature)]`` in submit order.

    The planned signature is what a processor would compute (None: processing fails).
    """
    rng = random.Random(seed)
    names = signature_names(signatures, rng)
    zipf = Zipf(len(names))
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    seconds = sorted(_daily_cycle_second(rng) + rng.random() for _ in range(n))
    out, pending_hang = [], None
    for second in seconds:
        crash_id = crash_id_for(day, rng)
        submitted = start + timedelta(seconds=second)
        product = weighted_choice(rng, PRODUCTS)
        major = rng.randint(115, 125)
        build = submitted - timedelta(days=rng.randint(1, 40))
        raw = {
            "ProductName": product, "Version": f"{major}.0.{rng.randint(0, 3)}",
            "BuildID": build.strftime("%Y%m%d%H%M%S"), "ReleaseChannel": weighted_choice(rng, CHANNELS),
            "ProcessType": weighted_choice(rng, PROCESS_TYPES), "CPUArchitecture": rng.choice(["amd64", "arm64", "x86"]),
            "CrashTime": str(int(submitted.timestamp()) - rng.randint(0, 60)),
            "InstallTime": str(int(build.timestamp())), "AvailablePhysicalMemory": str(rng.randrange(2**30, 2**35)),
            "Notes": "".join(rng.choice("abcdefghij \n") for _ in range(rng.randint(200, 1500))),
            "submitted_timestamp": submitted.isoformat(), "uuid": crash_id,
            "legacy_processing": weighted_choice(rng, THROTTLE), "throttle_rate": 10,
        }
        if pending_hang is not None:  # second half of a hang pair: the child side
            raw["HangID"], raw["ProcessType"] = pending_hang, rng.choice(["plugin", "content"])
            pending_hang = None
        elif rng.random() < 0.03:
            pending_hang = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            raw["HangID"], raw["ProcessType"] = pending_hang, "default"
        size = max(1024, int(rng.lognormvariate(math.log(dump_kb * 1024) - 0.18, 0.6))) if dump_kb else 0
        dumps = {}
        if size:
            # Minidumps are mostly zero-filled regions plus some entropy: compressible, as real ones.
            noise = rng.randbytes(size // 8)
            dumps["upload_file_minidump"] = noise + bytes(size - len(noise))
        roll = rng.random()
        signature = None if roll < 0.01 else ("" if roll < 0.015 else names[zipf.draw(rng)])
        out.append((raw, dumps, crash_id, signature))
    return out


def run_demo(url=None, crashes=2000, processors=4, batch_size=100, seed=None, dump_kb=150,
             day=None, progress=None):
    """Run the collector and ``processors`` processor threads; return a report dict.

    ``progress(n)`` is called with the number of crashes processed since the last call.
    """
    day = day or (datetime.now(timezone.utc) - timedelta(days=1)).date()
    data = synthetic_crashes(crashes, day, seed, dump_kb)
    planned = {crash_id: signature for _raw, _dumps, crash_id, signature in data}
    with open_store(url) as store:
        store.create_tables()
        collected = threading.Event()
        errors = []
        processed_count = [0]
        lock = threading.Lock()

        def collector():
            try:
                for i in range(0, len(data), batch_size):
                    store.save_raw_crashes([(r, d, c) for r, d, c, _s in data[i:i + batch_size]])
            except BaseException as exc:  # surface in the main thread
                errors.append(exc)
            finally:
                collected.set()

        def processor(number):
            name = f"demo-processor-{number}"
            try:
                while True:
                    done = collected.is_set()
                    ids = list(store.new_crashes(limit=batch_size, processor_id=name))
                    if not ids:
                        if done:
                            return
                        time.sleep(0.01)
                        continue
                    results = []
                    for crash_id in ids:
                        raw = store.get_raw_crash(crash_id)
                        signature = planned.get(crash_id, "unknown")
                        results.append({"uuid": crash_id, "signature": signature,
                                        "success": signature is not None,
                                        "product": raw.get("ProductName"), "version": raw.get("Version"),
                                        "completeddatetime": datetime.now(timezone.utc).isoformat(),
                                        "email": "someone@example.com"})
                    store.save_processed_crashes(results)
                    with lock:
                        processed_count[0] += len(ids)
                    if progress:
                        progress(len(ids))
            except BaseException as exc:
                errors.append(exc)

        started = time.perf_counter()
        threads = [threading.Thread(target=collector)]
        threads += [threading.Thread(target=processor, args=(i,)) for i in range(processors)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        if errors:
            raise errors[0]
        return _report(store, day, crashes, processed_count[0], elapsed)


def _report(store, day, submitted, processed, elapsed):
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    stored = sum(1 for _ in store.crashes_submitted(start, start + timedelta(days=1)))
    daily = K.signature_counter_columns(start)["day"]
    counts = []
    for row, cells in store.backend.scan(K.SIGNATURES, columns=[daily], page_size=1000):
        if daily in cells:
            counts.append((K.decode_counter(cells[daily]), K.signature_from_row(row)))
    counts.sort(key=lambda item: (-item[0], item[1]))
    hourly = {}
    for hour in range(24):
        row = K.metrics_row(start + timedelta(hours=hour), "hour")
        hourly[row.decode()] = store.get_metrics(row).get("submitted_crash_reports", 0)
    day_metrics = store.get_metrics(K.metrics_row(start, "day"))
    return {
        "url": getattr(store.backend, "url", None),
        "day": day.isoformat(),
        "crashes_submitted": submitted,
        "crashes_processed": processed,
        "crashes_stored_for_day": stored,
        "queue_sizes": store.queue_sizes(),
        "queue_drained": store.queue_sizes()["standard"] == 0,
        "unique_signatures_for_day": day_metrics.get("unique_crash_signatures", 0),
        "processing_errors_for_day": day_metrics.get("crash_report_processing_errors", 0),
        "hang_pairs_for_day": day_metrics.get("submitted_crash_report_hang_pairs", 0),
        "top_signatures": [{"signature": s, "count": c} for c, s in counts[:10]],
        "hourly_counts": hourly,
        "elapsed_seconds": round(elapsed, 3),
        "crashes_per_second": round(processed / elapsed, 1) if elapsed else None,
        "backend_calls": dict(store.backend.calls),
    }
