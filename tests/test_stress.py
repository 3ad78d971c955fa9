"""Issue 21 "Also": many collectors, processors, deleters and importers on one store at once, with
random interruptions; afterwards every invariant holds.

Two stores share one embedded engine (so leases are taken over across stores, as across hosts).
Threads:

* collectors save the workload's raw crashes (each one retried, as a collector retries an upload);
* processors take with short leases and are randomly interrupted: they drop an iterator mid-way
  (its lease runs out: a takeover), close it (its claims go back), release a crash, or save late;
* a deleter deletes random stored crashes (privacy deletions racing the processors);
* an importer saves its own crashes raw and processed at once (the batch path an import uses);
* every backend write may fail before it is applied (a flaky connection), once in ``FLAKE``.

Then the queue is drained with failures off, and: no caller hung (every thread joined); each
crash that is not deleted is processed and in no queue; the signature counters counted each
processed crash once before any repair (no failure was tallied: nothing needed repair); after
``rollup`` every counter is exact; no deleted crash is readable or listed; ``verify-indexes``
finds no dangling or missing pointer.  The default run is small (CI); ``--run-slow`` runs a long one.
"""

import random
import threading
import time
from datetime import timedelta

import pytest
from faults.chaos_workload import DAY, counter_drift, expected_counters, live_counters, make_raw, processed_doc

from socorro_store.backends import open_backend
from socorro_store.crashstore.store import CrashStore
from socorro_store.errors import BackendUnavailable, CrashDeleted, CrashIDNotFound, SocorroStoreError
from socorro_store.jobs import rollup, scrutiny
from socorro_store.schema import keys as K

FLAKE = 25  # one write in FLAKE fails (before it is applied) while the workload runs
# increments are not faulted: a lost increment is tallied and repaired by rollup (tested
# elsewhere), and here the live counters must show each crash counted once before any repair
WRITES = ("mutate_rows", "mutate_tables", "check_and_put_many", "append_many")


class FlakyBackend:
    """A backend whose writes sometimes fail before reaching the engine (nothing applied)."""

    def __init__(self, backend, seed):
        self._backend, self._rng, self._lock = backend, random.Random(seed), threading.Lock()
        self.on = True

    def __getattr__(self, name):
        attr = getattr(self._backend, name)
        if name not in WRITES:
            return attr

        def flaky(*args, **kwargs):
            with self._lock:
                fail = self.on and self._rng.randrange(FLAKE) == 0
            if fail:
                raise BackendUnavailable(f"injected: {name} failed")
            return attr(*args, **kwargs)
        return flaky


class Workload:
    def __init__(self, crashes, seed):
        self.seed = seed
        self.raws = {}
        for i in range(crashes):
            cid, raw, _dumps = make_raw(seed, i)
            self.raws[cid] = raw
        ids = list(self.raws)
        self.collected, self.imported = ids[: len(ids) * 4 // 5], ids[len(ids) * 4 // 5:]
        self.deleted, self.processed = set(), set()
        self.lock = threading.Lock()
        self.errors = []


def _retry(call, attempts=50):
    for _ in range(attempts):
        try:
            return call()
        except BackendUnavailable:
            continue
    raise AssertionError("a call failed 50 times in a row")


def collector(store, work, part, rng):
    for cid in part:
        raw = work.raws[cid]
        _retry(lambda: store.save_raw_crash(raw, {"upload_file_minidump": b"MDMP"}, cid))
        if rng.random() < 0.2:  # the collector's retry of an upload it thinks failed
            _retry(lambda: store.save_raw_crash(raw, {"upload_file_minidump": b"MDMP"}, cid))


def importer(store, work, rng):
    for cid in work.imported:
        raw = work.raws[cid]
        _retry(lambda: store.save_raw_crashes([(raw, {"upload_file_minidump": b"MDMP"}, cid)]))
        _save(store, work, cid, batch=True)


def _save(store, work, cid, batch=False):
    doc = processed_doc(work.raws[cid])
    try:
        _retry(lambda: store.save_processed_crashes([doc]) if batch else store.save_processed(doc))
    except (CrashDeleted, CrashIDNotFound):
        return
    with work.lock:
        work.processed.add(cid)


def processor(store, work, rng, rounds):
    for _ in range(rounds):
        try:
            taker = store.new_crashes(lease_seconds=rng.choice([0.05, 0.2, 1]), max_attempts=50)
            for cid in taker:
                roll = rng.random()
                if roll < 0.1:
                    break  # dropped mid-way: its lease runs out, another takes over
                if roll < 0.15:
                    taker.close()
                    break
                if roll < 0.2:
                    store.release(cid)
                    continue
                _save(store, work, cid)
        except BackendUnavailable:
            continue  # an interrupted take: the next round starts anew


def deleter(store, work, rng, count):
    ids = list(work.collected)
    for _ in range(count):
        cid = rng.choice(ids)
        try:
            store.delete_crashes([cid], missing_ok=True)
        except BackendUnavailable:
            continue  # not deleted (or partly): a later deletion of it completes it
        with work.lock:
            work.deleted.add(cid)


def _run(threads, timeout=120):
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    hung = [t.name for t in threads if t.is_alive()]
    assert hung == [], f"callers hung: {hung}"


def _guarded(work, body, *args):
    def run():
        try:
            body(*args)
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in a thread
            work.errors.append(repr(exc))
    return run


def stress(tmp_path, crashes, seed):
    url = f"embedded://{tmp_path / 'store'}"
    work = Workload(crashes, seed)
    backends = [open_backend(url), open_backend(url)]
    flaky = [FlakyBackend(b, f"{seed}:{i}") for i, b in enumerate(backends)]
    stores = [CrashStore(f) for f in flaky]
    try:
        for f in flaky:
            f.on = False
        stores[0].create_tables()
        for f in flaky:
            f.on = True
        rng = random.Random(seed)
        parts = [work.collected[i::3] for i in range(3)]
        threads = [threading.Thread(target=_guarded(work, collector, stores[i % 2], work, part, random.Random(rng.random())),
                                    name=f"collector-{i}") for i, part in enumerate(parts)]
        threads += [threading.Thread(target=_guarded(work, processor, stores[i % 2], work, random.Random(rng.random()),
                                                     max(8, crashes // 10)), name=f"processor-{i}") for i in range(4)]
        threads.append(threading.Thread(target=_guarded(work, deleter, stores[1], work, random.Random(rng.random()),
                                                        max(3, crashes // 15)), name="deleter"))
        threads.append(threading.Thread(target=_guarded(work, importer, stores[0], work, random.Random(rng.random())),
                                        name="importer"))
        _run(threads)
        assert work.errors == []
        for f in flaky:
            f.on = False
        for store in stores:  # the deletions that failed part-way are completed by their retry
            store.delete_crashes(sorted(work.deleted), missing_ok=True)
        for _ in range(3):  # drain what is left, once the leases of dropped iterators ran out
            time.sleep(1.05)
            for cid in stores[0].new_crashes(lease_seconds=60, max_attempts=50):
                _save(stores[0], work, cid)
        return check(stores, work)
    finally:
        for store in stores:
            store.close()


def check(stores, work):
    store = stores[0]
    backend = store.backend
    tallied = sum(s.live_counters.failures["increments"] + s.live_counters.failures["uncertain"] for s in stores)
    present = []
    for cid, raw in work.raws.items():
        if cid in work.deleted:
            with pytest.raises(CrashIDNotFound):
                store.get_raw_crash(cid)
            with pytest.raises(CrashIDNotFound):
                store.get_unredacted_processed(cid)
            continue
        state = store.get_processing_state(cid)
        assert state["processed"] and state["queues"] == [] and not state["dead_lettered"], state
        present.append((raw, True))
    listed = set(store.crashes_submitted(DAY, DAY + timedelta(days=1)))
    assert listed == set(work.raws) - work.deleted
    for signature in {processed_doc(raw)["signature"] for raw in work.raws.values()}:
        assert not set(store.crashes_by_signature(signature)) & work.deleted
    figures = {"crashes": len(work.raws), "deleted": len(work.deleted), "processed": len(work.processed),
               "tallied": tallied}
    # counted once before any repair: each crash processed and not deleted in one daily cell (the
    # deriver takes a deleted crash's counts back; nothing is sent live, so nothing is tallied)
    day_column = K.signature_counter_columns(DAY)["day"]
    daily = sum(K.decode_counter(cells[day_column]) for _row, cells in backend.scan(K.SIGNATURES, columns=[day_column]))
    assert tallied == 0 and daily == len(work.processed - work.deleted), figures
    indexes = scrutiny.verify_indexes(backend, orphan_age_s=0)
    for table, counts in indexes.items():
        assert counts["missing"] == 0 and counts["orphan"] == 0 and counts["unreadable"] == 0, (table, counts)
    rollup.run_rollup(backend, until=DAY + timedelta(days=2), grace_s=0)
    assert counter_drift(expected_counters(present), live_counters(backend)) == 0
    scrutiny.reconcile_queue(backend)
    assert store.queue_sizes()["standard"] == 0
    return figures


@pytest.mark.parametrize("seed", ["stress-a", "stress-b"])
def test_stress_small(tmp_path, seed):
    figures = stress(tmp_path, crashes=120, seed=seed)
    assert figures["deleted"] > 0 and figures["processed"] > 0


@pytest.mark.slow
def test_stress_long(tmp_path):
    figures = stress(tmp_path, crashes=3000, seed="stress-long")
    assert figures["deleted"] > 0 and figures["processed"] > 0
