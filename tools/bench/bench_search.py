"""Benchmark the embedded search engine (issue 40's targets).

    PYTHONPATH=. python tools/bench/bench_search.py [--crashes 1000000] [--days 30] [--signatures 40000]
        [--dir DIR] [--repeat 5] [--seed 1] [--json]

Builds an embedded search index (``DIR/search.sqlite3``; a temporary directory by default) of
``--crashes`` synthetic Socorro-shaped documents over ``--days`` days ending now: Zipf-distributed
signatures, products with their versions, channels, platforms and their versions, build ids,
reasons, addresses, MOZ_CRASH reasons, app notes, a few emails, URLs and comments.  Prints the
build rate (documents/s), then each of the issue's queries ``--repeat`` times with its median:

* ``filters3_facets3``: the last 7 days, product, version and platform filters, signature,
  platform_version and build_id facets, 100 hits sorted by date descending (target <= 300 ms);
* ``signature_contains``: the last 7 days, ``signature=~`` a common word, the signature facet,
  100 hits (target <= 500 ms);
* ``week_default``: Super Search's landing query: the last 7 days, the signature facet, 100 hits
  by date descending;
* ``histogram``: the last 7 days, a daily date histogram with each day's products;
* ``cardinality``: the last 7 days, the number of distinct signatures;
* ``moz_crash_reason_match``: the last 30 days, a no-operator (token) match on moz_crash_reason;

and the index's bytes per document.  With ``--dir`` naming a directory that already holds an
index of at least ``--crashes`` documents, the build is skipped and the queries run on it.
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

from socorro_store.demo import CHANNELS, PROCESS_TYPES, PRODUCTS, Zipf, crash_id_for, signature_names, weighted_choice
from socorro_store.search.contract import Cardinality, Condition, FieldFilter, Histogram, Query, Terms
from socorro_store.search.embedded import EmbeddedSearch
from socorro_store.search.fields import DEFAULT_COLUMNS

BATCH = 5000
VERSIONS = {"Firefox": ["120.0", "120.0.1", "121.0", "121.0b9", "122.0b3", "123.0a1", "115.5.0esr"],
            "Fenix": ["120.1.0", "121.0", "122.0b2"], "Thunderbird": ["115.5.0", "115.5.1", "121.0b1"],
            "Focus": ["120.1.0", "121.0"]}
PLATFORMS = {"Windows NT": (0.75, ["10.0.22631", "10.0.19045", "6.1.7601 Service Pack 1"], ["amd64", "x86", "arm64"],
                            ["EXCEPTION_ACCESS_VIOLATION_READ", "EXCEPTION_ACCESS_VIOLATION_WRITE",
                             "EXCEPTION_BREAKPOINT", "EXCEPTION_STACK_OVERFLOW"]),
             "Mac OS X": (0.15, ["14.6.1 23G93", "13.6.9 22G830"], ["arm64", "amd64"],
                          ["EXC_BAD_ACCESS / KERN_INVALID_ADDRESS", "EXC_BAD_ACCESS / KERN_PROTECTION_FAILURE"]),
             "Linux": (0.10, ["0.0.0 Linux 6.5.0-41-generic", "0.0.0 Linux 6.9.7-200.fc40"], ["amd64"],
                       ["SIGSEGV / SEGV_MAPERR", "SIGSEGV / SEGV_ACCERR", "SIGABRT"]),
             "Android": (0.0, ["0.0.0 Linux 5.10.198", "0.0.0 Linux 5.4.233"], ["arm64", "arm"],
                         ["SIGSEGV / SEGV_MAPERR", "SIGABRT", "SIGBUS / BUS_ADRALN"])}
MOZ_CRASH_REASONS = ["MOZ_RELEASE_ASSERT(!mIsShutdown)", "MOZ_CRASH(Shutdown hanging at step XPCOMShutdown)",
                     "MOZ_DIAGNOSTIC_ASSERT(aElement) (Null element)", "MOZ_CRASH(IPC FatalError in the parent process!)",
                     "MOZ_RELEASE_ASSERT(mLength <= mCapacity) (Vector overflow)", "out of memory: 0x0000000000100000 bytes requested",
                     "MOZ_CRASH(ContentParent::KillHard)", "attempt to subtract with overflow"]
ADAPTERS = ["0x10de", "0x1002", "0x8086", "0x5143"]
COMMENTS = ["it crashed when I opened a tab", "Firefox closed while watching a video", "crash on startup again",
            "happened after the update", "Seite stürzt ab beim Scrollen"]


def documents(n, days, signatures, seed, end):
    """``n`` search documents in date order over ``days`` days before ``end``."""
    rng = random.Random(seed)
    names = signature_names(signatures, rng)
    zipf = Zipf(len(names), 1.0)
    span = days * 86400
    platforms = [(name, spec[0]) for name, spec in PLATFORMS.items() if spec[0]]
    for i in range(n):
        when = end - timedelta(seconds=span * (n - i) / n)
        product = weighted_choice(rng, PRODUCTS)
        platform = "Android" if product in ("Fenix", "Focus") else weighted_choice(rng, platforms)
        _weight, os_versions, archs, reasons = PLATFORMS[platform]
        build = when - timedelta(days=rng.randrange(3, 40), hours=rng.randrange(24))
        doc = {"uuid": crash_id_for(when, rng), "date": when.isoformat(),
               "signature": names[zipf.draw(rng)], "product": product,
               "version": rng.choice(VERSIONS[product]), "release_channel": weighted_choice(rng, CHANNELS),
               "platform": platform, "platform_version": rng.choice(os_versions),
               "process_type": weighted_choice(rng, PROCESS_TYPES),
               "build_id": int(build.strftime("%Y%m%d%H") + "0000"), "cpu_arch": rng.choice(archs),
               "reason": rng.choice(reasons), "address": f"0x{rng.choice([0, 8, 0x10, rng.randrange(16 ** 8)]):x}",
               "uptime": int(rng.expovariate(1 / 3600)), "install_age": int(rng.expovariate(1 / 864000)),
               "startup_crash": rng.random() < 0.08, "hang_type": rng.choice([0] * 18 + [1, -1]),
               "app_notes": f"AdapterVendorID: {rng.choice(ADAPTERS)}, AdapterDeviceID: 0x{rng.randrange(4096):04x}\n"
                            f"D3D11 Layers? D3D11 Layers{rng.choice('+-')} WebGL? WebGL{rng.choice('+-')} "}
        if rng.random() < 0.12:
            doc["moz_crash_reason"] = rng.choice(MOZ_CRASH_REASONS)
        if rng.random() < 0.01:
            doc["email"] = f"user{rng.randrange(50000)}@example.com"
        if rng.random() < 0.05:
            doc["url"] = f"https://site{rng.randrange(20000)}.example.org/page/{rng.randrange(1000)}"
        if rng.random() < 0.02:
            doc["user_comments"] = rng.choice(COMMENTS)
        yield doc


def build(engine, n, days, signatures, seed, end):
    started, batch = time.perf_counter(), []
    for doc in documents(n, days, signatures, seed, end):
        batch.append(doc)
        if len(batch) == BATCH:
            engine.index(batch)
            batch = []
    engine.index(batch)
    return time.perf_counter() - started


def queries(end):
    week = end - timedelta(days=7)
    date = FieldFilter("date", (Condition("date", ">=", week), Condition("date", "<", end)))
    base = dict(start=week, end=end, columns=DEFAULT_COLUMNS, sort=(("date", True),))
    month = end - timedelta(days=30)
    return {
        "filters3_facets3": Query(filters=(date, FieldFilter("product", (Condition("product", "match", "Firefox"),)),
                                           FieldFilter("version", (Condition("version", "match", "121.0"),)),
                                           FieldFilter("platform", (Condition("platform", "match", "Windows NT"),))),
                                  facets=(Terms("signature"), Terms("platform_version"), Terms("build_id")), **base),
        "signature_contains": Query(filters=(date, FieldFilter("signature", (Condition("signature", "~", "Shutdown"),))),
                                    facets=(Terms("signature"),), **base),
        "week_default": Query(filters=(date,), facets=(Terms("signature"),), **base),
        "histogram": Query(filters=(date,), results_number=0, facets=(Histogram("date", 86400, (Terms("product"),)),),
                           **base),
        "cardinality": Query(filters=(date,), results_number=0, facets=(Cardinality("signature"),), **base),
        "moz_crash_reason_match": Query(
            filters=(FieldFilter("date", (Condition("date", ">=", month), Condition("date", "<", end))),
                     FieldFilter("moz_crash_reason", (Condition("moz_crash_reason", "match", "shutdown"),))),
            **dict(base, start=month)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crashes", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--signatures", type=int, default=40_000)
    parser.add_argument("--dir", help="where the index is (kept); reused when it holds enough documents")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    directory = args.dir or tempfile.mkdtemp(prefix="bench-search-")
    path = os.path.join(directory, "search.sqlite3")
    end_file = os.path.join(directory, "bench-end.txt")
    result = {"crashes": args.crashes, "days": args.days, "signatures": args.signatures, "path": path}
    with EmbeddedSearch(path) as engine:
        if engine.count() >= args.crashes and os.path.exists(end_file):
            with open(end_file) as f:
                end = datetime.fromisoformat(f.read().strip())
            result["build_s"] = None
        else:
            end = datetime.now(timezone.utc).replace(microsecond=0)
            seconds = build(engine, args.crashes, args.days, args.signatures, args.seed, end)
            with open(end_file, "w") as f:
                f.write(end.isoformat())
            result["build_s"] = round(seconds, 1)
            result["docs_per_s"] = round(args.crashes / seconds)
        stats = engine.stats()
        result["documents"] = stats["documents"]
        result["bytes_per_doc"] = round(stats["bytes"] / max(1, stats["documents"]), 1)
        result["queries"] = {}
        for name, query in queries(end).items():
            times, answer = [], None
            for _ in range(args.repeat):
                started = time.perf_counter()
                answer = engine.search(query)
                times.append((time.perf_counter() - started) * 1000)
            result["queries"][name] = {"median_ms": round(statistics.median(times), 1),
                                       "max_ms": round(max(times), 1), "total": answer["total"]}
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return
    if result["build_s"] is not None:
        print(f"built {args.crashes:,} documents in {result['build_s']} s: {result['docs_per_s']:,} documents/s")
    print(f"index: {result['documents']:,} documents, {result['bytes_per_doc']} bytes a document ({path})")
    for name, figures in result["queries"].items():
        print(f"{name:24} median {figures['median_ms']:8.1f} ms  max {figures['max_ms']:8.1f} ms  "
              f"total {figures['total']:,}")


if __name__ == "__main__":
    main()
