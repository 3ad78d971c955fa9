"""Bulk-load processed crashes straight into the tables, for the batch-job benchmarks and tests.

Millions of crashes through the public API (save raw, take, save processed) take hours on a
shared machine; the batch jobs only read the crash rows and their pointers, so this writes those
directly with batched ``mutate_rows`` (no live counters, no dumps, no ``meta_data:json``): per
crash the crash row (``ids:ooid``, ``timestamps:submitted``, the ``flags`` the store writes,
``processed_data:signature``), its ``submitted_time`` pointer and its signature-index pointer,
laid out by :mod:`socorro_store.schema.keys` exactly as the store writes them.  Crashes are spread
evenly over each day; signatures are Zipf-distributed over one shared list; about 1 in 50 is a
processing failure (``##null##``).
"""

import random
from datetime import datetime, timedelta, timezone

from socorro_store.backends.base import RowMutation
from socorro_store.demo import Zipf, crash_id_for, signature_names
from socorro_store.schema import keys as K
from socorro_store.schema.crash_facts import COL_OS_NAME, COL_PRODUCT, COL_VERSION

START = datetime(2016, 9, 1, tzinfo=timezone.utc)
BATCH = 2000
PROCESS_TYPES = ("default",) * 8 + ("plugin", "content")


def crashes_of_day(day, per_day, rng, names, zipf, uniform=False):
    """Yield ``(crash_id, submitted, signature or None, process_type, legacy)`` in time order.

    ``uniform``: every crash alike (one signature, the default process type, no legacy flag), so
    the counters of a day have the same cells whatever the number of crashes.
    """
    step = 86400 / per_day
    for i in range(per_day):
        submitted = day + timedelta(seconds=i * step + rng.random() * step * 0.5)
        if uniform:
            yield crash_id_for(day.date(), rng), submitted, names[0], "default", None
            continue
        signature = None if rng.random() < 0.02 else names[zipf.draw(rng)]
        yield (crash_id_for(day.date(), rng), submitted, signature, rng.choice(PROCESS_TYPES),
               rng.choice((0, 1, 2, None)))


#: the products, versions and operating systems of the crashes (their dimensioned counters)
PRODUCTS = ("Firefox", "Fennec", "Thunderbird", "SeaMonkey")
VERSIONS = tuple(f"{major}.0{suffix}" for major in range(45, 53) for suffix in ("", "b1", "a2"))
OSES = ("Windows NT", "Mac OS X", "Linux")


def load_direct(backend, days, per_day, seed=1, start=START, signatures=3000, uniform=False):
    """Write ``days`` x ``per_day`` processed crashes from ``start``; return how many.

    Each crash has a product, version and OS (``flags``), as the store's saves record them, so
    the dimensioned counters have their real shape (unless ``uniform``)."""
    rng = random.Random(seed)
    names = signature_names(signatures, rng)
    zipf = Zipf(len(names))
    total = 0
    for d in range(days):
        day = start + timedelta(days=d)
        crash_rows, pointers, signature_pointers = [], [], []
        for crash_id, submitted, signature, process_type, legacy in crashes_of_day(day, per_day, rng, names, zipf, uniform):
            stamp = K.format_timestamp(submitted)
            name = K.signature_name(signature)
            cells = {K.COL_OOID: crash_id.encode(), K.COL_SUBMITTED: stamp, K.COL_PROCESSED: b"Y",
                     K.COL_PROCESS_TYPE: process_type.encode(), K.COL_SIGNATURE: name.encode(),
                     K.COL_PROCESSING_ERROR: b"1" if signature is None else b"0", K.COL_PROCESSED_AT: stamp}
            if legacy is not None:
                cells[K.COL_LEGACY] = str(legacy).encode()
            if not uniform:
                cells.update({COL_PRODUCT: rng.choice(PRODUCTS).encode(), COL_VERSION: rng.choice(VERSIONS).encode(),
                              COL_OS_NAME: rng.choice(OSES).encode()})
            ooid = {K.COL_OOID: crash_id.encode()}
            crash_rows.append(RowMutation(K.crash_row_key(crash_id), cells))
            pointers.append(RowMutation(K.time_index_key(crash_id, submitted), ooid))
            signature_pointers.append(RowMutation(K.signature_index_key(name, submitted, crash_id), ooid))
            if len(crash_rows) >= BATCH:
                _flush(backend, pointers, signature_pointers, crash_rows)
                total += len(crash_rows)
                crash_rows, pointers, signature_pointers = [], [], []
        if crash_rows:
            _flush(backend, pointers, signature_pointers, crash_rows)
            total += len(crash_rows)
    return total


def _flush(backend, pointers, signature_pointers, crash_rows):
    backend.mutate_rows(K.SUBMITTED_TIME, pointers)  # pointers first, as the store writes them
    backend.mutate_rows(K.SIGNATURE_OOID, signature_pointers)
    backend.mutate_rows(K.CRASH_REPORTS, crash_rows)
