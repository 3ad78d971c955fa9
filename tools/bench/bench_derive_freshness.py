"""How fresh the derived counters are: from a processed save's ack to the deriver counting it.

Production shape, as tools/bench/bench_search_feed.py: collector threads save crashes at a
paced rate (``--rate``, crashes/s; 0: as fast as they go), processor threads take them from the
queue and save them processed (the demo's Socorro-shaped processed crashes), and the store's
background deriver (``SOCORRO_DERIVE=background``, the default) derives the counters from the
crash rows.  Another process (a spawned observer, with its own store) is told each crash id and
the time its processed save returned, and every ``--poll-ms`` reads, in one backend call, the
counted facts (``crash_report_derived``, ``derived:counted``) of up to 1000 crashes it has not
seen counted yet; a crash's lag is the time from its ack to the first poll that finds its facts
with their processed part.  Each rate runs on fresh tables of a store created by this version,
so it is cut over to the deriver from its creation on.

    PYTHONPATH=. python tools/bench/bench_derive_freshness.py --rate 50 --seconds 30
    PYTHONPATH=. python tools/bench/bench_derive_freshness.py --rate 0 --seconds 30   # unpaced: the most the saves reach
    PYTHONPATH=. python tools/bench/bench_derive_freshness.py --rate 50,0 --local-hbase /tmp/h --thrift2
    PYTHONPATH=. python tools/bench/bench_derive_freshness.py --url hbase://localhost:9090

``--local-hbase DIR`` starts a private Apache HBase (tools/servers/local_hbase.py) and benches
through its Thrift1 server, or its Thrift2 server with ``--thrift2``; several rates
(``--rate 50,0``) run one after the other on one server.

Prints, per rate: the rate asked and reached, the lag's median, p90, p99 and max, the crashes
never seen counted, the records still waiting at the end, the deriver's passes and crash
derivations per pass, and the backend calls per processed crash of the whole run (the saving process's, by the
role of the thread that made them, until the observer has seen every crash counted or given up;
unpaced, collectors run ahead of processors, so those calls include raw saves never processed in
the run); ``--json`` for one JSON document.
"""

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_common import (
    RoleCalls,
    drain_acks,
    isolated,
    paced_lifecycle,
    percentile,
    start_local_hbase,
    with_pool_size,
)
from socorro_store import open_store
from socorro_store.demo import synthetic_crashes
from socorro_store.schema import derived_keys as D
from socorro_store.schema import keys as K

#: crash ids the observer reads in one call
POLL_IDS = 1000
#: how long the observer waits for the deriver to catch up once the saves stop
CATCH_UP_SECONDS = 60


class _Roles(RoleCalls):
    """The saving process's calls by role: the tool's threads and the store's deriver and feed
    (``counter-deriver``, ``search-feed``); ``other`` is the store's committers and helpers.

    A processor's poll that took nothing is charged to ``idle`` (:meth:`idle_since`): paced,
    the processors poll an empty queue every 10 ms, which says nothing of the store's cost.
    """

    ROLES = ("collector", "processor", "counter", "search")

    def __init__(self, backend):
        super().__init__(backend)
        self._mine = threading.local()
        counted = backend.count_call

        def count_call(kind, n=1):
            self._mine.calls = getattr(self._mine, "calls", 0) + n
            counted(kind, n)

        backend.count_call = count_call

    def mark(self):
        """This thread's calls so far."""
        return getattr(self._mine, "calls", 0)

    def idle_since(self, mark):
        """Charge this thread's calls since ``mark`` to ``idle`` instead of its role."""
        n = self.mark() - mark
        if n:
            role = threading.current_thread().name.split("-", 1)[0]
            with self._lock:
                self.by_role[role if role in self.ROLES else "other"] -= n
                self.by_role["idle"] += n


def _observer(url, acks, results, poll_s):
    """In its own process: poll the counted facts of acked crash ids until told to stop; send
    back lags."""
    seen_after, pending = {}, {}
    calls = 0
    with open_store(url, search_feed=False) as store:
        done, stop_at = False, None
        while not done or pending:
            if drain_acks(acks, pending, poll_s):
                done, stop_at = True, time.time() + CATCH_UP_SECONDS
            if done and time.time() > stop_at:
                break
            ids = list(pending)[:POLL_IDS]
            if not ids:
                continue
            rows = store.backend.get_rows(K.DERIVED, [D.counted_row(cid) for cid in ids], columns=[D.COL_COUNTED])
            calls += 1
            now = time.time()
            for cid in ids:
                facts = D.decode_facts(rows.get(D.counted_row(cid), {}).get(D.COL_COUNTED))
                if facts is not None and facts.get("proc") is not None:
                    seen_after[cid] = now - pending.pop(cid)
    results.put({"lags": list(seen_after.values()), "never_seen": len(pending), "polls": calls})


def run(url, rate, seconds, collectors, processors, poll_ms):
    day = datetime.now(timezone.utc)
    data = synthetic_crashes(int(max(rate, 200) * seconds * 1.2) + 100, day, seed=7, dump_kb=0, until=day)
    plans = {cid: (raw, sig) for raw, _dumps, cid, sig in data}
    ctx = multiprocessing.get_context("spawn")
    acks, results = ctx.Queue(), ctx.Queue()
    with open_store(url) as store:
        store.create_tables()
        deriver = store.live_counters.deriver()
        if deriver is None:
            raise RuntimeError(f"{url}: the store is not cut over to the deriver: nothing to measure")
        observer = ctx.Process(target=_observer, args=(url, acks, results, poll_ms / 1000))
        observer.start()
        store.backend.calls.clear()
        passes0, derived0 = deriver.passes, deriver.derived
        roles = _Roles(store.backend)
        run = paced_lifecycle(store, data, plans, rate, seconds, collectors, processors, acks, "bench-derive",
                              idle=(roles.mark, roles.idle_since))
        elapsed = run["elapsed"]
        acks.put(None)
        outcome = results.get()
        observer.join()
        # the observer stopped once it saw every crash (or gave up): the run's calls end here
        calls, by_role = dict(store.backend.calls), dict(roles.by_role)
        roles.detach()
        status = store.derivation_status()
        passes, derived = deriver.passes - passes0, deriver.derived - derived0
    lags = sorted(outcome["lags"])
    n = run["processed"]
    return {"rate_asked": rate, "seconds": seconds, "elapsed_s": round(elapsed, 1), "processed": n,
            "processed_per_s": round(n / seconds, 1), "saved_raw": run["saved_raw"],
            "saved_raw_per_s": round(run["saved_raw"] / seconds, 1), "seen": len(lags),
            "never_seen": outcome["never_seen"], "waiting_at_end": status["waiting"],
            "lag_at_end_s": status["lag_seconds"], "deriver_failures": status.get("failures"),
            "lag_s": {"p50": round(percentile(lags, 0.5), 3), "p90": round(percentile(lags, 0.9), 3),
                      "p99": round(percentile(lags, 0.99), 3), "max": round(lags[-1], 3) if lags else None},
            "poll_ms": poll_ms, "observer_polls": outcome["polls"],
            "deriver_passes": passes, "deriver_crash_derivations": derived,
            "derivations_per_pass": round(derived / passes, 1) if passes else None,
            "calls_per_crash": round(sum(calls.values()) / n, 2) if n else None,
            "calls_per_crash_not_idle": round((sum(calls.values()) - by_role.get("idle", 0)) / n, 2) if n else None,
            "calls_per_crash_by_role": {role: round(c / n, 2) for role, c in sorted(by_role.items())} if n else {},
            "calls_by_kind": dict(sorted(calls.items()))}


def _print(result):
    lag = result["lag_s"]
    print(f"rate asked {result['rate_asked']}/s: {result['saved_raw']} saved raw in {result['seconds']} s "
          f"({result['saved_raw_per_s']}/s), {result['processed']} saved processed ({result['processed_per_s']}/s; "
          f"the processors stopped {result['elapsed_s']} s after the start); seen counted {result['seen']}, never seen {result['never_seen']}, "
          f"records waiting at the end {result['waiting_at_end']} (lag {result['lag_at_end_s']} s)")
    print(f"ack -> processed facts counted: p50 {lag['p50']} s, p90 {lag['p90']} s, p99 {lag['p99']} s, "
          f"max {lag['max']} s (observer polls every {result['poll_ms']} ms, {result['observer_polls']} polls)")
    print(f"deriver passes {result['deriver_passes']}: {result['deriver_crash_derivations']} crash derivations, "
          f"{result['derivations_per_pass']} a pass (a crash's raw and processed saves may be derived apart, "
          f"and crashes saved raw but not yet processed count too); failures {result['deriver_failures']}")
    roles = ", ".join(f"{role} {v}" for role, v in result["calls_per_crash_by_role"].items())
    print(f"backend calls per processed crash {result['calls_per_crash']}, {result['calls_per_crash_not_idle']} "
          f"without the processors' empty polls ({roles}; other: the backend's overlap threads, for any role)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", default=None, help="store URL (default: a fresh embedded store in a temp dir); "
                                                   "each rate runs on fresh tables of it")
    target.add_argument("--local-hbase", metavar="DIR",
                        help="start a private Apache HBase + Thrift1 (tools/servers/local_hbase.py) under DIR and bench on it")
    parser.add_argument("--thrift2", action="store_true",
                        help="with --local-hbase: bench through the Thrift2 server it starts beside its Thrift1 server")
    parser.add_argument("--rate", default="50", help="crashes/s the collectors save (0: unpaced); several, "
                                                     "comma-separated, run one after the other")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--collectors", type=int, default=8)
    parser.add_argument("--processors", type=int, default=8)
    parser.add_argument("--poll-ms", type=int, default=50, help="how often the observer reads the counted facts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        rates = [float(r) for r in args.rate.split(",") if r.strip()]
    except ValueError:
        parser.error(f"--rate: not a number or comma-separated numbers: {args.rate!r}")
    if not rates or any(r < 0 for r in rates):
        parser.error(f"--rate: want rates >= 0: {args.rate!r}")
    if args.seconds <= 0 or args.poll_ms <= 0:
        parser.error("--seconds and --poll-ms must be > 0")
    if args.thrift2 and not args.local_hbase:
        parser.error("--thrift2 needs --local-hbase (or give --url hbase://H:P?api=thrift2)")
    results, hbase = [], None
    with tempfile.TemporaryDirectory(prefix="bench-derive-") as workdir:
        base = args.url
        try:
            if args.local_hbase:
                hbase, _servers = start_local_hbase(args.local_hbase, log=lambda msg: print(msg, file=sys.stderr),
                                                    thrift2=args.thrift2)
                base = hbase.thrift2_url if args.thrift2 else hbase.url
            where = (f"local Apache HBase {hbase.lib.parent.name} through "
                     f"{'Thrift2' if args.thrift2 else 'Thrift1'}" if hbase else base or "embedded (temp)")
            for n, rate in enumerate(rates):
                url = with_pool_size(isolated(base, workdir, f"fresh{n}"), args.collectors + args.processors + 4)
                result = run(url, rate, args.seconds, args.collectors, args.processors, args.poll_ms)
                results.append(result)
                if not args.json:
                    print(f"[{where}]")
                    _print(result)
        finally:
            if hbase is not None:
                hbase.stop()
    if args.json:
        print(json.dumps({"url": where, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    random.seed(7)
    sys.exit(main())
