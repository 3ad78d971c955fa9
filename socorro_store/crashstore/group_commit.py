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

One group is in flight at a time per :class:`GroupCommit`: writes of one kind are serialised,
which is also what lets a group writer see everything the groups before it wrote.
"""

import collections
import threading
import time

from ..checks import is_int
from ..errors import InvalidArgument

#: Default bounds of one group: few enough crashes, and few enough bytes, for one request.
MAX_GROUP_ITEMS = 100
MAX_GROUP_BYTES = 16 * 1024 * 1024


class _Waiter:
    __slots__ = ("item", "weight", "event", "leads", "value", "error")

    def __init__(self, item, weight):
        self.item, self.weight = item, weight
        self.event = threading.Event()
        self.leads = False
        self.value = self.error = None

    def outcome(self):
        if self.error is not None:
            raise self.error
        return self.value


class GroupCommit:
    """Batches the items of concurrent :meth:`submit` calls into calls of ``write_group``.

    ``write_group(items)`` writes a list of items and returns one outcome per item, in order:
    a value (returned to that item's caller) or an exception instance (raised to that caller
    alone).  If ``write_group`` raises, every caller of the group gets the exception.
    ``groups`` and ``items`` count the groups written and the items in them.
    """

    def __init__(self, write_group, max_items=MAX_GROUP_ITEMS, max_bytes=MAX_GROUP_BYTES):
        if not callable(write_group):
            raise InvalidArgument("write_group must be callable")
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
        with self._lock:
            self._queued.append(waiter)
            leads = waiter.leads = not self._leading
            self._leading = True
        if not leads:
            waiter.event.wait()
        if waiter.leads:  # at the head of the queue, so the group taken below holds this item
            if not leads or self._last_group > 1:
                # Under load, yield the processor once (not a timer), so that callers already
                # running, such as those the last group released, queue in time to join.
                time.sleep(0)
            self._lead()
        return waiter.outcome()

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
        with self._lock:
            group = self._take()
        try:
            self._write(group)
        finally:
            with self._lock:
                self.groups += 1
                self.items += len(group)
                self._last_group = len(group)
                if self._queued:  # hand over: the next leader writes what queued meanwhile
                    successor = self._queued[0]
                    successor.leads = True
                    successor.event.set()
                else:
                    self._leading = False
            for waiter in group:
                waiter.event.set()

    def _write(self, group):
        try:
            outcomes = self._write_group([w.item for w in group])
            if len(outcomes) != len(group):
                raise RuntimeError(f"group writer gave {len(outcomes)} outcomes for {len(group)} items")
        except BaseException as exc:  # noqa: BLE001 - every caller of the group gets it
            outcomes = [exc] * len(group)
        for waiter, outcome in zip(group, outcomes):
            if isinstance(outcome, BaseException):
                waiter.error = outcome
            else:
                waiter.value = outcome
