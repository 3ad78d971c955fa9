"""Chaos harness: crash workloads in child processes, kills, and the checks that follow them.

Shared by ``tests/test_durability.py`` / ``test_faults.py`` / ``test_load.py`` and
``tools/faults/chaos.py``.  This module holds the checks and the trials; it re-exports the rest:

* Workloads are deterministic (:mod:`faults.chaos_workload`): :func:`make_raw` builds crash ``i``
  of a seed (id, submitted time, legacy flag, process type, dumps of varying sizes),
  :func:`processed_doc` the processed crash of a raw crash.  So the parent can recount what a
  store must hold without trusting it.
* Child roles (:mod:`faults.chaos_children`, ``python tools/faults/chaos_harness.py ROLE …``):
  ``writer`` saves crashes (and processes some of them) and appends ``S <id> <latency µs>`` /
  ``P <id>`` to an acknowledgement file only after the call returned; ``processor`` takes crashes
  from the queue, reads them and saves them processed.  An error is logged as ``E <type>
  <message>`` (typed) or ``X <type> <message>`` (anything else: a bug) and ends the child.
* The gateway as a child process: :class:`servers.gateway.Gateway`.
* :func:`check_store` is what must hold after a kill: every acknowledged crash readable with its
  dumps, no crash row without its queue pointer, ``verify-indexes --repair`` leaves 0 MISSING and 0
  ORPHAN, ``rollup`` + ``reconcile-queue`` make every counter exact.
"""

import os
import random
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

if not __package__:  # run as a file (a child role): tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# the workloads, acknowledgement files, child roles and gateway are part of the harness's API
from faults.chaos_children import (  # noqa: E402, F401
    main, run_processor, run_steady_processor, run_steady_writer, run_writer, spawn, spawn_writer, wait_for_acks,
)
from faults.chaos_workload import (  # noqa: E402, F401
    DAY, PROCESS_TYPES, SIGNATURES, UNTIL, AckLog, count_retries, counter_drift, expected_counters, live_counters,
    longest_gap, make_raw, merge_acks, processed_doc, read_ack_times, read_acks,
)
from servers.gateway import Gateway, kill, proc_rss_kb  # noqa: E402, F401
from socorro_store.errors import SocorroStoreError  # noqa: E402
from socorro_store.schema import keys as K  # noqa: E402


# -- checks ----------------------------------------------------------------------------------

def check_store(url, workload, acks, reconcile=True):
    """Check a store after a failure; return a dict of figures (all problem counts must be 0).

    ``workload``: ``[(seed, start, count)]`` of every crash that may have been saved; ``acks``:
    the merged :func:`read_acks` of every child.  Figures: acknowledged, processed_acknowledged,
    lost, lost_processed, duplicates, half_visible (crash rows without their queue pointer before
    repair), missing_after / orphan_after (verify-indexes after ``--repair``), drift_before /
    drift_after (counter cells off before and after rollup), queue_drift_before / queue_drift_after
    (the standard queue's size off before and after ``reconcile-queue``).  On a cut-over store
    derivation catches up first: with no rollup and no reconcile, ``*_before`` are exact.
    """
    from socorro_store import open_store
    from socorro_store.crashstore import counter_deriver, counters, cut_over
    from socorro_store.jobs import rollup, scrutiny

    acked = [cid for cid, _ in acks["S"]]
    result = {"acknowledged": len(acked), "processed_acknowledged": len(acks["P"]),
              "duplicates": (len(acked) - len(set(acked))) + (len(acks["P"]) - len(set(acks["P"]))),
              "lost": 0, "lost_processed": 0}
    by_id = {}
    for seed, start, count in workload:
        for i in range(start, start + count):
            crash_id, raw, dumps = make_raw(seed, i)
            by_id[crash_id] = (raw, dumps)
    with open_store(url) as store:
        backend = store.backend
        if cut_over.enabled(backend):  # derived data: what the killed processes left is derived now
            counter_deriver.catch_up(backend, timeout=120)
        for crash_id in set(acked):
            raw, dumps = by_id[crash_id]
            try:
                ok = store.get_raw_crash(crash_id) == raw and store.get_raw_dumps(crash_id) == dumps
            except SocorroStoreError:
                ok = False
            result["lost"] += not ok
        for crash_id in set(acks["P"]):
            want = dict(processed_doc(by_id[crash_id][0]))
            try:
                ok = store.get_unredacted_processed(crash_id) == want
            except SocorroStoreError:
                ok = False
            result["lost_processed"] += not ok
        present = _present(backend, by_id)
        result["stored"] = len(present)
        listed = list(store.crashes_submitted(DAY, DAY + timedelta(days=1)))
        result["duplicates"] += len(listed) - len(set(listed))
        before = scrutiny.verify_indexes(backend)
        result["half_visible"] = before[K.UNPROCESSED_FLAG]["missing"] + before[K.SUBMITTED_TIME]["missing"]
        result["missing_before"] = sum(c["missing"] for c in before.values())
        expected = expected_counters(present)
        result["drift_before"] = counter_drift(expected, live_counters(backend))
        unprocessed = sum(1 for _raw, processed in present if not processed)
        result["queue_drift_before"] = abs(counters.queue_sizes(backend)["standard"] - unprocessed)
        if not reconcile:
            return result
        scrutiny.verify_indexes(backend, repair=True, orphan_age_s=0)
        after = scrutiny.verify_indexes(backend)
        result["missing_after"] = sum(c["missing"] for c in after.values())
        result["orphan_after"] = sum(c["orphan"] for c in after.values())
        rollup.run_rollup(backend, until=UNTIL)
        scrutiny.reconcile_queue(backend)
        result["drift_after"] = counter_drift(expected, live_counters(backend))
        result["queue_drift_after"] = abs(store.queue_sizes()["standard"] - unprocessed)
    return result


def _present(backend, by_id):
    """``[(raw, processed?)]`` of the workload crashes whose crash row exists."""
    rows = {K.crash_row_key(cid): cid for cid in by_id}
    keys = list(rows)
    present = []
    for i in range(0, len(keys), 500):
        found = backend.get_rows(K.CRASH_REPORTS, keys[i:i + 500], columns=[K.COL_SUBMITTED, K.COL_PROCESSED])
        for row, cells in found.items():
            if K.COL_SUBMITTED in cells:
                present.append((by_id[rows[row]][0], cells.get(K.COL_PROCESSED) == b"Y"))
    return present


def integrity_problems(directory):
    """SQLite integrity problems of an engine directory (after its users are gone)."""
    from socorro_store.engine import Engine

    engine = Engine(str(directory))
    try:
        return engine.integrity_check()
    finally:
        engine.close()


# -- trials ----------------------------------------------------------------------------------

def writer_kill_trial(directory, seed, count=400, rng=None, flush_ms=None):
    """Save crashes into ``embedded://directory`` in a child, SIGKILL it mid-ingest, reopen, check."""
    from socorro_store import open_store

    rng = rng or random.Random(seed)
    url = f"embedded://{directory}"
    with open_store(url) as store:
        store.create_tables()
    ack_path = os.path.join(str(directory), "..", f"acks-{seed}")
    proc = spawn_writer(url, seed, 0, count, ack_path, process_every=3, flush_ms=flush_ms)
    wait_for_acks(ack_path, rng.randrange(1, 20), proc)
    time.sleep(rng.uniform(0, 0.4))
    killed_running = proc.poll() is None
    kill(proc)
    acks = read_acks(ack_path)
    result = check_store(url, [(seed, 0, count)], acks)
    result.update(killed_mid_ingest=killed_running, raw_errors=len(acks["X"]), typed_errors=len(acks["E"]),
                  integrity=len(integrity_problems(directory)))
    return result


def gateway_kill_trial(directory, seed, count=400, writers=2, rng=None):
    """Ingest through a gateway with ``writers`` children, SIGKILL the gateway, restart it on the
    same directory, check through it; then stop it and check the SQLite files."""
    from socorro_store import open_store

    rng = rng or random.Random(seed)
    gateway = Gateway(directory)
    try:
        with open_store(gateway.url()) as store:
            store.create_tables()
        workload, procs, paths = [], [], []
        for w in range(writers):
            path = os.path.join(str(directory), "..", f"gw-acks-{seed}-{w}")
            workload.append((seed, w * count, count))
            procs.append(spawn_writer(gateway.url(timeout_ms=2000, retries=2), seed, w * count, count, path,
                                      process_every=3))
            paths.append(path)
        wait_for_acks(paths[0], rng.randrange(1, 20), procs[0])
        time.sleep(rng.uniform(0, 0.4))
        killed_running = gateway.proc.poll() is None and all(p.poll() is None for p in procs)
        gateway.kill()
        for proc in procs:
            try:
                proc.wait(30)  # each writer gets BackendUnavailable and stops
            except subprocess.TimeoutExpired:
                kill(proc)
        acks = merge_acks(paths)
        gateway = Gateway(directory)
        result = check_store(gateway.url(), workload, acks)
    finally:
        gateway.stop()
    result.update(killed_mid_ingest=killed_running, raw_errors=len(acks["X"]), typed_errors=len(acks["E"]),
                  raw_error_examples=acks["X"][:3], integrity=len(integrity_problems(directory)))
    return result


def drain_queue(url, processor_id="chaos-drain"):
    """Every crash id the standard queue yields to one fresh processor, in the order taken; a
    crash the queue holds twice appears twice.  Crashes still leased to a killed processor are
    not yielded (their lease has not expired); the drained ones stay claimed by this processor."""
    from socorro_store import open_store

    taken = []
    with open_store(url) as store:
        while True:
            batch = list(store.new_crashes(processor_id=processor_id))
            if not batch:
                return taken
            taken += batch


def server_kill_trial(url, kill_server, restart_server, workdir, seed, count=400, writers=2, processors=1, rng=None,
                      client_options="timeout_ms=3000&retries=2"):
    """Ingest into ``url`` with ``writers`` writer and ``processors`` processor children, call
    ``kill_server()`` mid-ingest (any server-side failure: a gateway, HBase's Thrift server, the
    HBase JVM), wait until every child gave up, call ``restart_server()``, then check through
    ``url``.

    ``url`` must name a store no one else writes (a fresh table prefix).  Returns
    :func:`check_store`'s figures plus killed_mid_ingest, raw_errors / typed_errors (of every
    child), drained (crash ids the queue yields afterwards), drained_twice (yielded more than
    once), drained_processed (yielded although acknowledged as processed) and drained_absent
    (yielded but not stored).

    The processors do all the processing: a writer that also processed its own crashes (as
    :func:`gateway_kill_trial`'s do) would race a processor that took the crash from the queue,
    and both would acknowledge it.
    """
    from socorro_store import open_store
    from socorro_store.backends import open_backend

    rng = rng or random.Random(seed)
    with open_store(url) as store:
        store.create_tables()
    client_url = f"{url}{'&' if '?' in url else '?'}{client_options}"
    workload, procs, save_paths, proc_paths = [], [], [], []
    for w in range(writers):
        path = os.path.join(str(workdir), f"kill-acks-{seed}-w{w}")
        workload.append((seed, w * count, count))
        procs.append(spawn_writer(client_url, seed, w * count, count, path, process_every=0))
        save_paths.append(path)
    for p in range(processors):
        path = os.path.join(str(workdir), f"kill-acks-{seed}-p{p}")
        # no done file: a processor runs until the kill makes it fail
        procs.append(spawn("processor", client_url, path, os.path.join(str(workdir), "never"), 20))
        proc_paths.append(path)
    wait_for_acks(save_paths[0], rng.randrange(10, 40), procs[0])
    # and the processors have started processing (a processor child starts slower than the writers
    # save, and sees the queue counters up to a counter send later): the kill lands mid-processing
    for path, proc in zip(proc_paths, procs[writers:]):
        wait_for_acks(path, 1, proc, kind="P")
    time.sleep(rng.uniform(0, 0.4))
    killed_running = all(p.poll() is None for p in procs)
    kill_server()
    for proc in procs:
        try:
            proc.wait(120)  # each child gets BackendUnavailable and stops
        except subprocess.TimeoutExpired:
            kill(proc)  # still blocked: end it (what it did not acknowledge does not count)
    restart_server()
    saved, processed = merge_acks(save_paths), merge_acks(proc_paths)
    acks = {"S": saved["S"], "P": saved["P"] + processed["P"], "E": saved["E"] + processed["E"],
            "X": saved["X"] + processed["X"]}
    result = check_store(url, workload, acks)
    drained = drain_queue(url)
    with open_backend(url) as backend:
        stored = {raw["uuid"] for raw, _processed in _present(backend, _workload_crashes(workload))}
    result.update(
        killed_mid_ingest=killed_running, raw_errors=len(acks["X"]), typed_errors=len(acks["E"]),
        raw_error_examples=acks["X"][:3], typed_error_examples=acks["E"][:3], drained=len(drained),
        drained_twice=len(drained) - len(set(drained)),
        drained_processed=len(set(drained) & set(acks["P"])),
        drained_absent=len(set(drained) - stored))
    return result


def _workload_crashes(workload):
    by_id = {}
    for seed, start, count in workload:
        for i in range(start, start + count):
            crash_id, raw, dumps = make_raw(seed, i)
            by_id[crash_id] = (raw, dumps)
    return by_id


def fault_trial(directory, seed, count=150, rng=None, fault_rate=0.3, delay_s=0.5):
    """Save and process crashes through a :class:`FaultProxy` in front of a gateway, breaking
    calls at random; then check the store through the gateway directly.

    Every call must return or raise a typed error (``raw_errors`` counts anything else); a save
    that raised is not acknowledged.  Returns :func:`check_store`'s figures plus ``faults``,
    ``typed_errors`` and ``raw_errors``.
    """
    from faults.faultproxy import FAULTS, FaultProxy

    from socorro_store import open_store

    rng = rng or random.Random(seed)
    gateway = Gateway(directory)
    proxy = FaultProxy(("127.0.0.1", gateway.port), delay_s=delay_s).start()
    acks = {"S": [], "P": [], "E": [], "X": []}
    try:
        with open_store(gateway.url()) as store:
            store.create_tables()
        # the client timeout is shorter than the proxy's delay: a delayed reply is a timeout
        url = f"hbase://127.0.0.1:{proxy.port}?timeout_ms={int(delay_s * 500)}&retries=3"
        with open_store(url) as store:
            for i in range(count):
                if rng.random() < fault_rate:
                    proxy.inject(rng.choice(FAULTS), rng.choice([1, 1, 2, 5]), after=rng.randrange(12))
                crash_id, raw, dumps = make_raw(seed, i)
                try:
                    store.save_raw_crash(raw, dumps, crash_id)
                    acks["S"].append((crash_id, 0))
                    if i % 3 == 0:
                        store.save_processed(processed_doc(raw))
                        acks["P"].append(crash_id)
                except SocorroStoreError as exc:
                    acks["E"].append(f"{type(exc).__name__} {exc}")
                except Exception as exc:  # noqa: BLE001 - a raw exception escaping is a bug
                    acks["X"].append(f"{type(exc).__name__} {exc}")
                proxy.clear()
        result = check_store(gateway.url(), [(seed, 0, count)], acks)
    finally:
        proxy.stop()
        gateway.stop()
    result.update(faults=sum(proxy.injected.values()), typed_errors=len(acks["E"]),
                  raw_errors=len(acks["X"]), raw_error_examples=acks["X"][:3], typed_error_examples=acks["E"][:10],
                  integrity=len(integrity_problems(directory)))
    return result


def load_run(directory, crashes=20_000, collectors=4, processors=4, seed="load"):
    """``collectors`` writer processes save ``crashes`` crashes through one gateway while
    ``processors`` processor processes take and process them; then check everything.

    Returns :func:`check_store`'s figures plus processed_unique, processed_twice, errors,
    crashes_per_s (acknowledged saves over the ingest wall time), save_p50_ms / save_p99_ms
    and gateway_peak_rss_mb.
    """
    gateway = Gateway(directory)
    root = os.path.dirname(os.path.abspath(str(directory)))
    done = os.path.join(root, "collectors-done")
    try:
        from socorro_store import open_store

        with open_store(gateway.url()) as store:
            store.create_tables()
        share = -(-crashes // collectors)
        writers, writer_paths, workload = [], [], []
        began = time.monotonic()
        for c in range(collectors):
            count = min(share, crashes - c * share)
            path = os.path.join(root, f"collector-{c}")
            workload.append((seed, c * share, count))
            writers.append(spawn_writer(gateway.url(), seed, c * share, count, path))
            writer_paths.append(path)
        readers, reader_paths = [], []
        for p in range(processors):
            path = os.path.join(root, f"processor-{p}")
            readers.append(spawn("processor", gateway.url(), path, done, 50))
            reader_paths.append(path)
        for proc in writers:
            proc.wait()
        ingest_s = time.monotonic() - began
        open(done, "w").close()
        for proc in readers:
            proc.wait()
        total_s = time.monotonic() - began
        saved, processed = merge_acks(writer_paths), merge_acks(reader_paths)
        acks = {"S": saved["S"], "P": processed["P"], "E": saved["E"] + processed["E"],
                "X": saved["X"] + processed["X"]}
        peak_kb = gateway.rss_kb("VmHWM")
        result = check_store(gateway.url(), workload, acks)
    finally:
        gateway.stop()
    latencies = sorted(us for _cid, us in acks["S"]) or [0]
    result.update(
        processed_unique=len(set(acks["P"])), processed_twice=len(acks["P"]) - len(set(acks["P"])),
        errors=acks["E"] + acks["X"], crashes_per_s=len(acks["S"]) / ingest_s,
        processed_per_s=len(set(acks["P"])) / total_s,
        save_p50_ms=latencies[len(latencies) // 2] / 1000,
        save_p99_ms=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000,
        gateway_peak_rss_mb=peak_kb / 1024, integrity=len(integrity_problems(directory)))
    return result


if __name__ == "__main__":
    sys.exit(main())
