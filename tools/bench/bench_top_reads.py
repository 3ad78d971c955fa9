#!/usr/bin/env python
"""Each read of the top-crashers page, timed alone: what bounds ``/topcrashers/`` (it prints
figures; it is not a test).

On a store ``tools/bench/bench_web.py`` built (or any store with daily rankings), for the period
of ``--days`` days up to today and its ``--top`` signatures, it times the reads the page makes
after its ranking, alternating them request by request, with the variants that say what each
one's shortcut is worth:

* the ranking (``reports.top_signatures``);
* the OS split as the page reads it (a period's last month as the month less the days after it,
  where that is fewer columns) and as it reads it up to the 15th of a month (a column a day);
* the process-type split in a process that read it before (its kept cells,
  ``crashstore/kept_ranking_cells.py``) and in a new process (nothing kept);
* first appearances, and the same looking back 2 years instead of 30 (what the yearly columns
  of years with no crash cost).

    PYTHONPATH=. python tools/bench/bench_top_reads.py --dir /tmp/bw-1m --days 30
    PYTHONPATH=. python tools/bench/bench_top_reads.py --url 'hbase://127.0.0.1:PORT?api=thrift2' --days 7

On a store of a server (``--url``: the one ``bench_web.py --url`` built) the reads' time is
mostly the server's.
"""

import argparse
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone

from socorro_store import open_store
from socorro_store.crashstore import kept_ranking_cells, reports, signature_reports
from socorro_store.schema import keys as K


def _a_column_a_day(level, moments):
    return [(K.signature_counter_column(level, K.metrics_row(m, level)), 1) for m in moments]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--dir", help="an embedded store's directory")
    target.add_argument("--url", help="any store's URL (e.g. hbase://127.0.0.1:PORT?api=thrift2)")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--top", type=int, default=50, help="signatures shown (the page's 50)")
    parser.add_argument("--requests", type=int, default=9)
    args = parser.parse_args(argv)
    with open_store(args.url or f"embedded://{args.dir}", search_url="none") as store:
        backend = store.backend
        now = datetime.now(timezone.utc)
        end = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        start = end - timedelta(days=args.days)
        names = [s["signature"] for s in reports.top_signatures(backend, start, end, args.top)["signatures"]]
        signed = reports._signed_columns

        def os_a_column_a_day():
            reports._signed_columns = _a_column_a_day
            try:
                return reports.os_splits(backend, names, start, end)
            finally:
                reports._signed_columns = signed

        def process_types_in_a_new_process():
            kept_ranking_cells.kept_rows.forget(backend)
            return reports.process_type_splits(backend, names, start, end)

        if os_a_column_a_day() != reports.os_splits(backend, names, start, end):
            print("the OS split differs between its two ways of reading", file=sys.stderr)
            return 1
        reads = {
            "the ranking": lambda: reports.top_signatures(backend, start, end, args.top),
            "OS split, as the page reads it": lambda: reports.os_splits(backend, names, start, end),
            "OS split, a column a day": os_a_column_a_day,
            "process-type split, kept cells": lambda: reports.process_type_splits(backend, names, start, end),
            "process-type split, a new process": process_types_in_a_new_process,
            "first appearances": lambda: signature_reports.first_appearances(backend, names, now),
            "first appearances, 2 years back": lambda: signature_reports.first_appearances(backend, names, now, years=2),
        }
        times = {name: [] for name in reads}
        for read in reads.values():  # warm-up
            read()
        for _ in range(args.requests):
            for name, read in reads.items():
                t0 = time.perf_counter()
                read()
                times[name].append((time.perf_counter() - t0) * 1000)
        print(f"{args.days} days to {end.date() - timedelta(days=1)}, {len(names)} signatures shown, "
              f"medians of {args.requests}:")
        for name, values in times.items():
            print(f"  {name:38} {statistics.median(values):7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
