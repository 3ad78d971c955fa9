"""Benchmark the OpenSearch engine on the embedded engine's bench documents and queries (issue 41).

    PYTHONPATH=. python tools/bench/bench_search_opensearch.py [--search-url opensearch://HOST:PORT]
        [--crashes 200000] [--days 30] [--signatures 40000] [--repeat 5] [--refresh true|wait_for] [--json]

Without ``--search-url`` it starts a node of its own (``servers.local_opensearch``, ``-Xmx512m``)
in a temporary directory and stops it at the end.  The documents, their generator and the queries
are ``bench_search.py``'s (imported), so the figures stand beside the embedded engine's.  Prints:

* the build rate (``index()`` calls of 5,000 documents), then the rate in the feed's shape
  (``index()`` calls of 200 documents, ``--refresh`` policy: ``true`` makes each call's documents
  searchable on return, ``wait_for`` waits for the next periodic refresh);
* each query's median and max over ``--repeat`` runs, in process (the client's round trip included);
* the index's bytes per document after a force merge to one segment (its steady state), and
  the node's resident memory (own node only).
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import BATCH, documents, queries  # noqa: E402
from servers.local_opensearch import LocalOpenSearch, OpenSearchUnavailable  # noqa: E402

from socorro_store.search.opensearch import OpenSearchEngine  # noqa: E402

FEED_BATCH = 200
FEED_CALLS = 50


def run(engine, args, node):
    result = {"crashes": args.crashes, "days": args.days, "signatures": args.signatures, "refresh": args.refresh}
    end = datetime.now(timezone.utc).replace(microsecond=0)
    started, batch = time.perf_counter(), []
    for doc in documents(args.crashes, args.days, args.signatures, args.seed, end):
        batch.append(doc)
        if len(batch) == BATCH:
            engine.index(batch)
            batch = []
    engine.index(batch)
    seconds = time.perf_counter() - started
    result["build_s"], result["docs_per_s"] = round(seconds, 1), round(args.crashes / seconds)
    # the feed's shape: batches of 200 more crashes, each call searchable on return with refresh=true
    feed_docs = list(documents(FEED_BATCH * FEED_CALLS, args.days, args.signatures, args.seed + 1, end))
    started = time.perf_counter()
    for i in range(FEED_CALLS):
        engine.index(feed_docs[i * FEED_BATCH:(i + 1) * FEED_BATCH])
    seconds = time.perf_counter() - started
    result["feed_batch_ms"] = round(seconds * 1000 / FEED_CALLS, 1)
    result["feed_docs_per_s"] = round(FEED_BATCH * FEED_CALLS / seconds)
    result["queries"] = {}
    for name, query in queries(end).items():
        times, answer = [], None
        for _ in range(args.repeat):
            began = time.perf_counter()
            answer = engine.search(query)
            times.append((time.perf_counter() - began) * 1000)
        result["queries"][name] = {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
                                   "total": answer["total"], "errors": answer["errors"]}
    engine._client.indices.forcemerge(index=engine.index_name, max_num_segments=1, request_timeout=600)
    stats = engine.stats()
    result["documents"] = stats["documents"]
    result["bytes_per_doc"] = round(stats["bytes"] / max(1, stats["documents"]), 1)
    result["rss_mb"] = round(node.rss_bytes() / 2**20) if node else None
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--search-url", help="an OpenSearch to use (default: start a node of its own)")
    parser.add_argument("--crashes", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--signatures", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--refresh", choices=("true", "wait_for"), default="true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    node = None
    if args.search_url:
        hosts = args.search_url.removeprefix("opensearch://").partition("?")[0].split(",")
    else:
        node = LocalOpenSearch(tempfile.mkdtemp(prefix="bench-opensearch-"), log=lambda m: print(m, file=sys.stderr))
        try:
            node.start()
        except OpenSearchUnavailable as exc:
            node.stop()
            print(f"bench_search_opensearch: {exc}", file=sys.stderr)
            return 1
        hosts = node.url.removeprefix("opensearch://").split(",")
    engine = OpenSearchEngine(hosts, index=f"bench-{uuid.uuid4().hex[:8]}", refresh=args.refresh, timeout=120)
    try:
        result = run(engine, args, node)
    finally:
        engine.drop_index()
        engine.close()
        if node:
            node.stop()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"built {args.crashes:,} documents in {result['build_s']} s: {result['docs_per_s']:,} documents/s")
    print(f"feed-shaped batches of {FEED_BATCH} (refresh={args.refresh}): {result['feed_batch_ms']} ms a batch, "
          f"{result['feed_docs_per_s']:,} documents/s")
    print(f"index: {result['documents']:,} documents, {result['bytes_per_doc']} bytes a document (one segment)"
          + (f"; node RSS {result['rss_mb']} MB" if result["rss_mb"] is not None else ""))
    for name, figures in result["queries"].items():
        print(f"{name:24} median {figures['median_ms']:8.1f} ms  max {figures['max_ms']:8.1f} ms  "
              f"total {figures['total']:,}" + (f"  ({'; '.join(figures['errors'])})" if figures["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
