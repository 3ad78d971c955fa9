"""Issue 21, defect 4: a caller interrupted while it waits in a group commit (or in the queue's
shared pass) leaves cleanly, and every other caller still completes.

The interruption is a real signal delivered to the main thread while it blocks in ``submit``:
a signal-based timeout, as a caller would arm one.  No timing assertions: threads are sequenced
with events and by watching the queue of waiters; a join that outlives its generous timeout
fails the test (the hang this guards against).
"""

import signal
import threading

import pytest
from store_helpers import crash_id, raw_crash

from socorro_store.crashstore.group_commit import GroupCommit
from socorro_store.errors import GroupWriteInterrupted

JOIN_S = 60  # generous: only a hang gets near it
INTERRUPT = signal.SIGUSR1


class Interrupted(BaseException):
    """What a signal-based timeout raises in the waiting thread."""


@pytest.fixture
def interruptible():
    """The main thread raises :class:`Interrupted` on SIGUSR1; ``interrupt()`` sends it."""
    assert threading.current_thread() is threading.main_thread()

    def handler(_signum, _frame):
        raise Interrupted()

    previous = signal.signal(INTERRUPT, handler)
    main = threading.main_thread().ident
    yield lambda: signal.pthread_kill(main, INTERRUPT)
    signal.signal(INTERRUPT, previous)


def wait_until(condition, what):
    """Wait (on an event with a timeout, so no busy loop) until ``condition()``; fail on a hang."""
    tick = threading.Event()
    for _ in range(JOIN_S * 100):
        if condition():
            return
        tick.wait(0.01)
    pytest.fail(f"never happened: {what}")


class Writer:
    """A group writer whose first group blocks until ``gate`` opens; records every group."""

    def __init__(self, fail_on=None):
        self.groups, self.started, self.gate = [], threading.Event(), threading.Event()
        self.fail_on = fail_on

    def __call__(self, items):
        self.groups.append(list(items))
        if len(self.groups) == 1:
            self.started.set()
            assert self.gate.wait(JOIN_S), "the test never opened the gate"
        if self.fail_on in items:
            raise Interrupted()
        return [f"wrote {item}" for item in items]


def caller(group_commit, item, outcomes):
    def run():
        try:
            outcomes[item] = group_commit.submit(item)
        except BaseException as exc:  # noqa: BLE001 - each caller's own outcome is the point
            outcomes[item] = exc
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def join_all(threads):
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(t.is_alive() for t in threads), "a caller hung"


def test_a_waiting_caller_interrupted_leaves_and_the_callers_behind_it_complete(interruptible):
    writer = Writer()
    commit = GroupCommit(writer)
    outcomes = {}
    leader = caller(commit, "a", outcomes)
    assert writer.started.wait(JOIN_S)
    behind = []

    def sequence():  # once the main thread waits, queue "b" behind it, then interrupt it
        wait_until(lambda: commit.queued == 1, "the main thread queued")
        behind.append(caller(commit, "b", outcomes))
        wait_until(lambda: commit.queued == 2, "b queued behind the main thread")
        interruptible()

    helper = threading.Thread(target=sequence, daemon=True)
    helper.start()
    with pytest.raises(Interrupted):
        commit.submit("m")
    helper.join(JOIN_S)
    assert commit.queued == 1  # the interrupted caller is off the queue
    writer.gate.set()
    join_all([leader, *behind])
    assert outcomes == {"a": "wrote a", "b": "wrote b"}
    assert writer.groups == [["a"], ["b"]]  # the interrupted caller's item was never written
    assert not commit.busy and commit.queued == 0
    assert commit.submit("c") == "wrote c"  # and the commit still works


def test_a_caller_interrupted_while_its_group_is_in_flight_has_its_outcome_handed_to_on_abandon(interruptible):
    abandoned = []
    writer = Writer()
    second_started, second_gate = threading.Event(), threading.Event()
    first_write = writer.__call__

    def write(items):
        if writer.groups:  # the second group: block until the main thread was interrupted
            writer.groups.append(list(items))
            second_started.set()
            assert second_gate.wait(JOIN_S)
            return [f"wrote {item}" for item in items]
        return first_write(items)

    commit = GroupCommit(write, on_abandon=lambda item, outcome: abandoned.append((item, outcome)))
    outcomes = {}
    leader = caller(commit, "a", outcomes)
    assert writer.started.wait(JOIN_S)
    behind = []

    # "b" queues, then the main thread: group two is [b, m], led by b's thread
    behind.append(caller(commit, "b", outcomes))
    wait_until(lambda: commit.queued == 1, "b queued")

    def sequence():
        wait_until(lambda: commit.queued == 2, "the main thread queued behind b")
        writer.gate.set()
        assert second_started.wait(JOIN_S)
        interruptible()

    helper = threading.Thread(target=sequence, daemon=True)
    helper.start()
    with pytest.raises(Interrupted):
        commit.submit("m")
    helper.join(JOIN_S)
    assert abandoned == []  # its group is still being written
    second_gate.set()
    join_all([leader, *behind])
    assert writer.groups == [["a"], ["b", "m"]]
    assert outcomes == {"a": "wrote a", "b": "wrote b"}
    assert abandoned == [("m", "wrote m")]  # written regardless: its owner can give it back
    assert not commit.busy and commit.submit("c") == "wrote c"


def test_a_group_writer_interrupted_fails_only_its_group_with_a_typed_error():
    writer = Writer(fail_on="x")
    commit = GroupCommit(writer)
    outcomes = {}
    first = caller(commit, "a", outcomes)
    assert writer.started.wait(JOIN_S)
    queued = [caller(commit, "x", outcomes)]
    wait_until(lambda: commit.queued == 1, "x queued")
    queued.append(caller(commit, "y", outcomes))
    wait_until(lambda: commit.queued == 2, "y queued")
    writer.gate.set()
    join_all([first, *queued])
    later = {}
    join_all([caller(commit, "z", later)])
    assert outcomes["a"] == "wrote a" and later == {"z": "wrote z"}
    assert writer.groups[1] == ["x", "y"]
    assert isinstance(outcomes["x"], Interrupted)  # the interrupted leader alone gets its interruption
    assert isinstance(outcomes["y"], GroupWriteInterrupted)


def test_a_taker_interrupted_while_waiting_for_the_shared_pass_strands_no_one(store, interruptible):
    ids = [crash_id(s) for s in "0123"]
    for cid in ids:
        store.save_raw_crash(raw_crash(cid), {}, cid)
    groups = store.queue_passes["standard"]._groups
    gate, started = threading.Event(), threading.Event()
    take_group = groups._write_group

    def slow_first(requests, calls=[]):  # noqa: B006 - counts the groups of this test
        calls.append(1)
        if len(calls) == 1:
            started.set()
            assert gate.wait(JOIN_S)
        return take_group(requests)

    groups._write_group = slow_first
    got = {}

    def take(name, limit):
        got[name] = list(store.new_crashes(limit=limit, processor_id=name))

    first = threading.Thread(target=take, args=("p1", 1), daemon=True)
    first.start()
    assert started.wait(JOIN_S)
    behind = []

    def sequence():
        wait_until(lambda: groups.queued == 1, "the main thread queued for the pass")
        behind.append(threading.Thread(target=take, args=("p2", 1), daemon=True))
        behind[0].start()
        wait_until(lambda: groups.queued == 2, "p2 queued behind it")
        interruptible()

    helper = threading.Thread(target=sequence, daemon=True)
    helper.start()
    with pytest.raises(Interrupted):
        list(store.new_crashes(limit=1, processor_id="main"))
    helper.join(JOIN_S)
    gate.set()
    join_all([first, *behind])
    assert len(got["p1"]) == 1 and len(got["p2"]) == 1 and got["p1"] != got["p2"]
    # nothing is held for the interrupted taker: the other two crashes are free to take now
    assert sorted(store.new_crashes(limit=4, processor_id="after")) == sorted(set(ids) - set(got["p1"] + got["p2"]))
