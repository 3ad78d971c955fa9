"""The background counter sender: saves hand increments over and return; one thread coalesces and
sends them; this store's reads settle first; failures are tallied, never raised or replayed."""

import threading

from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import Increment
from socorro_store.crashstore.counter_sender import CounterSender
from socorro_store.crashstore.counters import LiveCounters
from socorro_store.errors import BackendUnavailable, InvalidArgument, NotACounter, TableNotFound
from socorro_store.schema import keys as K


def test_jobs_handed_over_while_a_send_runs_share_the_next_send():
    sends, gate, started = [], threading.Event(), threading.Event()

    def send_jobs(jobs):
        started.set()
        gate.wait(5)
        sends.append(len(jobs))

    sender = CounterSender(send_jobs, weigh=len)
    sender.submit(["first"])
    assert started.wait(5)  # the first send is in flight, holding one job
    for n in range(5):
        sender.submit([n])
    assert sender.pending == 6
    gate.set()
    sender.settle()
    assert sends == [1, 5] and sender.pending == 0
    sender.close()
    sender.close()  # idempotent


def test_a_full_queue_blocks_the_save_until_the_sender_takes_it():
    gate, taken, sends = threading.Event(), threading.Event(), []
    sender = CounterSender(lambda jobs: (taken.set(), gate.wait(5), sends.append(len(jobs))), max_pending=2, weigh=len)
    sender.submit([0])
    assert taken.wait(5)  # taken by the thread (on a loaded machine it could take the next saves with it)
    blocked = threading.Event()

    def saver():
        for n in range(3):
            sender.submit([n])
        blocked.set()

    thread = threading.Thread(target=saver)
    thread.start()
    assert not blocked.wait(0.3)  # two wait, the third save blocks: memory stays bounded
    gate.set()
    thread.join(5)
    assert blocked.is_set()
    sender.close()
    assert sum(sends) == 4


def test_a_gathering_send_waits_for_other_saves_and_a_settle_ends_the_wait():
    """With ``gather_s``, saves handed over within the window share one send (the hot metrics
    rows go once for all of them); a settle() sends at once, whatever is left of the window."""
    sends = []
    sender = CounterSender(lambda jobs: sends.append(len(jobs)), gather_s=600, weigh=len)
    for n in range(5):
        sender.submit([n])
    settled = threading.Thread(target=sender.settle)
    settled.start()
    settled.join(60)  # a deadlock guard far below the window, not a timing assertion
    assert not settled.is_alive() and sends == [5]
    sender.submit(["last"])
    closing = threading.Thread(target=sender.close)
    closing.start()
    closing.join(60)
    assert not closing.is_alive() and sends == [5, 1]  # a close sends what is gathered


def test_a_stores_background_sender_gathers():
    assert LiveCounters(FailingBackend(), background=True).sender._gather_s > 0


class FailingBackend:
    """Increments fail as an outage would; the sender must tally them, never raise."""

    remote = True

    def increment_many(self, increments):
        raise BackendUnavailable("down")


def test_a_failed_send_is_tallied_and_the_sender_goes_on():
    live = LiveCounters(FailingBackend(), background=True)
    incs = [Increment(K.METRICS, b"2016", K.counter_column("submitted_crash_reports"))]
    live.send(incs)
    live.send(incs)
    live.settle()
    assert live.failures["increments"] >= 1 and live.sender.pending == 0
    live.close()


def test_a_store_reads_its_own_counters_at_once(backend_url, backend_kind, prebuilt_tables):
    """Background on every remote kind (and forced on embedded): what a save counted, the same
    store's counter reads see at once; another store sees it once the sender has sent it."""
    with open_store(backend_url, background_counters=True) as store:
        store.create_tables()
        assert store.live_counters.sender is not None
        ids = [crash_id(s) for s in "0123"]
        for cid in ids:
            store.save_raw_crash(raw_crash(cid, legacy_processing=0), {}, cid)
        for cid in ids:
            store.save_processed(processed(cid, signature="bg"))
        day = K.metrics_row(BASE_TIME, "day").decode()
        assert store.get_metrics(day)["submitted_crash_reports"] == 4
        assert store.get_signature_counters("bg")["daily_2016-09-18"] == 4
        sizes = store.queue_sizes()
        assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, 4)
        assert not store.live_counters.failures
    with open_store(backend_url) as other:  # closed: everything was sent
        assert other.get_metrics(day)["submitted_crash_reports"] == 4


def test_close_never_strands_a_save_blocked_by_back_pressure():
    """A save waiting for room when the sender closes sends its own increments: settle() after
    the close never waits for a job handed to a thread that has gone (it used to hang)."""
    for _trial in range(50):
        sends, gate = [], threading.Event()

        def send_jobs(jobs, sends=sends, gate=gate):
            gate.wait(5)
            sends.extend(jobs)

        sender = CounterSender(send_jobs, max_pending=1, weigh=len)
        sender.submit(["in flight"])
        sender.submit(["waiting"])  # the queue is full now
        blocked = threading.Thread(target=sender.submit, args=(["blocked"],))
        blocked.start()
        closing = threading.Thread(target=sender.close)
        closing.start()
        gate.set()
        closing.join(10)
        blocked.join(10)
        settled = threading.Thread(target=sender.settle)
        settled.start()
        settled.join(10)  # a deadlock guard, not a timing assertion
        assert not settled.is_alive() and not blocked.is_alive()
        assert sorted(job[0][0] for job in sends) == ["blocked", "in flight", "waiting"]


def test_the_queue_is_bounded_in_bytes_not_jobs():
    """Back pressure counts the bytes of the increments waiting: a few jobs of a batch's size
    fill it where 10,000 jobs would be gigabytes."""
    gate = threading.Event()
    sender = CounterSender(lambda jobs: gate.wait(5), max_pending_bytes=10_000)
    big = [Increment(K.SIGNATURES, b"x" * 40, b"counters:daily_2016-09-18", 1)] * 40  # ~9.6 KB
    sender.submit(big)  # taken by the thread, which waits on the gate
    sender.submit(big)  # waits: 9.6 KB of 10 KB
    blocked = threading.Event()
    thread = threading.Thread(target=lambda: (sender.submit(big), blocked.set()))
    thread.start()
    assert not blocked.wait(0.3)  # the third would pass 10 KB: the save blocks
    gate.set()
    thread.join(10)
    assert blocked.is_set()
    sender.close()


class RefusingBackend:
    """Increments refused with errors other than an outage."""

    remote = True

    def __init__(self, error):
        self.error = error

    def increment_many(self, increments):
        raise self.error


def test_any_error_of_a_counter_send_is_tallied_never_raised_to_the_save():
    """NotACounter, TableNotFound, InvalidArgument: the crashes are stored, so the save returns;
    the cells are tallied in ``failures`` (synchronous and background alike)."""
    column = K.counter_column("submitted_crash_reports")
    for error in (NotACounter("not 8 bytes"), TableNotFound("metrics"), InvalidArgument("bad")):
        for background in (False, True):
            live = LiveCounters(RefusingBackend(error), background=background)
            live.send([Increment(K.METRICS, b"2016", column)] * 3)  # one cell, however they are sent
            live.send([Increment(K.METRICS, b"2017", column)])
            live.settle()
            assert live.failures["increments"] >= 2, (error, background)
            live.close()


def test_a_store_whose_counter_cell_is_no_counter_still_saves_every_crash(backend_url, backend_kind, prebuilt_tables):
    """One cell that is no counter (a 3-byte value where the day's metrics counter goes) fails
    the counter call; every save still returns and every crash is stored."""
    with open_store(backend_url) as store:
        store.create_tables()
        counted_live(store)  # live increments (the deriver replaces a cell that is no counter)
        day = K.metrics_row(BASE_TIME, "day")
        store.backend.mutate_rows(K.METRICS, [_put(day, {K.counter_column("submitted_crash_reports"): b"abc"})])
        ids = [crash_id(s) for s in "0123456789abcdef"]
        for cid in ids:
            store.save_raw_crash(raw_crash(cid), {}, cid)  # none raises
        store.flush_counters()
        assert all(store.get_raw_crash(cid)["uuid"] == cid for cid in ids)
        assert store.live_counters.failures["increments"] > 0


def _put(row, cells):
    from socorro_store.backends import RowMutation  # noqa: PLC0415

    return RowMutation(row, cells)
