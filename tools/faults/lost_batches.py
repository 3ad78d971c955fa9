#!/usr/bin/env python
"""Lose some of the deriver's batches on a cut-over store, then let ``rollup`` set them right.

    PYTHONPATH=. python tools/faults/lost_batches.py --url URL --day 2026-11-10 --crashes 100

Picks ``--crashes`` crashes submitted on ``--day`` (every crash-id salt), keeps the value of every
counter cell they count in (metrics, signature and ranking cells at every level), then moves each
of those cells that holds a value (not detail ``expire`` deleted) as if the crashes' batch had
been lost (-1 each) or, with ``--twice``, applied twice (+1), the unique counts of any interval a signature leaves or enters with them.  Then it
runs ``rollup`` over the day (``--until`` the day after, 01:00) and compares every kept cell with
its value now.  Prints one JSON line: the roll-up's report figures, its time, and the cells still
wrong (``cells_wrong``; 0 is the pass), a month's or year's measured against the sum of its finer
cells when the store held it wrong already (``coarse_wrong_already``).  The store's counters are wrong until the roll-up ends:
run it on a store made for measuring, not one that serves.
"""

import argparse
import json
import os
import sys
import time
from datetime import date, timedelta

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from socorro_store import open_store  # noqa: E402
from socorro_store.backends import RowMutation  # noqa: E402
from socorro_store.crashstore import counter_deriver  # noqa: E402
from socorro_store.crashstore import cell_repair  # noqa: E402
from socorro_store.crashstore.cell_repair import read_cells  # noqa: E402
from socorro_store.crashstore.contributions import increments_of  # noqa: E402
from socorro_store.jobs import rollup  # noqa: E402
from socorro_store.schema import derived_keys as D  # noqa: E402
from socorro_store.schema import dimension_keys as DK  # noqa: E402
from socorro_store.schema import keys as K  # noqa: E402
from socorro_store.schema.specs import SALTS  # noqa: E402


def counted_crashes(backend, day, n):
    """Up to ``n`` ``(crash id, counted facts)`` of crashes submitted on ``day``, spread over salts."""
    out, per_salt = [], -(-n // len(SALTS))
    for salt in SALTS:
        rows = [row for row, _cells in backend.scan(K.CRASH_REPORTS, prefix=K.crash_day_prefix(salt, day),
                                                   columns=[K.COL_OOID], limit=per_salt)]
        ids = [K.crash_id_from_row_key(row) for row in rows]
        found = backend.get_rows(K.DERIVED, [D.counted_row(cid) for cid in ids], columns=[D.COL_COUNTED])
        for cid in ids:
            facts = D.decode_facts(found.get(D.counted_row(cid), {}).get(D.COL_COUNTED))
            if facts is not None and facts["t"][:10] == day.isoformat():
                out.append((cid, facts))
    return out[:n]


def lose(backend, crashes, amount):
    """Move every cell of ``crashes`` by ``amount`` each, the unique counts with them."""
    change = {}
    for _cid, facts in crashes:
        for inc in increments_of(facts):
            key = (inc.table, inc.row, inc.column)
            change[key] = change.get(key, 0) + amount
    before = read_cells(backend, change)
    # a cell with no value is one ``expire`` deleted (these crashes count in it): a batch lost
    # today leaves past detail alone
    change = {key: delta for key, delta in change.items() if before[key]}
    unique = {}
    for (table, row, column), delta in change.items():
        interval = DK.plain_signature_interval(column) if table == K.SIGNATURES else None
        if interval is not None:
            moved = (before[(table, row, column)] + delta > 0) - (before[(table, row, column)] > 0)
            if moved:
                key = (K.METRICS, interval, counter_deriver.UNIQUE_COLUMN)
                unique[key] = unique.get(key, 0) + moved
    now = read_cells(backend, unique)
    values = {key: before[key] + delta for key, delta in change.items()}
    values.update({key: now[key] + delta for key, delta in unique.items()})
    by_table = {}
    for (table, row, column), value in values.items():
        mutation = by_table.setdefault(table, {}).setdefault(row, RowMutation(row))
        if value:
            mutation.puts[column] = K.encode_counter(value)
        else:
            mutation.deletes.append(column)
    for table, rows in by_table.items():
        backend.mutate_rows(table, list(rows.values()))
    return list(change) + list(unique)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--day", required=True, type=date.fromisoformat)
    parser.add_argument("--crashes", type=int, default=100)
    parser.add_argument("--twice", action="store_true", help="apply the batches twice instead of losing them")
    args = parser.parse_args()
    with open_store(args.url, search_url="none") as store:
        backend = store.backend
        crashes = counted_crashes(backend, args.day, args.crashes)
        keys = set()
        for _cid, facts in crashes:
            keys |= {(inc.table, inc.row, inc.column) for inc in increments_of(facts)}
        keys |= {(K.METRICS, row, counter_deriver.UNIQUE_COLUMN) for table, _row, column in list(keys)
                 if table == K.SIGNATURES for row in [DK.plain_signature_interval(column)] if row is not None}
        right = read_cells(backend, keys)
        # a month's (year's) value is the sum of its days' (months'): a store that already held
        # a wrong one (a lease defect's, say) is measured against that sum
        plans = {coarse: finer for key in keys for coarse, finer in cell_repair.coarser(key)}
        finer_values = read_cells(backend, {cell for finer in plans.values() for cell in finer})
        coarse_wrong_before = 0
        is_year = lambda item: b"yearly_" in item[0][2] or (item[0][0] == K.METRICS and len(item[0][1]) == 4)  # noqa: E731
        for coarse, finer in sorted(plans.items(), key=is_year):  # months first: a year sums its months as set
            total = sum(right.get(cell, finer_values[cell]) for cell in finer)
            if coarse in right and right[coarse] != total:
                right[coarse], coarse_wrong_before = total, coarse_wrong_before + 1
        moved = lose(backend, crashes, +1 if args.twice else -1)
        wrong_before = sum(1 for key, value in read_cells(backend, keys).items() if value != right[key])
        started = time.monotonic()
        report = rollup.run_rollup(backend, since=args.day.isoformat(),
                                   until=f"{args.day + timedelta(days=1)}T01:00:00Z", grace_s=0)
        seconds = time.monotonic() - started
        now = read_cells(backend, keys)
        wrong = sorted((key, right[key], now[key]) for key in keys if now[key] != right[key])
        print(json.dumps({"crashes": len(crashes), "coarse_wrong_already": coarse_wrong_before,
                          "cells_moved": len(moved), "cells_wrong_before": wrong_before,
                          "rollup_s": round(seconds, 1), "derived_differences": report.get("derived_differences", 0),
                          "derived_repaired": report.get("derived_repaired", 0), "cells_wrong": len(wrong),
                          "wrong_examples": [[k[0], k[1].decode("utf-8", "replace"), k[2].decode("utf-8", "replace"),
                                              r, n] for k, r, n in wrong[:10]]}))
        return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
