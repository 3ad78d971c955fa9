"""Exact admission into the dimension registry: a value takes one of a row's slots.

A registry row (:func:`~socorro_store.schema.dimension_keys.registry_row`) has as many slots as
its cap (``seen:/0`` … ``seen:/<cap - 1>``), each holding one admitted value.  A value arriving
live is admitted by claiming an empty slot with a single-cell check-and-put (:func:`admit`): the
check and that one cell are atomic on every backend (HBase's Thrift1 checkAndPut included), so two
processes can never take one slot, and a row never holds more values than its cap, however many
processes admit at once and however stale their cached view of the row.  The roll-up rewrites a
row to the values it admits by volume (:func:`rewrite`), replacing a slot's value with a
check-and-put on the value it read there, so an admission racing it is never written over
unseen, and the row stays within its cap throughout.

Each value starts its search at a slot of its own (a hash of the value), so processes admitting
different values rarely try the same slot, and two processes admitting the same new value at
once try the same slot first: one takes it, the other finds it there.  A value can still end up
in two slots (a process that read the row before another admitted it); that wastes a slot, never
exceeds the cap, and the next roll-up frees it.

Value columns of the form before slots (``seen:<quoted value>``) are still read as admitted, and
count against the cap: live admissions then use only the slots below the cap less their number,
and the next roll-up moves the values it keeps into slots and deletes those columns (between
its claims and that delete, the row may briefly hold both).
"""

import zlib

from ..backends.base import RowMutation
from ..errors import BackendError
from ..schema import dimension_keys as DK
from ..schema.keys import SIGNATURES_SEEN


class RegistryRow:
    """What one read of a registry row says: ``slots`` {index: stored bytes}, ``legacy``
    {column: value} (value columns of the form before slots) and ``values`` (every value
    admitted)."""

    def __init__(self, cells=None):
        self.slots, self.legacy = {}, {}
        for column, stored in (cells or {}).items():
            index = DK.parse_registry_slot(column)
            if index is not None:
                if stored:
                    self.slots[index] = stored
            elif not column.startswith(DK.SLOT_PREFIX):
                self.legacy[column] = DK.parse_registry_column(column)
        self.values = {v.decode("utf-8", "replace") for v in self.slots.values()} | set(self.legacy.values())

    def taken(self):
        """The cells holding a value: the cap bounds this, not the number of distinct values."""
        return len(self.slots) + len(self.legacy)

    def full(self, cap):
        return self.taken() >= cap

    def free_slot(self, value, cap):
        """The empty slot ``value`` would claim (its search order), or None when the row is full.

        With value columns of the older form present, only the slots below the cap less their
        number are used, so the row's cells stay within the cap whatever the claims."""
        if self.full(cap):
            return None
        limit = cap - len(self.legacy)
        return next((i for i in probe_order(value, cap) if i < limit and i not in self.slots), None)

    def add(self, index, value):
        self.slots[index] = value.encode("utf-8")
        self.values.add(value)


def probe_order(value, cap):
    """The slots ``value`` tries, in order: from a slot of its own (stable across processes)."""
    start = zlib.crc32(value.encode("utf-8")) % cap
    return [(start + k) % cap for k in range(cap)]


def read_row(backend, row):
    """A :class:`RegistryRow` of ``row`` (one read)."""
    return RegistryRow(backend.get_row(SIGNATURES_SEEN, row, columns=[b"seen"]))


def admit(backend, row, value, cap):
    """Admit ``value`` into registry ``row`` if the row has room: ``(admitted, RegistryRow
    as now read)``.

    Reads the row, then claims ``value``'s first empty slot with a check-and-put on that cell; a
    claim lost to another process reads the row again (which may now hold ``value``).  Every
    lost claim is a slot someone else took, so this ends within ``cap`` tries."""
    stored = value.encode("utf-8")
    view = read_row(backend, row)
    for _ in range(cap + 1):
        if value in view.values:
            return True, view
        index = view.free_slot(value, cap)
        if index is None:
            return False, view
        column = DK.registry_slot(index)
        if backend.check_and_put(SIGNATURES_SEEN, row, column, None, {column: stored}):
            view.add(index, value)
            return True, view
        view = read_row(backend, row)
    return value in view.values, view


def admit_many(backend, wanted):
    """Admit many values at once: ``wanted`` {row: (values in arrival order, cap)}; returns {row:
    :class:`RegistryRow` as now held, or None where a claim was lost (read the row again)}.

    One read of every row and one ``check_and_put_many`` of the slots claimed, whatever the
    number of values, instead of :func:`admit`'s read and check-and-put per value.  Values are
    admitted in order while their row has room; a claim lost to another process leaves its
    value (and those after it) to :func:`admit`."""
    found = backend.get_rows(SIGNATURES_SEEN, sorted(wanted), columns=[b"seen"])
    views, claims = {}, []
    for row, (values, cap) in wanted.items():
        view = views[row] = RegistryRow(found.get(row, {}))
        for value in values:
            if value in view.values:
                continue
            index = view.free_slot(value, cap)
            if index is None:
                break
            view.add(index, value)
            claims.append((row, DK.registry_slot(index), value))
    won = backend.check_and_put_many(SIGNATURES_SEEN, [(row, column, None, {column: value.encode("utf-8")})
                                                       for row, column, value in claims]) if claims else []
    for (row, _column, _value), applied in zip(claims, won):
        if not applied:
            views[row] = None
    return views


def _plan(view, wanted, cap):
    """``(claims, deletes)`` making ``view``'s row hold ``wanted``: claims ``[(index, value now
    there or None, value)]`` (each wanted value not in a slot, put in the slot of a value not
    wanted or an empty one, in its search order), deletes the columns left over."""
    home = {}  # value -> the slot it stays in
    for index in sorted(view.slots):
        value = view.slots[index].decode("utf-8", "replace")
        if value in wanted and value not in home:
            home[value] = index
    spare = {index for index in view.slots if index not in home.values()}
    taken = set(view.slots)
    claims = []
    for value in sorted(set(wanted) - set(home)):
        index = next((i for i in probe_order(value, cap) if i in spare or i not in taken), None)
        if index is None:
            break  # more values wanted than slots: the rest are counted, not listed
        claims.append((index, view.slots.get(index), value))
        spare.discard(index)
        taken.add(index)
    return claims, sorted([DK.registry_slot(i) for i in spare] + list(view.legacy))


def rewrite(backend, plans):
    """Make each registry row of ``plans`` ({row: (wanted values, cap)}) hold exactly its wanted
    values (at most ``cap`` of them placed), one slot each: values kept where they are, missing
    ones put in the slots of values not wanted (a check-and-put on the value found there) or in
    empty ones (a check-and-put on an empty cell), then the slots and value columns left over
    deleted.  One read, one batch of check-and-puts and one delete per round for every row.

    Live admissions may run meanwhile: they only claim empty slots, which a check-and-put here
    never overwrites (a row with a lost one is read and planned again before anything of it is
    deleted), and only this deletes, so a row never holds more than its cap of values; the slots
    freed are the reserve left to arrivals."""
    pending = dict(plans)
    rounds = max((cap for _wanted, cap in plans.values()), default=0) + 2
    for _ in range(rounds):  # each lost check-and-put is an empty slot taken meanwhile
        if not pending:
            return
        found = backend.get_rows(SIGNATURES_SEEN, sorted(pending), columns=[b"seen"])
        claims, deletes = [], {}
        for row, (wanted, cap) in pending.items():
            row_claims, deletes[row] = _plan(RegistryRow(found.get(row, {})), set(wanted), cap)
            for index, expected, value in row_claims:
                column = DK.registry_slot(index)
                claims.append((row, column, expected, {column: value.encode("utf-8")}))
        results = backend.check_and_put_many(SIGNATURES_SEEN, claims) if claims else []
        lost = {claim[0] for claim, applied in zip(claims, results) if not applied}
        mutations = [RowMutation(row, deletes=columns) for row, columns in deletes.items() if columns and row not in lost]
        if mutations:
            backend.mutate_rows(SIGNATURES_SEEN, mutations)
        pending = {row: pending[row] for row in lost}
    if pending:
        # unreachable with one roll-up at a time: only a rewrite empties a slot
        raise BackendError(f"registry rows {sorted(pending)!r}: their slots kept changing under the rewrite")
