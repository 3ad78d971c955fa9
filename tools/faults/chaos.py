#!/usr/bin/env python
"""Opt-in chaos soak: kill trials (writer, gateway), transient faults, load; prints a table.

    python tools/faults/chaos.py --writer-trials 10 --gateway-trials 10 --fault-trials 3 --load-crashes 20000
    python tools/faults/chaos.py --duration 600          # repeat the trials until 10 minutes have passed
    python tools/faults/chaos.py --fuzz 1000             # also the hypothesis API fuzz, 1000 examples/test

Every trial runs in a fresh directory under --dir (default: a temporary one).  "faults" counts
SIGKILLs for kill trials and injected proxy faults for fault trials.  Exit code 1 when any
trial lost an acknowledged crash or left a problem (see the "problems" column).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

# the checkout (its socorro_store, and the tests run with --fuzz) and tools/ (the harness's packages)
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")]

from faults import chaos_harness as chaos  # noqa: E402

PROBLEMS = ("lost_processed", "half_visible", "missing_after", "orphan_after", "drift_before", "queue_drift_before",
            "queue_drift_after", "raw_errors", "integrity")


def totals(kind, results, faults):
    row = {"kind": kind, "trials": len(results), "faults": faults,
           "acknowledged": sum(r["acknowledged"] for r in results), "lost": sum(r["lost"] for r in results),
           "duplicates": sum(r["duplicates"] for r in results),
           "drift_before": sum(r["drift_before"] for r in results),
           "drift_after": sum(r["drift_after"] for r in results),
           "problems": sum(r.get(k, 0) or 0 for r in results for k in PROBLEMS)}
    return row


def print_table(rows):
    head = ["kind", "trials", "faults", "acknowledged", "lost", "duplicates", "drift_before", "drift_after",
            "problems"]
    print("  ".join(f"{h:>12}" for h in head))
    for row in rows:
        print("  ".join(f"{row[h]:>12}" for h in head))


def run_trials(name, fn, trials, deadline, root, seed_base):
    results, n = [], 0
    while n < trials or (deadline and time.monotonic() < deadline):
        directory = os.path.join(root, f"{name}-{n}", "store")
        os.makedirs(os.path.dirname(directory))
        result = fn(directory, seed_base + n, random.Random(seed_base + n))
        results.append(result)
        print(f"  {name} trial {n}: acked {result['acknowledged']}, lost {result['lost']}, drift "
              f"{result['drift_before']}->{result['drift_after']}", flush=True)
        n += 1
        if deadline and time.monotonic() >= deadline and n >= trials:
            break
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writer-trials", type=int, default=10)
    parser.add_argument("--gateway-trials", type=int, default=10)
    parser.add_argument("--fault-trials", type=int, default=3)
    parser.add_argument("--fault-crashes", type=int, default=150, help="crashes per fault trial")
    parser.add_argument("--load-crashes", type=int, default=20_000, help="0 skips the load run")
    parser.add_argument("--collectors", type=int, default=4)
    parser.add_argument("--processors", type=int, default=4)
    parser.add_argument("--duration", type=float, default=0, help="seconds: repeat kill trials until then")
    parser.add_argument("--fuzz", type=int, default=0, help="examples per hypothesis API fuzz test (0 = skip)")
    parser.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="also print every trial's figures as JSON")
    args = parser.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="socorro-chaos-")
    deadline = time.monotonic() + args.duration if args.duration else None
    started = time.monotonic()
    rows, details = [], {}

    writer = run_trials("writer", lambda d, s, r: chaos.writer_kill_trial(d, s, rng=r, flush_ms=50 if s % 2 else None),
                        args.writer_trials, deadline, root, 1000)
    rows.append(totals("writer-kill", writer, len(writer)))
    gateway = run_trials("gateway", lambda d, s, r: chaos.gateway_kill_trial(d, s, rng=r),
                         args.gateway_trials, deadline, root, 2000)
    rows.append(totals("gateway-kill", gateway, len(gateway)))
    faults = run_trials("faults", lambda d, s, r: chaos.fault_trial(d, s, count=args.fault_crashes, rng=r),
                        args.fault_trials, None, root, 3000)
    rows.append(totals("proxy-faults", faults, sum(r["faults"] for r in faults)))
    details.update(writer=writer, gateway=gateway, faults=faults)
    load = None
    if args.load_crashes:
        directory = os.path.join(root, "load", "store")
        os.makedirs(os.path.dirname(directory))
        load = chaos.load_run(directory, args.load_crashes, args.collectors, args.processors)
        row = totals(f"load {args.collectors}+{args.processors}", [load], 0)
        row["problems"] += len(load["errors"]) + load["processed_twice"] + (load["processed_unique"] != args.load_crashes)
        rows.append(row)
        details["load"] = load
    print()
    print_table(rows)
    if load:
        print(f"\nload: {args.load_crashes} crashes, {args.collectors} collectors + {args.processors} processors "
              f"through one gateway: {load['crashes_per_s']:.0f} crashes/s saved, {load['processed_per_s']:.0f} "
              f"crashes/s end to end, save p50 {load['save_p50_ms']:.1f} ms / p99 {load['save_p99_ms']:.1f} ms, "
              f"processed once {load['processed_unique']}, twice {load['processed_twice']}, errors "
              f"{len(load['errors'])}, gateway peak RSS {load['gateway_peak_rss_mb']:.0f} MB")
    if args.fuzz:
        stats_path = os.path.join(root, "fuzz-stats.json")
        env = {**os.environ, "SOCORRO_FUZZ_EXAMPLES": str(args.fuzz), "SOCORRO_FUZZ_STATS": stats_path}
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
                                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                             "test_fuzz_api.py")], env=env, stdout=subprocess.DEVNULL)
        with open(stats_path) as handle:
            stats = json.load(handle)
        print(f"\nfuzz api ({args.fuzz} examples per test, pytest exit {code}): inputs tried "
              f"{stats.get('inputs_tried', 0)}, typed errors {stats.get('typed_errors', 0)}, round trips "
              f"{stats.get('round_trips', 0)}, partial writes {stats.get('partial_writes', 0)}")
        rows.append({"problems": stats.get("partial_writes", 0) + (code != 0)})
    print(f"\nelapsed {time.monotonic() - started:.0f} s; work directory {root}")
    if args.json:
        print(json.dumps(details, indent=1, default=str))
    bad = any(r.get("lost") or r.get("problems") or r.get("drift_after") for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
