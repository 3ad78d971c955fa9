"""Chaos harness: crash workloads in child processes, kills, and the checks that follow them.

Shared by ``tests/test_durability.py`` / ``test_faults.py`` / ``test_load.py`` and ``tools/chaos.py``.

* Workloads are deterministic: :func:`make_raw` builds crash ``i`` of a seed (id, submitted time,
  legacy flag, process type, dumps of varying sizes), :func:`processed_doc` the processed crash of
  a raw crash.  So the parent can recount what a store must hold without trusting it.
* Child roles (``python tools/chaos_harness.py ROLE …``): ``writer`` saves crashes (and processes
  some of them) and appends ``S <id> <latency µs>`` / ``P <id>`` to an acknowledgement file only
  after the call returned; ``processor`` takes crashes from the queue, reads them and saves them
  processed.  An error is logged as ``E <type> <message>`` (typed) or ``X <type> <message>``
  (anything else: a bug) and ends the child.
* :func:`check_store` is what must hold after a kill: every acknowledged crash readable with its
  dumps, no crash row without its queue pointer, ``verify-indexes --repair`` leaves 0 MISSING and 0
  ORPHAN, ``rollup`` + ``reconcile-queue`` make every counter exact.
"""

import argparse
import collections
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
import zlib
from datetime import datetime, timedelta, timezone

from socorro_store.errors import SocorroStoreError
from socorro_store.schema import keys as K

DAY = datetime(2016, 12, 31, tzinfo=timezone.utc)  # the last day of a year: one rollup closes
UNTIL = "2017-01-01T00:00:00Z"                     # its minutes, hours, day, month and year
SIGNATURES = ["js::GC::Mark", "nsFoo::Bar", "", None, "ünï::Code", "mozalloc_abort | 'quoted'"]
PROCESS_TYPES = ["default", "default", "default", "plugin", "content"]
_SERVING = re.compile(r"serving \S+ on 127\.0\.0\.1:(\d+) ")


# -- workloads -------------------------------------------------------------------------------

def make_raw(seed, i):
    """``(crash_id, raw_crash, dumps)`` of crash ``i`` of workload ``seed`` (deterministic)."""
    rng = random.Random(f"{seed}:{i}")
    submitted = DAY + timedelta(seconds=rng.randrange(6 * 3600), microseconds=rng.randrange(10**6))
    crash_id = str(uuid.UUID(int=rng.getrandbits(128)))[:-7] + "2" + submitted.strftime("%y%m%d")
    raw = {"ProductName": "Firefox", "Version": "120.0", "submitted_timestamp": submitted.isoformat(),
           "uuid": crash_id, "ProcessType": rng.choice(PROCESS_TYPES), "seq": i}
    legacy = rng.choice([0, 1, 2, None])
    if legacy is not None:
        raw["legacy_processing"] = legacy
    size = rng.choice([0, 100, 4096, 65536, 300_000])
    dumps = {"upload_file_minidump": rng.randbytes(size)}
    if rng.random() < 0.3:
        dumps["flash1"] = rng.randbytes(1024)
    return crash_id, raw, dumps


def processed_doc(raw):
    """The processed crash a processor makes of ``raw`` (signature and success from its id)."""
    crash_id = raw["uuid"]
    pick = zlib.crc32(crash_id.encode())
    submitted = K.parse_timestamp(raw["submitted_timestamp"])
    return {"uuid": crash_id, "signature": SIGNATURES[pick % len(SIGNATURES)], "success": pick % 7 != 0,
            "completeddatetime": (submitted + timedelta(minutes=5)).isoformat(), "email": "x@example.com"}


def expected_counters(present):
    """``(metrics, signatures)`` counters that ``present`` ``[(raw, processed?)]`` imply.

    An independent recount (of the roll-up's documented rules) used to measure counter drift.
    """
    metrics = collections.defaultdict(collections.Counter)
    sigs = collections.defaultdict(collections.Counter)
    unique = collections.defaultdict(set)
    for raw, processed in present:
        moment = K.parse_timestamp(raw["submitted_timestamp"])
        rows = K.metrics_rows(moment)
        names = ["submitted_crash_reports"]
        if raw.get("legacy_processing") is not None:
            names.append(f"submitted_crash_reports_legacy_throttle_{raw['legacy_processing']}")
        if raw["ProcessType"] != "default":
            names.append(f"submitted_oop_{raw['ProcessType']}_crash_reports")
        if processed:
            doc = processed_doc(raw)
            if doc["signature"] is None or not doc["success"]:
                names.append("crash_report_processing_errors")
            sig_row = K.signature_row(doc["signature"])
            for level, column in K.signature_counter_columns(moment).items():
                sigs[sig_row][column] += 1
                unique[rows[level]].add(sig_row)
        for row in rows.values():
            for name in names:
                metrics[row][b"counters:" + name.encode()] += 1
    for row, names in unique.items():
        metrics[row][b"counters:unique_crash_signatures"] = len(names)
    return {r: dict(c) for r, c in metrics.items()}, {r: dict(c) for r, c in sigs.items()}


def live_counters(backend, dimensioned=False):
    """``(metrics, signatures)`` as stored: every non-zero plain counter (the queue row excluded);
    the dimensioned ones (``…|key``, tested in tests/test_dimensions.py) too when asked."""
    out = []
    for table in (K.METRICS, K.SIGNATURES):
        found = {}
        for row, cells in backend.scan(table, columns=[b"counters"]):
            if row == K.QUEUE_ROW:
                continue
            values = {c: K.decode_counter(v) for c, v in cells.items()
                      if K.decode_counter(v) and (dimensioned or b"|" not in c)}
            if values:
                found[row] = values
        out.append(found)
    return tuple(out)


def counter_drift(expected, live):
    """How many counter cells differ between two ``(metrics, signatures)`` pairs."""
    drift = 0
    for want, have in zip(expected, live):
        for row in set(want) | set(have):
            a, b = want.get(row, {}), have.get(row, {})
            drift += sum(1 for column in set(a) | set(b) if a.get(column, 0) != b.get(column, 0))
    return drift


# -- acknowledgement files -------------------------------------------------------------------

class AckLog:
    """Append-only lines written with one ``os.write`` each: a SIGKILL loses no written line."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, *fields):
        os.write(self.fd, (" ".join(str(f).replace("\n", " ") for f in fields) + "\n").encode())

    def close(self):
        os.close(self.fd)


def read_acks(path):
    """``{"S": [(id, latency_us)], "P": [id], "E": [msg], "X": [msg]}`` of an ack file."""
    out = {"S": [], "P": [], "E": [], "X": []}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.endswith("\n"):
                continue  # never happens with one write per line; be strict anyway
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "S":
                crash_id, latency = rest.split()
                out["S"].append((crash_id, int(latency)))
            elif kind in out:
                out[kind].append(rest)
    return out


# -- child roles -----------------------------------------------------------------------------

def _log_error(acks, exc):
    kind = "E" if isinstance(exc, SocorroStoreError) else "X"
    acks.write(kind, type(exc).__name__, str(exc)[:300])


def run_writer(url, seed, start, count, ack_path, process_every=0, flush_ms=None):
    """Save crashes ``start..start+count`` of ``seed``; process every ``process_every``-th one."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    try:
        with open_store(url, counter_flush_ms=flush_ms) as store:
            for i in range(start, start + count):
                crash_id, raw, dumps = make_raw(seed, i)
                began = time.perf_counter()
                store.save_raw_crash(raw, dumps, crash_id)
                acks.write("S", crash_id, int((time.perf_counter() - began) * 1e6))
                if process_every and i % process_every == 0:
                    store.save_processed(processed_doc(raw))
                    acks.write("P", crash_id)
    except Exception as exc:  # noqa: BLE001 - the parent classifies it
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def run_processor(url, ack_path, done_path, batch=20, name=None):
    """Take, read and process crashes until the queue is empty and ``done_path`` exists."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    name = name or f"chaos-{os.getpid()}"
    try:
        with open_store(url) as store:
            idle_after_done = 0
            while idle_after_done < 2:
                finished = os.path.exists(done_path)  # read before taking: no crash arrives after
                ids = list(store.new_crashes(limit=batch, processor_id=name))
                if not ids:
                    idle_after_done += finished
                    time.sleep(0.05)
                    continue
                for crash_id in ids:
                    raw = store.get_raw_crash(crash_id)
                    store.get_raw_dumps(crash_id)
                    store.save_processed(processed_doc(raw))
                    acks.write("P", crash_id)
    except Exception as exc:  # noqa: BLE001
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def spawn(role, *args):
    """Start ``python tools/chaos_harness.py ROLE ARGS…``; return the Popen."""
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), role, *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def spawn_writer(url, seed, start, count, ack_path, process_every=0, flush_ms=None):
    return spawn("writer", url, seed, start, count, ack_path, process_every, flush_ms or 0)


def wait_for_acks(path, n, proc, timeout=60, kind="S"):
    """Wait until ``path`` holds ``n`` acknowledgements of ``kind`` (``S`` saves, ``P`` processed
    saves), or the child exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(read_acks(path)[kind]) >= n or proc.poll() is not None:
            return
        time.sleep(0.01)


def kill(proc):
    """SIGKILL a child we started and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def proc_rss_kb(pid, field="VmRSS"):
    """``VmRSS`` (or ``VmHWM``, the peak) of a live process from /proc, in KiB; 0 if gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# -- the gateway as a child process ----------------------------------------------------------

class Gateway:
    """``socorro-store serve`` over ``directory`` on a free loopback port (a child process)."""

    def __init__(self, directory, transport="buffered", protocol="binary", extra_args=(), start_timeout_s=30,
                 program=("-m", "socorro_store")):
        """``program``: what ``python`` runs as the CLI (a tools/ launcher that patches the engine)."""
        self.directory, self.transport, self.protocol = str(directory), transport, protocol
        self.proc = subprocess.Popen(
            [sys.executable, *program, "--url", f"embedded://{self.directory}", "serve",
             "--create", "--port", "0", "--transport", transport, "--protocol", protocol, *extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.port = self._wait_for_port(start_timeout_s)

    def _wait_for_port(self, timeout_s):
        """The port of the "serving … on 127.0.0.1:PORT" line; a server silent that long is killed."""
        lines = []
        reader = threading.Thread(target=lambda: lines.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        match = _SERVING.search(lines[0] if lines else "")
        if not match:
            kill(self.proc)
            raise RuntimeError(f"gateway did not start within {timeout_s} s: {lines!r}")
        return int(match.group(1))

    def url(self, **options):
        query = "&".join([f"transport={self.transport}", f"protocol={self.protocol}",
                          *(f"{k}={v}" for k, v in options.items())])
        return f"hbase://127.0.0.1:{self.port}?{query}"

    def rss_kb(self, field="VmRSS"):
        """Resident memory of the server (``VmHWM`` = its peak), in KiB; 0 once it is gone."""
        return proc_rss_kb(self.proc.pid, field)

    def kill(self):
        kill(self.proc)

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                kill(self.proc)
        return self.proc.returncode


# -- checks ----------------------------------------------------------------------------------

def check_store(url, workload, acks, reconcile=True):
    """Check a store after a failure; return a dict of figures (all problem counts must be 0).

    ``workload``: ``[(seed, start, count)]`` of every crash that may have been saved; ``acks``:
    the merged :func:`read_acks` of every child.  Figures: acknowledged, processed_acknowledged,
    lost, lost_processed, duplicates, half_visible (crash rows without their queue pointer before
    repair), missing_after / orphan_after (verify-indexes after ``--repair``), drift_before /
    drift_after (counter cells off before and after rollup), queue_drift_after.
    """
    from socorro_store import open_store
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
        if not reconcile:
            return result
        scrutiny.verify_indexes(backend, repair=True, orphan_age_s=0)
        after = scrutiny.verify_indexes(backend)
        result["missing_after"] = sum(c["missing"] for c in after.values())
        result["orphan_after"] = sum(c["orphan"] for c in after.values())
        rollup.run_rollup(backend, until=UNTIL)
        scrutiny.reconcile_queue(backend)
        result["drift_after"] = counter_drift(expected, live_counters(backend))
        unprocessed = sum(1 for _raw, processed in present if not processed)
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


def merge_acks(paths):
    merged = {"S": [], "P": [], "E": [], "X": []}
    for path in paths:
        for kind, items in read_acks(path).items():
            merged[kind] += items
    return merged


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
    from faultproxy import FAULTS, FaultProxy

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


# -- steady children: they ride through a server-side fault (issue 31, tools/cluster_faults.py) --

def run_steady_writer(url, seed, start, count, ack_path, stop_path=None, give_up_s=300):
    """Save crashes ``start..start+count`` of ``seed`` one call each; a typed error is logged as
    ``R <type> <message>`` and the same crash is saved again (saves are idempotent) until it is
    acknowledged or it failed for ``give_up_s``.  It stops early, between two crashes, once
    ``stop_path`` exists (so crashes ``start..start+len(S lines)`` are all it tried).
    Acknowledgements are ``S <id> <µs>`` (from the first attempt) followed by ``T <id> <unix ms>``
    (when it was acknowledged)."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    try:
        with open_store(url) as store:
            for i in range(start, start + count):
                if stop_path and os.path.exists(stop_path):
                    break
                crash_id, raw, dumps = make_raw(seed, i)
                began = time.perf_counter()
                while True:
                    try:
                        store.save_raw_crash(raw, dumps, crash_id)
                        break
                    except SocorroStoreError as exc:
                        acks.write("R", type(exc).__name__, str(exc)[:200])
                        if time.perf_counter() - began > give_up_s:
                            raise
                        time.sleep(0.2)
                acks.write("S", crash_id, int((time.perf_counter() - began) * 1e6))
                acks.write("T", crash_id, int(time.time() * 1000))
    except Exception as exc:  # noqa: BLE001 - the parent classifies it
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def run_steady_processor(url, ack_path, done_path, batch=20, lease_s=20, give_up_s=300, name=None):
    """Take, read and process crashes until ``done_path`` exists and the queue yielded nothing for
    longer than a lease (a crash whose claim a failed call lost comes back when its ``lease_s``
    lease ends).  A typed
    error is logged as ``R …`` and the call is tried again; ``P <id>`` then ``T <id> <unix ms>``
    once a crash is saved processed."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    name = name or f"steady-{os.getpid()}"

    def patiently(call):
        began = time.monotonic()
        while True:
            try:
                return call()
            except SocorroStoreError as exc:
                acks.write("R", type(exc).__name__, str(exc)[:200])
                if time.monotonic() - began > give_up_s:
                    raise
                time.sleep(0.2)

    try:
        with open_store(url) as store:
            idle_since = None
            while True:
                finished = os.path.exists(done_path)  # read before taking: no crash arrives after
                ids = patiently(lambda: list(store.new_crashes(limit=batch, processor_id=name, lease_seconds=lease_s)))
                if not ids:
                    idle_since = idle_since or time.monotonic()
                    if finished and time.monotonic() - idle_since > lease_s + 2:
                        break  # longer than a lease: no claim a failed call lost is still out
                    time.sleep(0.1)
                    continue
                idle_since = None
                for crash_id in ids:
                    raw = patiently(lambda: store.get_raw_crash(crash_id))
                    patiently(lambda: store.get_raw_dumps(crash_id))
                    patiently(lambda: store.save_processed(processed_doc(raw)))
                    acks.write("P", crash_id)
                    acks.write("T", crash_id, int(time.time() * 1000))
    except Exception as exc:  # noqa: BLE001
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def read_ack_times(path):
    """Unix seconds of every ``T`` line of an ack file (steady children write them), in order."""
    times = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("T ") and line.endswith("\n"):
                    times.append(int(line.split()[2]) / 1000)
    return times


def count_retries(path):
    """How many ``R`` lines (a typed error, then tried again) an ack file holds."""
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.startswith("R "))


def longest_gap(times, since=None, until=None):
    """The longest time (s) between consecutive moments of ``times`` (sorted here), counting from
    ``since`` and to ``until`` when given: the longest stall in acknowledgements."""
    points = sorted(t for t in times if (since is None or t >= since) and (until is None or t <= until))
    if since is not None:
        points.insert(0, since)
    if until is not None:
        points.append(until)
    return max((b - a for a, b in zip(points, points[1:])), default=0.0)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tools/chaos_harness.py")
    sub = parser.add_subparsers(dest="role", required=True)
    w = sub.add_parser("writer")
    for name in ("url", "seed", "start", "count", "ack", "process_every", "flush_ms"):
        w.add_argument(name)
    p = sub.add_parser("processor")
    for name in ("url", "ack", "done", "batch"):
        p.add_argument(name)
    sw = sub.add_parser("steady-writer")
    for name in ("url", "seed", "start", "count", "ack"):
        sw.add_argument(name)
    sw.add_argument("stop", nargs="?")
    sp = sub.add_parser("steady-processor")
    for name in ("url", "ack", "done", "batch"):
        sp.add_argument(name)
    args = parser.parse_args(argv)
    if args.role == "steady-writer":
        return run_steady_writer(args.url, args.seed, int(args.start), int(args.count), args.ack, args.stop)
    if args.role == "steady-processor":
        return run_steady_processor(args.url, args.ack, args.done, int(args.batch))
    if args.role == "writer":
        return run_writer(args.url, args.seed, int(args.start), int(args.count), args.ack,
                          int(args.process_every), int(args.flush_ms) or None)
    return run_processor(args.url, args.ack, args.done, int(args.batch))


if __name__ == "__main__":
    sys.exit(main())
