"""The processing queues: salted merged scans, and claims with leases on the queue rows.

Three queues, each a salted time index whose rows point at crashes (``ids:ooid``):

=========  ==============================================  ====================================
queue      table                                           row key (:mod:`socorro_store.schema.keys`)
=========  ==============================================  ====================================
standard   crash_reports_index_unprocessed_flag            salt + submitted time + crash id
legacy     crash_reports_index_legacy_unprocessed_flag     salt + submitted time + crash id
priority   crash_reports_index_unprocessed_flag            ``priority/`` + salt + request time + id
=========  ==============================================  ====================================

Taking work (:func:`take`) yields crash ids in submission (or request) order across the 16 salt
buckets, holding at most 16 pages of rows (:func:`queue_rows`).  A queue that keeps up is short,
so it is first read with one scan over all buckets and sorted in memory: one scanner instead of
sixteen (3 round trips instead of 48 on HBase's Thrift1).  A longer queue is read by merging the
16 paged bucket scans with :func:`heapq.merge`.

Claims are kept beside the queue rows (:mod:`socorro_store.schema.queue_keys`): a crash's claim
history is a cell named after its claim's queue row (its standard queue row, whether it was taken
from the standard or the legacy queue, so a crash in both is processed once; or its priority row)
in a claim row shared by the queue rows of one minute.  A claim costs what its own group costs,
never what other crashes left behind: an Append reads only its own cells, and a claim row holds
one minute of crashes.  Saving a crash deletes its queue rows and ends its history with a
``done`` record in the same call.  A crash with a pending priority request is left to the
priority queue (processing it there dequeues it everywhere).

Taking a group of crashes costs, whatever the group's size:

1. the scan of the queue rows (``ids:ooid``, and the dead-letter mark, so dead-lettered crashes
   are skipped);
2. one read of the group's claim cells: crashes under a live lease are skipped (the legacy
   queue, whose claims are on the standard rows, reads those rows in the same call);
3. one read of the group's crash rows: a pointer is written before its crash row, so a pointer
   without one is a save in flight and is skipped; the state read here (submitted time, legacy,
   priority request, signature) is kept for the save, which then reads nothing;
4. one ``append_many``: a claim record appended to each crash's history, one Append per claim
   row (the group's crashes sit side by side in the queue, so one or two).  An Append is atomic
   on its row, so every racer reads a history with its claim placed, and exactly one finds it
   owns; a history that is done belongs to a crash processed since the scan, which is dropped.

Steps 2 and 3 are independent reads, sent at once (``Backend.overlap``: one round trip on the
critical path, two calls).  They read twice as many crashes as the pass's takers still want (a
page at most).

A taker holds its claims until it yields them; before yielding, if less than half the lease is
left, it renews every claim it still holds (yielded but unsaved ones too) in one ``append_many``,
and drops any it lost: it never yields a crash another processor holds.  Closing the iterator (or
its garbage collection) releases the claims it never yielded.  A claim whose lease ended without
a save or release is a failed attempt; after ``max_attempts`` of them the crash is dead-lettered
(:func:`dead_lettered_crashes`) instead of being handed out again, until ``enqueue_priority``.
"""

import itertools
import logging
import os
import socket
import threading
import time
import uuid

from ..backends.base import RowMutation
from ..checks import is_int, is_number
from ..errors import BackendError, BackendUnavailable, InvalidArgument
from ..schema.keys import (
    COL_OOID,
    COL_SUBMITTED,
    CRASH_REPORTS,
    LEGACY_UNPROCESSED_FLAG,
    PRIORITY_PREFIX,
    UNPROCESSED_FLAG,
    crash_row_key,
    parse_key_timestamp,
    priority_key,
)
from ..schema.queue_keys import COL_DEAD, claim_cell
from .dead_letters import (  # noqa: F401 - re-exported: the queue's dead-letter list
    dead_letter,
    dead_lettered_crashes,
    put_if_crash_exists,
    read_dead_letter_cells,
)
from .group_commit import GroupCommit
from .claims import (  # noqa: F401 - the claim vocabulary, re-exported for callers of the queue
    Held,
    HeldClaims,
    by_claim_row,
    decode_claims,
    encode_claim,
    encode_done,
    lease_of,
    live_claim,
    now_ms,
    owner_of,
)
from .queue_scans import (  # noqa: F401 - re-exported: how the queue is read
    DEFAULT_PAGE_SIZE,
    DEFAULT_RESCAN_SECONDS,
    EmptyPollGate,
    merged_scan,
    queue_rows,
    readable_rows,
)
from .states import STATE_COLUMNS, crash_state, out_of_queue

#: queue name -> (table, row prefix before the salt)
QUEUES = {
    "standard": (UNPROCESSED_FLAG, b""),
    "legacy": (LEGACY_UNPROCESSED_FLAG, b""),
    "priority": (UNPROCESSED_FLAG, PRIORITY_PREFIX),
}
DEFAULT_LEASE_SECONDS = 300
DEFAULT_MAX_ATTEMPTS = 3
CLAIM_GROUP = 16  # claims per call when the caller gave no limit
MAX_TAKERS_PER_GROUP = 64  # takers served by one shared claim
_SCAN_COLUMNS = [COL_OOID, COL_DEAD]
_log = logging.getLogger("socorro_store")


def queue_table(queue):
    """``(table, prefix)`` of a queue name; InvalidArgument for an unknown one."""
    try:
        return QUEUES[queue]
    except (KeyError, TypeError):
        raise InvalidArgument(f"unknown queue {queue!r}: expected standard, legacy or priority") from None


def default_processor_id():
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def take(backend, limit=None, queue="standard", processor_id=None, lease_seconds=DEFAULT_LEASE_SECONDS,
         page_size=DEFAULT_PAGE_SIZE, max_attempts=DEFAULT_MAX_ATTEMPTS, held=None, queue_pass=None):
    """Claim crashes from ``queue`` in order; return an iterator of crash ids.

    Arguments are validated now; rows are scanned and claimed lazily, a group at a time, as the
    caller iterates.  ``limit`` caps the number of claims; without one, groups of
    :data:`CLAIM_GROUP`.  Each crash yielded is owned by the caller when it is yielded, with at
    least half a lease left; it is recorded in ``held`` (a :class:`HeldClaims`) until saved.
    ``max_attempts``: expired claims after which a crash is dead-lettered.  ``queue_pass``: the
    :class:`QueuePass` of ``queue`` shared by the iterators of one store (else a pass of its own).
    """
    queue_table(queue)
    if limit is not None and (not is_int(limit) or limit < 0):
        raise InvalidArgument(f"limit must be a non-negative int or None: {limit!r}")
    if not is_number(lease_seconds) or not lease_seconds > 0:
        raise InvalidArgument(f"lease_seconds must be a positive number: {lease_seconds!r}")
    if not is_int(max_attempts) or max_attempts < 1:
        raise InvalidArgument(f"max_attempts must be a positive int: {max_attempts!r}")
    if processor_id is None:
        processor_id = default_processor_id()
    elif not isinstance(processor_id, str) or not processor_id:
        raise InvalidArgument(f"processor_id must be a non-empty string: {processor_id!r}")
    if queue_pass is None:
        if limit is not None:
            page_size = max(1, min(page_size, limit * 2))
        queue_pass = QueuePass(backend, queue, page_size)
    elif queue_pass.queue != queue:
        raise InvalidArgument(f"a pass of queue {queue_pass.queue!r} cannot take from {queue!r}")
    taker = Taker(backend, processor_id, max(1, int(lease_seconds * 1000)), max_attempts,
                  HeldClaims() if held is None else held)
    return taker.run(queue_pass, limit)


class Taker:
    """One ``new_crashes()`` iterator: its token, and the claims it holds."""

    def __init__(self, backend, processor_id, lease_ms, max_attempts, held):
        self.backend, self.processor_id = backend, processor_id
        self.lease_ms, self.max_attempts, self.held = lease_ms, max_attempts, held
        self.token = uuid.uuid4().hex
        self.created = time.monotonic()
        self.exhausted = False  # the pass it took from ran out: its iteration ends

    def run(self, queue_pass, limit):
        pending, yielded, taken = [], [], 0  # claimed not yet yielded; yielded (maybe unsaved)
        try:
            if limit == 0:
                return
            while limit is None or taken < limit:
                if not pending:
                    if self.exhausted:
                        return
                    want = CLAIM_GROUP if limit is None else min(queue_pass.page_size, limit - taken)
                    pending = queue_pass.take(self, want)
                    continue
                if pending[0].expires - now_ms() < self.lease_ms // 2:
                    unsaved = [h for h in yielded if self.held.get(h.crash_id) is h]
                    kept = {id(h) for h in self.renew(unsaved + pending)}
                    yielded = [h for h in unsaved if id(h) in kept]
                    self.held.unreserve(self.token, [h.crash_id for h in pending if id(h) not in kept])
                    pending = [h for h in pending if id(h) in kept]
                    continue
                claim = pending.pop(0)
                self.held.add(claim)
                self.held.unreserve(self.token, [claim.crash_id])
                yielded.append(claim)
                taken += 1
                yield claim.crash_id
        finally:
            if pending:
                self.held.unreserve(self.token, [h.crash_id for h in pending])
                try:
                    release(self.backend, pending)
                except (BackendUnavailable, BackendError):
                    pass  # their leases run out instead

    def judge(self, row, crash_id, state, history):
        """``(Held or None, dead letter or None, cleanup or None)`` of a claim this taker appended."""
        lease = lease_of(history)
        if lease.done:
            return None, None, RowMutation(row, delete_row=True)  # processed since the scan
        if lease.token(history) != self.token:
            return None, None, None
        if lease.attempts >= self.max_attempts:
            return None, (row, crash_id, lease.attempts, state.get("processed_flag")), None
        return Held(crash_id, row, self.token, self.processor_id, lease.expires, state), None, None

    def renew(self, claims):
        """Extend the leases of ``claims`` in one append per claim row; return those still owned."""
        if not claims:
            return []
        at = now_ms()
        record = encode_claim(self.processor_id, at, at + self.lease_ms, self.token)
        histories = append_claims(self.backend, {h.claim_row: record for h in claims})
        kept, lost, cleanup = [], [], []
        for claim in claims:
            renewed, _dead, leftover = self.judge(claim.claim_row, claim.crash_id, claim.state,
                                                  histories[claim.claim_row])
            if renewed is not None:
                claim.expires = renewed.expires
                kept.append(claim)
            else:  # taken over, processed (its leftover row goes), or out of attempts
                lost.append(claim.crash_id)
                if leftover is not None:
                    cleanup.append(leftover)
        self.held.discard(lost, self.token)
        if cleanup:
            self.backend.mutate_rows(UNPROCESSED_FLAG, cleanup)
        return kept


class QueuePass:
    """One pass over a queue, shared by the takers (``new_crashes()`` iterators) of one store.

    Takers of one store that want a group while another is being claimed wait for it, and the
    next group is claimed for all of them at once (:class:`~.group_commit.GroupCommit`): one read
    of the pass's next crashes, and one ``append_many`` whose records name each crash's own taker.
    So processor threads polling one store's queue cost one take between them, not one each,
    and they never read the same head of the queue twice.  The pass is one scan of the queue in
    order (:func:`candidates`); a group holding a taker created after the pass began starts a
    new one (so every taker sees the queue from its head as it was when it asked), and the
    takers of a group that runs the pass out stop there (their iterations end).
    """

    def __init__(self, backend, queue, page_size=DEFAULT_PAGE_SIZE, rescan_seconds=DEFAULT_RESCAN_SECONDS,
                 settle_counters=None, held=None):
        self.backend, self.queue, self.page_size = backend, queue, page_size
        self.held = held  # the store's HeldClaims: the pointers of its crashes in flight are skipped unread
        #: lets an empty poll end on one read of the queue counters (:class:`EmptyPollGate`)
        self.empty_polls = EmptyPollGate(backend, queue, rescan_seconds, settle_counters)
        self._candidates = None
        self._began = None  # time.monotonic() when the pass's scan began
        # crashes asked for inside take(), and assigned so far: their difference sizes the reads
        self._asked, self._asked_lock, self._assigned = 0, threading.Lock(), 0
        self._groups = GroupCommit(self._take_group, max_items=MAX_TAKERS_PER_GROUP, on_abandon=self._give_back)

    def take(self, taker, want):
        """The :class:`Held` claims of the next group for ``taker`` (up to ``want``), in order.

        A caller interrupted while it waits (Ctrl-C, a signal-based timeout) leaves at once, and
        the other takers still get their groups; claims already won for it are given back
        (:meth:`_give_back`), so they are neither held by nobody nor counted as failed attempts.
        """
        with self._asked_lock:
            self._asked += want
        try:
            return self._groups.submit((taker, want))
        finally:
            with self._asked_lock:
                self._asked -= want

    def _demand(self):
        """Crashes still wanted by the takers in :meth:`take` (at least one)."""
        return max(1, self._asked - self._assigned)

    def _give_back(self, request, outcome):
        """Release the claims won for a taker whose caller left while its group was claimed."""
        taker, _want = request
        if isinstance(outcome, BaseException) or not outcome:
            return
        taker.held.unreserve(taker.token, [claim.crash_id for claim in outcome])
        try:
            release(self.backend, outcome)
        except (BackendUnavailable, BackendError):
            pass  # their leases run out instead

    def close(self):
        if self._candidates is not None:
            self._candidates.close()
            self._candidates = None

    def _take_group(self, requests):
        """Assign the pass's next crashes to the takers of ``requests`` (``[(taker, want)]``), in
        order, each reserved in its taker's store first; claim them all in one call."""
        wants = [(taker, want, []) for taker, want in requests if not taker.exhausted]
        try:
            self._assign([w for w in wants if w[1] > 0])
            claimed = claim_groups(self.backend, self.queue, [(taker, got) for taker, _want, got in wants if got])
        except BaseException:
            for taker, _want, got in wants:  # give the reservations back: a retry finds them free
                taker.held.unreserve(taker.token, [crash_id for _row, crash_id, _state in got])
            raise
        by_taker = {id(taker): won for taker, won in claimed}
        return [by_taker.get(id(taker), []) for taker, _want in requests]

    def _assign(self, open_wants):
        """Fill ``[(taker, want, got)]`` in order from the pass, reserving each crash for its taker
        (a crash a sibling iterator claims or holds is skipped).  A taker created after the pass
        began gets a new pass (it sees the queue from its head, as it was when it asked), so
        every taker of the group is older than the pass, and when the pass runs out their
        iterations end."""
        if self._candidates is not None and any(taker.created > self._began for taker, _w, _g in open_wants):
            self.close()
        seen = set()
        self._assigned = 0
        while open_wants:
            if self._candidates is None:
                if self.empty_polls.looks_empty():  # the counters' one read, instead of a scan
                    self._run_out(open_wants)
                    return
                self.empty_polls.note_scan()
                self._began = time.monotonic()
                self._candidates = candidates(self.backend, self.queue, self.page_size, self._demand,
                                              skip=None if self.held is None else self.held.busy_here)
            try:
                item = next(self._candidates, None)
            except BaseException:
                self._candidates = None  # a failed read ends the pass; the next group starts anew
                self.empty_polls.note_scan_failed()
                raise
            if item is None:
                self._candidates = None
                self._run_out(open_wants)
                return
            row, crash_id, _state = item
            if crash_id in seen:
                continue
            seen.add(crash_id)
            taker, want, got = open_wants[0]
            if taker.held.reserve(taker.token, {crash_id: row}, now_ms() + taker.lease_ms):
                got.append(item)
                self._assigned += 1
                if len(got) == want:
                    open_wants.pop(0)

    @staticmethod
    def _run_out(open_wants):
        for taker, _want, _got in open_wants:
            taker.exhausted = True


def claim_groups(backend, queue, groups):
    """Claim ``[(taker, [(queue row, crash id, state)])]`` (reserved for their takers) in one
    ``append_many``; return ``[(taker, [Held won, in order])]``."""
    if not groups:
        return []
    at = now_ms()
    records = {}
    for taker, group in groups:
        record = encode_claim(taker.processor_id, at, at + taker.lease_ms, taker.token)
        for row, _crash_id, _state in group:
            records[row] = record
    histories = append_claims(backend, records)
    out, dead, cleanup = [], [], []
    for taker, group in groups:
        won = []
        for row, crash_id, state in group:
            held, dead_letter_item, leftover = taker.judge(row, crash_id, state, histories[row])
            if held is not None:
                won.append(held)
            if dead_letter_item is not None:
                dead.append(dead_letter_item)
            if leftover is not None:
                cleanup.append(leftover)
        taker.held.unreserve(taker.token, {c for _r, c, _s in group} - {h.crash_id for h in won})
        out.append((taker, won))
    if dead or cleanup:
        dead_letter(backend, queue, dead, cleanup)
    return out


def candidates(backend, queue, page_size, demand=None, skip=None):
    """``(queue row, crash id, state)`` of the queue's crashes that look free, in order.

    Pointers are checked (claims, then crash rows) a batch at a time: of ``page_size``, or with
    ``demand`` (how many crashes the takers still want) of twice that, each batch at least twice
    the one before: a ``limit=1`` take reads two, and a held head is passed in a few reads.
    A pointer for which ``skip(row, crash id)`` is true (a crash this store holds, claims or
    saved lately: :meth:`~.claims.HeldClaims.busy_here`) is passed over unread.
    """
    table, prefix = queue_table(queue)
    rows = queue_rows(backend, table, prefix, columns=_SCAN_COLUMNS, page_size=page_size)
    pointers = ((row, cells[COL_OOID]) for row, cells in rows
                if cells.get(COL_OOID) and not cells.get(COL_DEAD)  # no ooid: half-deleted, repair's job
                and not (skip is not None and skip(row, cells[COL_OOID].decode("ascii", "replace"))))
    size = page_size if demand is None else _growing(page_size, demand)
    for batch in _batches(pointers, size):
        # the claims and the crash rows are read at once (one round trip instead of two); the
        # rows of crashes found claimed are read for nothing, which costs bytes, not a call
        free, found = backend.overlap([lambda: unclaimed(backend, queue, batch),
                                       lambda: _crash_cells_by_id(backend, [raw_id for _row, raw_id in batch])])
        ready, leftovers = [], []
        for row, raw_id in free:
            cells = found.get(raw_id)
            if cells is None:
                continue  # no crash row yet: a save in flight
            crash_id = raw_id.decode("ascii")
            try:  # a crash row whose cells no format describes is skipped, not fatal to the queue
                state = crash_state(cells, crash_id)
                requested = parse_key_timestamp(state["priority"]) if state["priority"] else None
            except InvalidArgument as exc:
                _log.warning("skipped crash %s in the %s queue: unreadable crash row (%s)", crash_id, queue, exc)
                continue
            if queue == "priority":
                if requested is None or priority_key(crash_id, requested) != row:
                    continue  # a stale request: scrutiny's orphan
            elif state["priority"]:
                continue  # requested again: the priority queue hands it out (and dequeues it here)
            elif out_of_queue(state):
                # processed, and no lease is live: the clean-up that should have taken this
                # pointer never came (a save that failed after its row, a deriver gone longer
                # than a lease): the take does it, idempotent beside a late one
                leftovers.append(RowMutation(row, delete_row=True))
                continue
            ready.append((row, crash_id, state))
        if leftovers:
            backend.mutate_rows(table, leftovers)
        yield from ready


def unclaimed(backend, queue, batch):
    """The ``(queue row, crash id)`` of ``batch`` whose claims show no live lease, in one read.

    A legacy crash is claimed on its standard row (same key), which must still be queued and
    not dead-lettered: it is read in the same call.  A row whose history is done is a
    processed crash's leftover (a scan older than the save, or a save whose row delete
    failed): it is deleted.
    """
    at = now_ms()
    legacy = queue == "legacy"
    histories, found = read_claims(backend, [row for row, _id in batch], queue_cells=legacy)
    free, leftovers = [], []
    for row, raw_id in batch:
        standard = found.get(row, {})
        if legacy and (not standard.get(COL_OOID) or standard.get(COL_DEAD)):
            continue
        lease = lease_of(histories[row])
        if lease.done:
            leftovers.append(RowMutation(row, delete_row=True))
        elif not lease.live(at):
            free.append((row, raw_id))
    if leftovers:
        backend.mutate_rows(UNPROCESSED_FLAG, leftovers)
    return free


def read_claims(backend, rows, queue_cells=False, other_rows=(), other_columns=()):
    """``({queue row: claim history}, cells)`` of queue rows ``rows``, in one read of their claim
    rows.  ``queue_cells``: the rows' own ``ids:ooid`` and dead-letter cells are read in the same
    call, and so are ``other_columns`` of ``other_rows`` (of the same table); ``cells`` maps each
    row read to its cells."""
    if not rows and not other_rows:
        return {}, {}
    cells_of = {row: claim_cell(row) for row in rows}
    wanted = {claim_row for claim_row, _column in cells_of.values()} | set(other_rows)
    columns = {column for _claim_row, column in cells_of.values()} | set(other_columns)
    if queue_cells:
        wanted.update(rows)
        columns.update((COL_OOID, COL_DEAD))
    found = backend.get_rows(UNPROCESSED_FLAG, sorted(wanted), columns=sorted(columns))
    return ({row: decode_claims(found.get(claim_row, {}).get(column)) for row, (claim_row, column) in cells_of.items()},
            found)


def append_claims(backend, records):
    """Append ``{queue row: record}`` to the rows' claim histories: one atomic Append per claim
    row, so a group taken from the head of a queue costs one or two.  Returns ``{queue row:
    history}`` as the Appends left them, in ``records``' order."""
    appends = by_claim_row(records)
    results = dict(zip(appends, backend.append_many(UNPROCESSED_FLAG, list(appends.items()))))
    cells_of = {row: claim_cell(row) for row in records}
    return {row: decode_claims(results[claim_row].get(column)) for row, (claim_row, column) in cells_of.items()}


def _growing(page_size, demand):
    """Batch sizes for :func:`candidates`: twice the demand, at least twice the previous batch,
    at most ``page_size``."""
    last = 1

    def size():
        nonlocal last
        last = min(page_size, max(2 * demand(), 2 * last))
        return last
    return size


def _batches(items, size):
    """Lists of ``size`` items (``size``: a number, or a callable asked before each batch)."""
    while True:
        batch = list(itertools.islice(items, size() if callable(size) else size))
        if not batch:
            return
        yield batch


def release(backend, claims):
    """Give back :class:`Held` claims (not processed, not a failed attempt), one call."""
    if not claims:
        return 0
    at = now_ms()
    append_claims(backend, {h.claim_row: encode_claim(h.processor_id, at, at, h.token, released=True)
                            for h in claims})
    return len(claims)


def with_crash_rows(backend, items, crash_id_of, chunk=DEFAULT_PAGE_SIZE, columns=(COL_OOID,), accept=None):
    """Pass through the items whose crash row exists, checking ``chunk`` of them per call.

    Pointers are written before the crash row, so a reader can meet a pointer whose crash is
    still being written (or whose write failed): such pointers are skipped, never claimed.
    ``accept(cells)``, given the crash row's ``columns``, can also reject a stale pointer.
    """
    for item, cells in _found_crash_rows(backend, items, crash_id_of, chunk, columns):
        if cells is not None and (accept is None or accept(cells)):
            yield item


def _crash_row(crash_id):
    """The crash row key of a pointer's crash id; None for a pointer that holds garbage."""
    try:
        return crash_row_key(crash_id.decode("ascii") if isinstance(crash_id, bytes) else crash_id)
    except (InvalidArgument, UnicodeDecodeError):
        return None


def _crash_cells_by_id(backend, raw_ids):
    """``{raw crash id: state cells}`` of the crashes of ``raw_ids`` whose row exists, one read."""
    return {raw_id: cells for raw_id, cells in _found_crash_rows(backend, iter(raw_ids), lambda raw_id: raw_id,
                                                                 max(1, len(raw_ids)), STATE_COLUMNS)
            if cells is not None and COL_SUBMITTED in cells}


def _found_crash_rows(backend, items, crash_id_of, chunk, columns):
    """``(item, crash row cells or None)`` for each item whose crash id is valid; one multi-row
    read per ``chunk`` items."""
    while True:
        batch = list(itertools.islice(items, chunk))
        if not batch:
            return
        keyed = [(_crash_row(crash_id_of(item)), item) for item in batch]
        keyed = [(row, item) for row, item in keyed if row is not None]
        found = backend.get_rows(CRASH_REPORTS, [row for row, _item in keyed], columns=list(columns))
        for row, item in keyed:
            yield item, found.get(row)

