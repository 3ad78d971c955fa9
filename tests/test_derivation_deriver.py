"""The deriver: on a cut-over store every metrics, signature and ranking counter is derived from
the crash rows by one writer, and equals the truth computed from them after any sequence of
saves, reprocessings, deletions and kills, with no rollup run.

The ``store`` tests run on every backend kind, with the deriver driven by ``settle()``.
"""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta

import pytest
from click.testing import CliRunner

from store_helpers import BASE_TIME, all_rows, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import Increment
from socorro_store.crashstore import counter_deriver, counters, cut_over, dimensions
from socorro_store.crashstore.contributions import stored_counts
from socorro_store.crashstore.counters import coalesce
from socorro_store.errors import InvalidArgument
from socorro_store.jobs.scrutiny import expected_pointers
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import derived_keys as D
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK
from socorro_store.schema.stored import stored_legacy, stored_time

@pytest.fixture
def store(cut_over_store):
    return cut_over_store


def truth(backend):
    """``{(table, row, column): count}`` computed from the crash rows alone; an interval's unique
    signatures are the signatures with a crash in it."""
    incs = []
    for _row, cells in backend.scan(K.CRASH_REPORTS, columns=cut_over.ROW_COLUMNS):
        if K.COL_OOID in cells:
            incs += stored_counts(cells)
    out = {(i.table, i.row, i.column): i.amount for i in coalesce(incs + _hang_pair_truth(backend))}
    unique = {}
    for (table, _row, column), n in out.items():
        interval = DK.plain_signature_interval(column) if table == K.SIGNATURES else None
        if interval is not None and n > 0:
            unique[interval] = unique.get(interval, 0) + 1
    out.update({(K.METRICS, row, counter_deriver.UNIQUE_COLUMN): n for row, n in unique.items()})
    out.update({key: n for key, n in _queue_truth(backend).items() if n})
    return out


def _queue_truth(backend):
    """``{("queue", name): size}``: the raw crashes of this store's collector not processed yet
    (standard; legacy with legacy_processing 0), and the pending priority requests."""
    sizes = dict.fromkeys(QUEUES, 0)
    for _row, cells in backend.scan(K.CRASH_REPORTS, columns=[b"flags", K.COL_OOID]):
        if K.COL_OOID not in cells:
            continue
        if K.COL_PROCESS_TYPE in cells and cells.get(K.COL_PROCESSED) != b"Y":
            sizes[("queue", "standard")] += 1
            sizes[("queue", "legacy")] += stored_legacy(cells.get(K.COL_LEGACY)) == 0
        sizes[("queue", "priority")] += bool(cells.get(K.COL_PRIORITY))
    return sizes


QUEUES = [("queue", name) for name in ("standard", "legacy", "priority")]


def _hang_pair_truth(backend):
    """A pair counts once, at its later side's submission, where two crashes of this store's
    collector (one per process type) share a hang id."""
    sides = {}
    for _row, cells in backend.scan(K.CRASH_REPORTS, columns=[K.COL_OOID, K.COL_HANG, K.COL_SUBMITTED,
                                                             K.COL_PROCESS_TYPE]):
        if cells.get(K.COL_HANG) and K.COL_PROCESS_TYPE in cells and K.COL_OOID in cells:
            sides.setdefault(cells[K.COL_HANG], []).append(stored_time(cells[K.COL_SUBMITTED]))
    return [inc for times in sides.values() if len(times) >= 2
            for inc in counters.metric_increments(max(times), [counters.HANG_PAIRS])]


def derived(backend):
    """The non-zero counters the deriver owns, as stored (the queues as their sizes)."""
    sizes = counters.queue_sizes(backend)
    out = {key: sizes[key[1]] for key in QUEUES}
    for row, cells in backend.scan(K.METRICS, columns=[b"counters"]):
        if row == K.QUEUE_ROW:
            continue
        out.update({(K.METRICS, row, c): K.decode_counter(v) for c, v in cells.items()})
    for row, cells in backend.scan(K.SIGNATURES):
        out.update({(K.SIGNATURES, row, c): K.decode_counter(v) for c, v in cells.items()})
    for row, cells in backend.scan(K.SIGNATURES_SEEN, prefix=RK.RANK_PREFIX):
        try:
            RK.parse_rank_row(row)
        except InvalidArgument:
            continue  # the since, head, top and slack rows
        out.update({(K.SIGNATURES_SEEN, row, RK.rank_column(sig)): n for sig, n in RK.ranking_counts(cells).items()})
    return {key: n for key, n in out.items() if n}


#: the index tables the deriver writes on a cut-over store
DERIVED_INDEXES = (K.SIGNATURE_OOID, K.LEGACY_SUBMITTED_TIME, K.HANG_ID, K.HANG_ID_SUBMITTED_TIME)


def pointers_truth(backend):
    """``{(table, row): cells}`` of the derived indexes, as ``verify-indexes`` expects them from
    the crash rows (a hang-id row holds one column per side)."""
    out = {}
    for _row, cells in backend.scan(K.CRASH_REPORTS):
        if K.COL_OOID in cells:
            for table in DERIVED_INDEXES:
                for (row, _column), puts in expected_pointers(cells[K.COL_OOID].decode(), cells).get(table, {}).items():
                    out.setdefault((table, row), {}).update(puts)
    return out


def pointers(backend):
    """``{(table, row): cells}`` of the derived indexes, as stored (a hang-id row's sides only)."""
    return {(table, row): {c: v for c, v in cells.items() if table != K.HANG_ID or K.is_hang_column(c)}
            for table in DERIVED_INDEXES for row, cells in backend.scan(table)}


QUEUE_TABLES = (K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG)


def queue_pointers(backend):
    """``{(table, row)}`` of the queue pointers of crashes whose crash row exists (a save killed
    between its pointers and its row leaves an orphan: ``verify-indexes``' to delete)."""
    stored = {(table, row, cells[K.COL_OOID]) for table in QUEUE_TABLES for row, cells in backend.scan(table, columns=[b"ids"])
              if cells.get(K.COL_OOID)}
    rows = backend.get_rows(K.CRASH_REPORTS, sorted({K.crash_row_key(cid.decode()) for _t, _r, cid in stored}),
                            columns=[K.COL_OOID])
    return {(table, row) for table, row, cid in stored if K.crash_row_key(cid.decode()) in rows}


def queue_pointers_truth(backend):
    """``{(table, row)}`` of the queue pointers the crash rows imply (unprocessed crashes only)."""
    return {(table, row) for _row, cells in backend.scan(K.CRASH_REPORTS) if K.COL_OOID in cells
            for table in QUEUE_TABLES for (row, _column) in expected_pointers(cells[K.COL_OOID].decode(), cells).get(table, {})}


def _ingest(store, n, rng, signatures=("A", "B", "C"), products=("Firefox", "Fennec")):
    ids, tag = [], rng.randrange(10**9)
    for i in range(n):
        cid = crash_id(rng=rng)
        submitted = BASE_TIME + timedelta(minutes=rng.randrange(600))
        process_type = rng.choice(["content", "default", None])
        hang = {}
        if i % 4 == 0:  # hang pairs: crashes 0 and 4 share a hang id, 8 and 12, ...
            hang = {"HangID": f"hang-{tag}-{i // 8}"}
            process_type = "plugin" if i % 8 else "default"
        store.save_raw_crash(raw_crash(cid, submitted, ProductName=rng.choice(products),
                                       Version=rng.choice(["1.0", "2.0"]), legacy_processing=rng.choice([0, 1]),
                                       ProcessType=process_type, **hang), {}, cid)
        ids.append(cid)
    for cid in ids[: n * 3 // 4]:
        store.save_processed(processed(cid, signature=rng.choice(signatures + (None,)),
                                       success=rng.random() > 0.2, os_name=rng.choice(["Windows NT", "Linux"])))
    return ids


def test_counters_equal_the_crash_rows_after_saves_reprocessings_and_deletions(store):
    rng = random.Random(1)
    ids = _ingest(store, 40, rng)
    store.settle()
    assert derived(store.backend) == truth(store.backend) != {}
    for cid in ids[:10]:  # reprocessed: a new signature, product and error state
        store.save_processed(processed(cid, signature="D", product="Thunderbird", version="9.0", success=False))
    store.delete_crashes(ids[10:16])
    assert store.enqueue_priority(ids[16:24] + ids[34:38]) == 12  # processed crashes and unprocessed ones
    store.settle()
    assert derived(store.backend) == truth(store.backend)
    assert store.queue_sizes()["priority"] == 8 + 4
    for cid in ids[18:20] + ids[34:35]:  # served: out of the priority queue, into the processed one
        store.save_processed(processed(cid, signature="E"))
    store.delete_crashes(ids[20:22])  # deleted with their requests pending
    store.settle()
    assert derived(store.backend) == truth(store.backend)
    assert store.queue_sizes()["priority"] == 12 - 3 - 2
    assert store.queue_sizes()["processed_priority"] == 3
    assert pointers(store.backend) == pointers_truth(store.backend)
    assert store.get_signature_counters("D")  # the reads see it (they settle first)
    assert store.derivation_status()["waiting"] == 0


def test_the_signature_legacy_time_and_hang_indexes_and_the_hang_pairs_are_derived(store):
    rng = random.Random(11)
    cid, other = crash_id(rng=rng), crash_id(rng=rng)
    store.save_raw_crash(raw_crash(cid, legacy_processing=0, HangID="h1", ProcessType="default"), {}, cid)
    store.save_raw_crash(raw_crash(other, BASE_TIME + timedelta(minutes=5), HangID="h1", ProcessType="plugin"), {}, other)
    store.save_processed(processed(cid, signature="A"))
    assert pointers(store.backend) == {}  # the saves wrote no derived pointer: the deriver does
    assert list(store.crashes_by_signature("A")) == [cid]  # a listing settles its own saves first
    assert {table for table, _row in pointers(store.backend)} == set(DERIVED_INDEXES)
    assert store.hang_pair("h1") == {"default": cid, "plugin": other}
    pairs = counters.counter_column(counters.HANG_PAIRS)
    later = K.metrics_row(BASE_TIME + timedelta(minutes=5), "minute")
    assert store.backend.get_row(K.METRICS, later, [pairs]) == {pairs: K.encode_counter(1)}  # at its later side
    store.save_processed(processed(cid, signature="B"))  # reprocessed: the pointer moves
    assert list(store.crashes_by_signature("B")) == [cid] and list(store.crashes_by_signature("A")) == []
    assert pointers(store.backend) == pointers_truth(store.backend)
    assert [c for _t, c in store.latest_crashes_by_signature("B")[0]] == [cid]
    assert derived(store.backend) == truth(store.backend)
    store.delete_crashes([other])  # the pair comes apart: its count is taken back
    assert store.hang_pair("h1") == {"default": cid}
    assert store.backend.get_row(K.METRICS, later, [pairs]) == {}
    assert derived(store.backend) == truth(store.backend)
    store.delete_crashes([cid])
    assert pointers(store.backend) == {}
    assert not list(store.backend.scan(K.DERIVED, prefix=D.HANG_PREFIX))


def test_saves_write_no_derived_counter_live(store):
    rng = random.Random(2)
    cid = crash_id(rng=rng)
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, signature="A"))
    store.live_counters.sender and store.live_counters.sender.settle()
    assert derived(store.backend) == {}  # not one increment: the deriver owns them
    assert store.backend.get_row(K.METRICS, K.QUEUE_ROW) == {}  # the queue counters too
    store.settle()
    assert derived(store.backend) == truth(store.backend) != {}


def test_a_writer_incrementing_beside_the_deriver_is_detected_and_shown(store, backend_url, caplog):
    """An older version's save (or a process that has not seen the cut-over mark) increments a
    cell the deriver owns: the deriver's next batch over that cell notices, logs it, and keeps
    it in ``~derive/foreign`` for ``derive status`` and ``ping`` of any process."""
    from socorro_store.cli import main  # noqa: PLC0415

    rng = random.Random(21)
    first, second = crash_id(rng=rng), crash_id(rng=rng)
    store.save_raw_crash(raw_crash(first), {}, first)
    store.settle()
    assert store.derivation_status()["foreign_writes"] == 0
    day = K.metrics_row(BASE_TIME, "day")
    submitted = counters.counter_column(counters.SUBMITTED)
    store.backend.increment_many([Increment(K.METRICS, day, submitted, 1)])  # the older writer's count
    store.save_raw_crash(raw_crash(second), {}, second)
    store.settle()
    status = store.derivation_status()
    assert status["foreign_writes"] >= 1 and "wrote 1, read 2" in status["last_foreign_write"]
    assert "written beside the deriver" in caplog.text
    with open_store(backend_url, search_url="none") as other:  # another process sees it too
        assert other.derivation_status()["foreign_writes"] == status["foreign_writes"]
    result = CliRunner().invoke(main, ["--url", backend_url, "derive", "status"])
    assert result.exit_code == 0 and "written beside the deriver" in result.output, result.output
    result = CliRunner().invoke(main, ["--url", backend_url, "ping", "--json"])
    assert json.loads(result.output)["counters_foreign_writes"] == status["foreign_writes"], result.output


def test_a_deriving_process_derives_its_own_saves_before_it_closes(tmp_path, monkeypatch):
    """A command that saved (``crash reprocess``, an import) leaves the counters saying so when
    its process derives (the default); an inline one leaves them to its worker."""
    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_url="none") as store:
        store.create_tables()
    for mode, left in (("background", 0), ("inline", 1)):
        monkeypatch.setenv("SOCORRO_DERIVE", mode)
        cid = crash_id(rng=random.Random(len(mode)))
        with open_store(url, search_url="none") as store:
            store.save_raw_crash(raw_crash(cid), {}, cid)
        with open_store(url, search_url="none") as other:
            assert counter_deriver.waiting(other.backend)[0] == left, mode
    with open_store(url, search_url="none") as store:
        store.settle()
        assert derived(store.backend) == truth(store.backend) != {}


def test_a_batch_killed_after_its_journal_is_applied_once_by_the_next_holder(store, backend_url):
    rng = random.Random(3)
    _ingest(store, 12, rng)
    deriver = store.live_counters.deriver()
    real_apply = deriver._apply

    def killed(*batch):
        raise KeyboardInterrupt("killed after the journal")

    deriver._apply = killed
    with pytest.raises(KeyboardInterrupt):
        deriver.derive_pass()
    deriver._apply = real_apply
    assert derived(store.backend) == {}  # journaled, not applied
    journal = store.backend.get_row(K.DERIVED, D.LEASE_ROW, [D.COL_JOURNAL])[D.COL_JOURNAL]
    assert D.decode_journal(journal)[0]
    deriver.lease.until = 0  # this process is gone: the lease row still names it
    with open_store(backend_url, search_url="none") as other:
        successor = other.live_counters.deriver()
        successor.lease.term_ns = int(0.2e9)
        _expire_lease(other.backend)
        assert successor.catch_up(timeout=20)
        assert successor.replays == 1
        assert derived(other.backend) == truth(other.backend) != {}
        assert pointers(other.backend) == pointers_truth(other.backend) != {}
        # caught up, the successor let the lease go with its journal emptied: nothing to replay
        assert not other.backend.get_row(K.DERIVED, D.LEASE_ROW, [D.COL_JOURNAL]).get(D.COL_JOURNAL)
        successor.catch_up(timeout=20)
        assert successor.replays == 1 and derived(other.backend) == truth(other.backend)


def _expire_lease(backend):
    lease = backend.get_row(K.DERIVED, D.LEASE_ROW, [D.COL_LEASE]).get(D.COL_LEASE, b"")
    holder = lease.rpartition(b"|")[0]
    backend.mutate_rows(K.DERIVED, [K_row(D.LEASE_ROW, {D.COL_LEASE: holder + b"|%d" % (time.time_ns() - 1)})])


def K_row(row, cells, delete=False):
    from socorro_store.backends import RowMutation

    return RowMutation(row, cells, delete_row=delete)


def test_a_deriver_that_lost_its_lease_writes_nothing(store):
    rng = random.Random(4)
    _ingest(store, 6, rng)
    deriver = store.live_counters.deriver()
    assert deriver.lease.hold()
    # another process took the lease (this one paused past its term)
    store.backend.mutate_rows(K.DERIVED, [K_row(D.LEASE_ROW, {D.COL_LEASE: b"other|%d" % (time.time_ns() + 10**11)})])
    assert deriver.derive_pass() is None
    assert derived(store.backend) == {} and counter_deriver.waiting(store.backend)[0] == 6 + 4  # raw saves and processed saves


def test_concurrent_reprocessings_leave_the_crash_counted_once_under_its_stored_state(store):
    rng = random.Random(5)
    ids = _ingest(store, 8, rng)
    store.settle()

    def reprocess(signature):
        for cid in ids:
            store.save_processed(processed(cid, signature=signature))

    threads = [threading.Thread(target=reprocess, args=(s,)) for s in ("X", "Y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.settle()
    assert derived(store.backend) == truth(store.backend)


def test_retention_keeps_counts_and_forgets_what_they_were_counted_under(store):
    rng = random.Random(6)
    ids = _ingest(store, 6, rng)
    store.settle()
    before = derived(store.backend)
    from socorro_store.crashstore.deletion import delete_crashes

    delete_crashes(store.backend, ids[:3])  # retention: no live counters, the counts stay
    store.settle()
    assert derived(store.backend) == before
    assert not store.backend.get_rows(K.DERIVED, [D.counted_row(c) for c in ids[:3]])


def test_cut_over_records_what_an_older_store_counted(backend_url):
    rng = random.Random(7)
    with open_store(backend_url, search_url="none") as store:
        store.create_tables()
        counted_live(store)  # a store of an older version: its saves increment live
        _ingest(store, 10, rng)  # counted live, by increments
        store.settle()
        live = derived(store.backend)
        assert live == truth(store.backend)
        report = store.cut_over_counters()
        assert report["crashes"] == 10 and report["since"]
        assert store.cut_over_counters()["crashes"] == 0  # once
        ids = _ingest(store, 6, rng)
        for cid in ids[:2]:
            store.save_processed(processed(cid, signature="moved"))
        store.delete_crashes(ids[2:4])
        store.settle()
        assert derived(store.backend) == truth(store.backend)


def test_bad_input_on_a_cut_over_store_writes_nothing(store):
    before = all_rows(store.backend)
    with pytest.raises(InvalidArgument):
        store.save_processed({"uuid": "not-a-crash-id", "completeddatetime": BASE_TIME.isoformat()})
    assert all_rows(store.backend) == before


_WRITER = textwrap.dedent("""
    import sys, random
    sys.path.insert(0, {tests!r})
    from datetime import timedelta
    from store_helpers import BASE_TIME, crash_id, processed, raw_crash
    from socorro_store import open_store
    store = open_store({url!r}, search_url="none")
    deriver = store.live_counters.deriver()
    rng = random.Random(7)
    n = 0
    ids = []
    while True:
        cid = crash_id(rng=rng)
        hang = {{"HangID": "h%d" % (n // 8), "ProcessType": "plugin" if n % 8 else "default"}} if n % 4 == 0 else {{}}
        store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(minutes=n % 90),
                                       ProductName="P%d" % (n % 3), **hang), {{}}, cid)
        ids.append(cid)
        store.save_processed(processed(cid, signature="sig%d" % (n % 5)))
        if n % 3 == 0:
            store.save_processed(processed(ids[n // 2], signature="re%d" % (n % 4)))
        n += 1
        if n % 7 == 0:
            deriver.derive_pass()  # the writer derives too: killed mid-pass some of the time
        if n == 20:
            print("ready", flush=True)
""")


def test_a_writer_killed_mid_ingest_leaves_every_counter_exact(backend_url):
    """SIGKILL a process that saves, reprocesses and derives; another process takes the lease
    over once it expires, and with no rollup every derived counter equals the crash rows."""
    with open_store(backend_url, search_url="none") as store:
        store.create_tables()
        store.cut_over_counters()
    script = _WRITER.format(tests=os.path.dirname(__file__), url=backend_url)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "SOCORRO_DERIVE": "background"})
    try:
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(1.5)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    with open_store(backend_url, search_url="none") as store:
        deriver = store.live_counters.deriver()
        deriver.pending_ns = 0  # the killed writer's saves in flight: what their rows say now
        _expire_lease(store.backend)
        assert deriver.catch_up(timeout=60)
        assert derived(store.backend) == truth(store.backend) != {}
        assert pointers(store.backend) == pointers_truth(store.backend) != {}
        # the queue pointers the saves left to the deriver are gone, and only those
        assert queue_pointers(store.backend) == queue_pointers_truth(store.backend)


_SAVER = textwrap.dedent("""
    import sys, random, time
    sys.path.insert(0, {tests!r})
    from datetime import timedelta
    from store_helpers import BASE_TIME, crash_id, processed, raw_crash
    from socorro_store import open_store
    store = open_store({url!r}, search_url="none")
    rng = random.Random(9)
    for n in range(400):
        cid = crash_id(rng=rng)
        day = 0 if n <= 40 else 2  # the day rolled up is over after the first 41 crashes
        store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(days=day, minutes=n % 90),
                                       legacy_processing=n % 2), {{}}, cid)
        if n % 2:
            store.save_processed(processed(cid, signature="sig%d" % (n % 5)))
        if n == 40:
            store.settle()
            print("deriving", store.derivation_status()["deriving"], flush=True)
        time.sleep(0.02)
    store.settle()
    print("done", flush=True)
    time.sleep(600)
""")


def test_rollup_and_reconcile_run_beside_a_saving_process_that_derives(tmp_path):
    """A saving process's background deriver holds the lease for as long as it runs: ``rollup``
    (deriving each day again) and ``reconcile-queue`` ask for it, the holder gives it up at its
    next renewal, and both jobs finish (they waited 60 s three times and failed before).
    Derivation resumes after them, and every counter and queue size is exact."""
    from socorro_store.jobs import rollup, scrutiny  # noqa: PLC0415

    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_url="none") as store:
        store.create_tables()
    saver = subprocess.Popen([sys.executable, "-c", _SAVER.format(tests=os.path.dirname(__file__), url=url)],
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "SOCORRO_DERIVE": "background"})
    try:
        assert saver.stdout.readline().strip() == "deriving True"  # the other process holds the lease
        with open_store(url, search_url="none") as store:
            until = (BASE_TIME + timedelta(days=1)).isoformat()
            report = rollup.run_rollup(store.backend, until=until, since=BASE_TIME.date().isoformat(),
                                       grace_s=0)
            assert report["rederived"] == 41 and not report.get("derived_differences"), report
            assert scrutiny.run_reconcile_queue(store.backend)["corrected"] == 0
            assert saver.stdout.readline().strip() == "done"  # its saves went on, derived since
            assert counter_deriver.catch_up(store.backend)
            assert derived(store.backend) == truth(store.backend) != {}
            assert store.queue_sizes()["standard"] == 200
    finally:
        saver.kill()
        saver.wait()


def test_the_derive_commands_and_ping_show_and_drive_derivation(tmp_path):
    import json

    from cli_helpers import fails, ok, run

    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_url="none") as store:
        store.create_tables()
        counted_live(store)  # an older version's store
        _ingest(store, 4, random.Random(8))
    assert "derive cut-over" in fails(run(url, "derive", "run", "--once"), 2)
    assert "incremented live" in ok(run(url, "derive", "status"))
    report = json.loads(ok(run(url, "derive", "cut-over", "--json")))
    assert report["crashes"] == 4
    with open_store(url, search_url="none") as store:
        _ingest(store, 3, random.Random(9))  # closed before deriving (an inline deriver)
    answer = json.loads(ok(run(url, "ping", "--json")))
    assert answer["counters_waiting"] > 0 and answer["derivation_lag_seconds"] >= 0
    assert "counters derived: " in ok(run(url, "queue", "status"))
    assert ok(run(url, "derive", "run", "--once")).strip() == "caught up"
    status = json.loads(ok(run(url, "derive", "status", "--json")))
    assert status["waiting"] == 0 and status["cut_over"] == report["since"]
    with open_store(url, search_url="none") as store:
        assert derived(store.backend) == truth(store.backend) != {}


class TwoStepProcessing:
    """A backend whose check-and-put covers one cell (as HBase's Thrift1): a first processing
    writes its row, then its ``N -> Y`` check; ``between()`` runs between the two."""

    atomic_check_and_put = False

    def __init__(self, backend, between):
        self._backend, self._between = backend, between

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def check_and_put_many(self, table, items):
        if table == K.CRASH_REPORTS and any(column == K.COL_PROCESSED for _row, column, _e, _p in items):
            self._between()
        return self._backend.check_and_put_many(table, items)


def test_a_row_derived_between_a_processed_save_and_its_transition_is_derived_again(embedded_url):
    """The deriver reads the crash row after its processed cells landed and before its
    ``flags:processed`` N -> Y check: the save is still in flight (its stamp lands with the Y),
    so the crash is derived again once the check applied, and counted as processed."""
    from socorro_store.crashstore.store import CrashStore

    with open_store(embedded_url, search_url="none") as store:
        store.create_tables()
        cid = crash_id(rng=random.Random(10))
        store.save_raw_crash(raw_crash(cid), {}, cid)
        store.settle()
        deriver = store.live_counters.deriver()
        two_step = CrashStore(TwoStepProcessing(store.backend, lambda: deriver.derive_pass()))
        two_step.live_counters = store.live_counters  # this store's deriver: its pass runs in between
        two_step.save_processed(processed(cid, signature="between"))
        store.settle()
        assert derived(store.backend) == truth(store.backend)
        assert store.get_signature_counters("between")


def test_saves_wait_for_derivation_when_it_lags_beyond_its_limit(embedded_url):
    """Back pressure: with the lag beyond the limit, a save returns only once this process's
    saves are derived (here at once: no other process holds the lease)."""
    with open_store(embedded_url, search_url="none") as store:
        store.create_tables()
        rng = random.Random(11)
        cid = crash_id(rng=rng)
        store.save_raw_crash(raw_crash(cid), {}, cid)
        assert counter_deriver.waiting(store.backend)[0] == 1  # within the limit: not waited for
        deriver = store.live_counters.deriver()
        deriver.lag_limit_s, deriver._lag_checked = 0.0, 0.0  # any lag is beyond it; look now
        time.sleep(0.01)
        other = crash_id(rng=rng)
        store.save_raw_crash(raw_crash(other), {}, other)
        assert deriver.throttled == 1 and counter_deriver.waiting(store.backend)[0] == 0
        assert derived(store.backend) == truth(store.backend) != {}


def test_cut_over_is_refused_beside_socorros_own_code_and_writes_nothing(embedded_url):
    from socorro_store.crashstore.states import COL_SOCORRO_LEGACY_SIZE
    from socorro_store.schema.stored import SOCORRO_QUEUE_ROW

    with open_store(embedded_url, search_url="none") as store:
        store.create_tables()
        counted_live(store)
        _ingest(store, 2, random.Random(12))
        store.backend.increment_many([Increment(K.METRICS, SOCORRO_QUEUE_ROW, COL_SOCORRO_LEGACY_SIZE, 1)])
        with pytest.raises(InvalidArgument, match="Socorro's own code"):
            store.cut_over_counters()
        assert cut_over.cut_over_at(store.backend) is None
        assert list(store.backend.scan(K.DERIVED)) == []


def test_a_backlog_grows_the_passes(embedded_url):
    """Passes that come back full read twice as many records the next time (up to MAX_BATCH):
    a backlog is worked off in few passes, not a batch a pass."""
    from socorro_store.crashstore.dimensions import Dimensions

    with open_store(embedded_url, search_url="none") as store:
        store.create_tables()
        _ingest(store, 40, random.Random(13))  # 40 raw saves and 30 processed: 70 records
        deriver = counter_deriver.CounterDeriver(store.backend, Dimensions().admitter(store.backend),
                                                 background=False, batch=2)
        assert deriver.catch_up(timeout=30)
        assert deriver.passes <= 8  # 2 + 4 + 8 + 16 + 32 + ... (70 passes at a batch a pass)
        deriver.close()
        assert derived(store.backend) == truth(store.backend) != {}


def test_a_pass_admits_its_new_values_in_a_few_calls_in_arrival_order(store):
    rng = random.Random(12)
    versions = [f"{n}.0" for n in range(30)]
    for version in versions:
        cid = crash_id(rng=rng)
        store.save_raw_crash(raw_crash(cid, Version=version), {}, cid)
    before = dict(store.backend.calls)
    store.settle()
    calls = {kind: n - before.get(kind, 0) for kind, n in store.backend.calls.items()}
    # records, rows, counted facts, counters, two registry rounds: not a read per value (30);
    # the claims are one call where a backend batches check-and-puts, one per value on HBase
    assert calls["get_rows"] <= 12
    assert sorted(dimensions.registry(store.backend)["versions"]["Firefox"]) == sorted(versions)
    assert derived(store.backend) == truth(store.backend)
