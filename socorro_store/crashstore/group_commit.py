"""Group commit: concurrent one-crash calls share one batched write.

The leader/follower scheme of a database's WAL group commit.  A caller that finds no write in
flight becomes the leader and writes at once, alone: a lone caller waits for nothing (no timer,
no linger).  Callers that arrive while that write is in flight queue up; when it ends, the
leader hands the lead to the oldest of them, which writes everything queued so far (up to
``max_items`` items and ``max_bytes`` bytes) as one group.  Groups grow with load and shrink to
one when the load goes.  Under load (the lead was handed over, or the last group held more
than one item) a leader yields the processor once before it takes its group (``time.sleep(0)``,
not a timer), so that callers already running, such as those the previous group released,
queue in time to join: that doubles the group size.  A lone caller never yields.

Each caller returns only once the group holding its item has been written, with its own
outcome: the value or the exception the group writer gave for its item, or, when the group
writer itself raised, that exception (every caller of the group gets it).

One group is in flight at a time per :class:`GroupCommit`: its writes are serialised, which is
also what lets a group writer see everything the groups before it wrote.  :class:`GroupLanes`
runs several of them, one per lane, and sends each item to the lane of its key (a crash id): a
crash's groups stay serialised while groups of other crashes are in flight beside them.

Interruptions.  A caller may leave while it waits: an exception raised in its thread (Ctrl-C, a
signal-based timeout) propagates to it, and every other caller still completes.  A caller that
leaves before its group is taken is taken off the queue (its item is never written), and if the
lead had just been handed to it, it hands the lead on.  A caller that leaves once its group is
in flight cannot unwrite it: its item is written, and ``on_abandon(item, outcome)`` (if given) is
called with what it would have returned, so the owner can give back what it holds (the queue's
shared pass releases the claims won for a taker that left).  A group writer interrupted by a
``BaseException`` that is not an ``Exception`` (KeyboardInterrupt, SystemExit) re-raises it to
its own caller only; the other callers of its group get :class:`GroupWriteInterrupted`.
"""

import collections
import threading
import time
import zlib

from ..checks import is_int
from ..errors import GroupWriteInterrupted, InvalidArgument

#: Default bounds of one group: few enough crashes, and few enough bytes, for one request.
MAX_GROUP_ITEMS = 100
MAX_GROUP_BYTES = 16 * 1024 * 1024
#: Most lanes of groups in flight at once (:class:`GroupLanes`).
MAX_LANES = 64


class _Waiter:
    __slots__ = ("item", "weight", "event", "leads", "value", "error", "done", "abandoned")

    def __init__(self, item, weight):
        self.item, self.weight = item, weight
        self.event = threading.Event()
        self.leads = False
        self.value = self.error = None
        self.done = False  # its group was written (under the lock)
        self.abandoned = False  # its caller left (under the lock)

    def outcome(self):
        if self.error is not None:
            raise self.error
        return self.value


class GroupCommit:
    """Batches the items of concurrent :meth:`submit` calls into calls of ``write_group``.

    ``write_group(items)`` writes a list of items and returns one outcome per item, in order:
    a value (returned to that item's caller) or an exception instance (raised to that caller
    alone).  If ``write_group`` raises an Exception, every caller of the group gets it.
    ``groups`` and ``items`` count the groups written and the items in them.
    ``on_abandon(item, outcome)``: called once for each item whose caller left (an exception in
    its thread) after its group was taken, with the value or exception it would have got.
    """

    def __init__(self, write_group, max_items=MAX_GROUP_ITEMS, max_bytes=MAX_GROUP_BYTES, on_abandon=None):
        if not callable(write_group):
            raise InvalidArgument("write_group must be callable")
        if on_abandon is not None and not callable(on_abandon):
            raise InvalidArgument("on_abandon must be callable or None")
        self._on_abandon = on_abandon
        for name, value in (("max_items", max_items), ("max_bytes", max_bytes)):
            if not is_int(value) or value < 1:
                raise InvalidArgument(f"{name} must be a positive int")
        self._write_group = write_group
        self.max_items, self.max_bytes = max_items, max_bytes
        self.groups = self.items = 0
        self._lock = threading.Lock()
        self._queued = collections.deque()
        self._leading = False  # invariant: nothing is queued while no one leads
        self._last_group = 0

    @property
    def queued(self):
        """Callers waiting for their group (the group in flight not included)."""
        return len(self._queued)

    @property
    def busy(self):
        """True while a group is being written."""
        return self._leading

    def submit(self, item, weight=0):
        """Write ``item`` (of ``weight`` bytes) in the next group; return its outcome.

        Blocks until the item's group is written.  Raises the item's own error, or the group's.
        """
        waiter = _Waiter(item, weight)
        leads = False
        try:
            with self._lock:
                leads = not self._leading
                self._queued.append(waiter)
                waiter.leads = leads
                self._leading = True
            if not leads:
                waiter.event.wait()
            if waiter.leads:  # at the head of the queue, so the group taken below holds this item
                if not leads or self._last_group > 1:
                    # Under load, yield the processor once (not a timer), so that callers already
                    # running, such as those the last group released, queue in time to join.
                    time.sleep(0)
                self._lead()
        except BaseException:
            # Interrupted (Ctrl-C, a signal-based timeout, a failure of our own): leave without
            # stranding the callers queued behind us.
            self._leave(waiter)
            raise
        return waiter.outcome()

    def _leave(self, waiter):
        """Take an interrupted caller's waiter out: off the queue if its group was not taken (the
        lead it was handed, if any, goes to the next caller); else marked abandoned, and its
        outcome given to ``on_abandon`` once its group is written."""
        with self._lock:
            try:
                self._queued.remove(waiter)
            except ValueError:  # its group was taken: it cannot be unwritten
                waiter.abandoned = True
                report = waiter.done
            else:
                report = False
                if waiter.leads:  # handed the lead but never took a group: hand it on
                    self._hand_over()
        if report:
            self._abandoned(waiter)

    def _hand_over(self):
        """Give the lead to the oldest queued caller, or let it go (under the lock)."""
        if self._queued:  # the next leader writes what queued meanwhile
            successor = self._queued[0]
            successor.leads = True
            successor.event.set()
        else:
            self._leading = False

    def _abandoned(self, waiter):
        """Give the outcome of a caller that left to ``on_abandon`` (its failure is not ours)."""
        if self._on_abandon is not None:
            try:
                self._on_abandon(waiter.item, waiter.error if waiter.error is not None else waiter.value)
            except Exception:  # noqa: BLE001,S110 - best effort, in another caller's thread
                pass

    def _take(self):
        """Pop the next group from the head of the queue (at least one item, whatever its size)."""
        group, size = [], 0
        while self._queued and len(group) < self.max_items:
            weight = self._queued[0].weight
            if group and size + weight > self.max_bytes:
                break
            group.append(self._queued.popleft())
            size += weight
        return group

    def _lead(self):
        group = []
        try:
            with self._lock:
                group = self._take()
            interrupted = self._write(group)
        finally:  # whatever happened, the lead passes on and the group's callers are released
            with self._lock:
                self.groups += 1
                self.items += len(group)
                self._last_group = len(group)
                self._hand_over()
                for waiter in group:
                    waiter.done = True
                left = [waiter for waiter in group if waiter.abandoned]
            for waiter in group:
                waiter.event.set()
            for waiter in left:
                self._abandoned(waiter)
        if interrupted is not None:
            raise interrupted

    def _write(self, group):
        """Write ``group`` and give each waiter its outcome; return an interruption of this
        thread (a BaseException that is not an Exception) for the leader to re-raise."""
        interrupted = None
        try:
            outcomes = self._write_group([w.item for w in group])
            if len(outcomes) != len(group):
                raise RuntimeError(f"group writer gave {len(outcomes)} outcomes for {len(group)} items")
        except Exception as exc:  # noqa: BLE001 - every caller of the group gets it
            outcomes = [exc] * len(group)
        except BaseException as exc:  # noqa: BLE001 - this thread was interrupted, not the others
            interrupted = exc
            outcomes = [GroupWriteInterrupted(f"the write of this group was interrupted "
                                              f"({type(exc).__name__}); it may be partial: retry")] * len(group)
        for waiter, outcome in zip(group, outcomes):
            if isinstance(outcome, BaseException):
                waiter.error = outcome
            else:
                waiter.value = outcome
        return interrupted


class GroupLanes:
    """``lanes`` independent :class:`GroupCommit` queues: one group in flight per lane.

    An item goes to the lane its key names (``key(item)``, hashed), so items of one key, such as
    two saves of one crash, always share a lane: each still sees every earlier write of its key,
    as with one queue.  Items of different keys may be written by groups in flight at the same
    moment, which overlaps their round trips; one lane is :class:`GroupCommit` itself.
    ``groups``, ``items`` and ``queued`` add up the lanes; ``busy`` is true while any writes.
    """

    def __init__(self, write_group, lanes=1, key=None, **options):
        if not is_int(lanes) or not 1 <= lanes <= MAX_LANES:
            raise InvalidArgument(f"lanes must be an int in 1..{MAX_LANES}: {lanes!r}")
        if lanes > 1 and not callable(key):
            raise InvalidArgument("key must be callable when there are several lanes")
        self._key = key
        self.lanes = [GroupCommit(write_group, **options) for _ in range(lanes)]

    def submit(self, item, weight=0):
        """Write ``item`` in the next group of its lane; see :meth:`GroupCommit.submit`."""
        if len(self.lanes) == 1:
            return self.lanes[0].submit(item, weight)
        lane = zlib.crc32(self._key(item).encode("utf-8")) % len(self.lanes)
        return self.lanes[lane].submit(item, weight)

    @property
    def groups(self):
        return sum(lane.groups for lane in self.lanes)

    @property
    def items(self):
        return sum(lane.items for lane in self.lanes)

    @property
    def queued(self):
        return sum(lane.queued for lane in self.lanes)

    @property
    def busy(self):
        return any(lane.busy for lane in self.lanes)
