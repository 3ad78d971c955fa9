"""Claim histories: who owns a queued crash, until when, and after how many failed attempts.

A queue row's claim cell (:func:`socorro_store.schema.queue_keys.claim_cell`) is the crash's claim
history: a sequence of msgpack records appended with HBase's Append (atomic on the row), oldest
first::

    {"processor": str, "claimed": ms, "expires": ms, "token": str}             a claim or a renewal
    {"processor": str, "claimed": ms, "expires": ms, "token": str, "released": True}   a release
    {"claimed": ms, "expires": ms, "done": True}             the crash was processed (a Put)

``token`` names one taker (one ``new_crashes()`` iterator).  Every reader of a history finds the
same lease by walking it (:func:`lease_of`):

* the first claim owns; a later claim takes over only if it was made at or after the owner's
  lease ended, so of racing appends exactly one wins;
* a record with the owner's token is a renewal (the lease ends at the later expiry) or a release
  (the lease ends now, and does not count as a failed attempt), even when it comes after the
  lease ended: as long as no other taker claimed the crash in between, its owner (a slow but
  healthy processor) still holds it, and that is no failed attempt;
* each takeover by another taker of a lease that ended without a release is one failed attempt:
  the processor died, hung, or never saved within its lease.  After ``max_attempts`` of them the crash is dead-lettered.

* a ``done`` record, which saving the crash writes over the history, ends it: nobody owns the
  crash again from that row (a scan that predates the save finds it done, not free).

A history grows by one record per claim, renewal, release and lost race, all bounded by the
crash's own processing, never by how many other crashes were processed; saving the crash
replaces it with one ``done`` record.
"""

import collections
import threading
import time
from dataclasses import dataclass, field

import msgpack

from ..schema.queue_keys import claim_cell


def now_ms():
    return int(time.time() * 1000)


def encode_claim(processor_id, claimed_ms, expires_ms, token=None, released=False):
    record = {"processor": processor_id, "claimed": claimed_ms, "expires": expires_ms}
    if token is not None:
        record["token"] = token
    if released:
        record["released"] = True
    return msgpack.packb(record)


def encode_done(at_ms):
    """The record that ends a history: the crash is processed."""
    return msgpack.packb({"claimed": at_ms, "expires": at_ms, "done": True})


def decode_claims(raw):
    """The records of a claim history, oldest first (a foreign value decodes to no records)."""
    if not raw:
        return []
    try:
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(1, len(raw)))
        unpacker.feed(raw)
        records = list(unpacker)
    except Exception:  # noqa: BLE001 - a cell this library did not write holds no claim
        return []
    return [r for r in records if isinstance(r, dict) and isinstance(r.get("claimed"), int)
            and isinstance(r.get("expires"), int)]


@dataclass(frozen=True)
class Lease:
    """The outcome of a history walk: the owning record's index, when its lease ends, whether it
    was released, and how many earlier owners' leases ended without a release."""

    owner: object  # int index into the history, or None
    expires: int = 0
    released: bool = False
    attempts: int = 0
    done: bool = False  # processed: nobody owns it again

    def token(self, claims):
        return claims[self.owner].get("token") if self.owner is not None else None

    def live(self, at_ms):
        return self.owner is not None and self.expires > at_ms


def lease_of(claims):
    """Walk a history (see the module docstring); every reader finds the same :class:`Lease`."""
    owner, expires, released, attempts = None, 0, False, 0
    for i, record in enumerate(claims):
        if record.get("done"):
            return Lease(None, attempts=attempts, done=True)
        token = record.get("token")
        if owner is not None and token is not None and token == claims[owner].get("token") \
                and (record["claimed"] < expires or not released):
            # The owner's own record: a renewal or a release, even after its lease ended (a
            # healthy slow processor renewing late): nobody claimed the crash in between, so
            # its lease continues, and an ended lease is a failed attempt only once another
            # taker takes it over.
            if record.get("released"):
                expires, released = min(expires, record["claimed"]), True
            else:
                expires = max(expires, record["expires"])
            continue
        if owner is None or record["claimed"] >= expires:
            if record.get("released"):
                continue  # a release after the lease ended gives nothing back
            if owner is not None and not released:
                attempts += 1
            owner, expires, released = i, record["expires"], False
    return Lease(owner, expires, released, attempts)


def owner_of(claims):
    """Index of the record that owns the crash in a history (None for no claims)."""
    return lease_of(claims).owner


def live_claim(claims, now_ms):  # the caller's clock reading (shadows the function here only)
    """The owning record of a history if its lease still runs at ``now_ms``, else None."""
    lease = lease_of(claims)
    return claims[lease.owner] if lease.live(now_ms) else None


@dataclass
class Held:
    """A claim a store holds: what the take learned, so saving the crash need not read it again.

    ``state`` is the crash row's processing state as :func:`states.read_states` gives it.
    """

    crash_id: str
    claim_row: bytes
    token: str
    processor_id: str
    expires: int
    state: dict = field(default_factory=dict)


class HeldClaims:
    """A store's claims not yet saved: ``crash id -> Held``.  Thread-safe.

    Entries go when their crash is saved or released; an entry whose lease ended long ago (its
    processor never saved) is dropped on the next :meth:`add`, so the map stays bounded by what is
    in flight.
    """

    def __init__(self):
        self._held = {}
        self._taking = {}  # crash id -> (token of the iterator claiming it, until when in ms)
        self._done = collections.OrderedDict()  # claim rows of crashes saved lately (bounded)
        self._lock = threading.Lock()

    def reserve(self, token, claim_rows, until_ms):
        """The ids of ``claim_rows`` (``{crash id: claim row}``) no other iterator of this store
        is claiming or holding under a live lease, and not saved lately from that same row (a
        scan can predate a sibling's save), now reserved for ``token`` until :meth:`unreserve`
        or ``until_ms`` (the end
        of the lease it is about to claim: an iterator abandoned with claims pending does not
        keep them from its siblings once the lease is over).

        Threads of one store would otherwise scan the same head of the queue and all append a
        claim to the same crashes, one losing call per thread per crash: a sibling takes the
        next crashes instead.
        """
        at = now_ms()
        with self._lock:
            free = [c for c, row in claim_rows.items()
                    if (c not in self._taking or self._taking[c][0] == token or self._taking[c][1] <= at)
                    and not (c in self._held and self._held[c].expires > at) and row not in self._done]
            for crash_id in free:
                self._taking[crash_id] = (token, until_ms)
            if len(self._taking) > 4096:  # reservations of iterators abandoned, not yet collected
                for crash_id in [c for c, (_t, until) in self._taking.items() if until <= at]:
                    del self._taking[crash_id]
            return free

    def unreserve(self, token, crash_ids):
        with self._lock:
            for crash_id in crash_ids:
                if self._taking.get(crash_id, (None,))[0] == token:
                    del self._taking[crash_id]

    def add(self, held):
        with self._lock:
            self._held[held.crash_id] = held
            if len(self._held) > 4096:
                cutoff = now_ms()
                for crash_id in [c for c, h in self._held.items() if h.expires <= cutoff]:
                    del self._held[crash_id]

    def pop_many(self, crash_ids, saving=False):
        """``{crash id: Held}`` of those held, removed from the map.

        ``saving``: they are being saved.  Their claim rows are remembered (the latest 4,096),
        so that a sibling whose scan predates the save does not claim them again; a save that
        fails gives them back with :meth:`saving_failed`.
        """
        with self._lock:
            popped = {c: self._held.pop(c) for c in crash_ids if c in self._held}
            if saving:
                for held in popped.values():
                    self._done[held.claim_row] = True
                while len(self._done) > 4096:
                    self._done.popitem(last=False)
            return popped

    def busy_here(self, claim_row, crash_id):
        """Whether this store holds the crash of queue row ``claim_row`` under a live lease, is
        claiming it, or saved it lately (a cut-over store's deriver then takes its pointer): a
        scan that finds its pointer need not read its claims or crash row, which say as much."""
        at = now_ms()
        with self._lock:
            held, taking = self._held.get(crash_id), self._taking.get(crash_id)
            return (claim_row in self._done or (held is not None and held.expires > at)
                    or (taking is not None and taking[1] > at))

    def saving_failed(self, claims):
        with self._lock:
            for held in claims:
                self._done.pop(held.claim_row, None)

    def get(self, crash_id):
        with self._lock:
            return self._held.get(crash_id)

    def discard(self, crash_ids, token=None):
        """Forget the crashes (only those claimed by ``token``, if given)."""
        with self._lock:
            for crash_id in crash_ids:
                held = self._held.get(crash_id)
                if held is not None and (token is None or held.token == token):
                    del self._held[crash_id]

    def __len__(self):
        with self._lock:
            return len(self._held)


def by_claim_row(values):
    """``{claim row: {claim column: value}}`` of ``{queue row: value}``."""
    out = {}
    for row, value in values.items():
        claim_row, column = claim_cell(row)
        out.setdefault(claim_row, {})[column] = value
    return out
