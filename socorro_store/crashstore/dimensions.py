"""The cardinality cap of the dimensioned counters: which product, version and OS values are
counted under their own name, and which as ``##other##``.

The registry (rows ``~dimensions/product``, ``~dimensions/os`` and ``~dimensions/version/<product>``
of ``crash_report_signatures_seen``, one slot ``seen:/<i>`` per admitted value, ``i`` below the
cap: :mod:`.admission`) holds at most :data:`DIMENSION_CAPS` values per row.  Who decides what it
holds:

* **Volume, by ``rollup``** (:mod:`socorro_store.jobs.registry`): each run ranks the values by
  their crashes over the last :data:`~socorro_store.jobs.registry.WINDOW_DAYS` days and
  rewrites the rows: the most crashed values, up to the cap less a reserve (a tenth of it), plus
  the products an operator keeps.  A value no crash used in the window leaves (old versions age
  out), and the days it recounts are counted under the new registry, so a value admitted by
  arrival and not by volume is fixed.
* **Arrival, between runs** (:class:`Dimensions`): a value not in the registry is admitted while
  its row has room (the reserve), else counted as ``##other##`` until the next ``rollup``.
  Admission takes one of the row's slots with a check-and-put (:mod:`.admission`), so the row
  never holds more than its cap, whatever the number of processes saving at once.  Junk product
  names fill the reserve, not the registry: the products with volume stay.
* **The operator**: :func:`keep_products` names products always admitted, whatever their
  volume (``socorro-store dimensions keep``, or a file of names).
"""

import threading
import time

from ..backends.base import Increment, RowMutation
from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import ranking_keys as RK
from ..schema.keys import SIGNATURES_SEEN
from . import admission

DIMENSION_CAPS = {"product": 100, "version": 200, "os": 50}
#: seconds a process trusts what it read of a registry row (``rollup`` rewrites the rows)
REFRESH_S = 300.0


class Dimensions:
    """Maps a crash's dimension values to the ones counted live: admitted values as they are,
    the rest to ``##other##`` (see the module docstring).  Thread-safe.

    What it read of a registry row is trusted for :data:`REFRESH_S` seconds, then read again, so
    a process follows the roll-up's rewrites: a value it saw admitted, or a row it saw full,
    costs no call.  Only an admission reads the row afresh and claims a slot (one read and one
    check-and-put, :func:`.admission.admit`): the cap holds across processes, and a value another
    process admitted meanwhile is found, not admitted twice.  A product an operator keeps is
    counted under its name even when its row is full.
    """

    def __init__(self, caps=None, refresh_s=REFRESH_S, clock=time.monotonic):
        self.caps = dict(DIMENSION_CAPS if caps is None else caps)
        self.refresh_s, self._clock = refresh_s, clock
        self._rows = {}  # registry row -> (read at, admission.RegistryRow)
        self._keys, self._keys_since = {}, clock()
        self._lock = threading.Lock()

    def _row(self, backend, row):
        found = self._rows.get(row)
        now = self._clock()
        if found is None or now - found[0] > self.refresh_s:
            found = (now, admission.read_row(backend, row))
            self._rows[row] = found
        return found[1]

    def value(self, backend, field, value, product=None):
        if value in (DK.UNKNOWN, DK.OTHER):
            return value
        row, cap = DK.registry_row(field, product), self.caps[field]
        with self._lock:
            if value in self._row(backend, row).values:
                return value
            kept = field == "product" and value in self._row(backend, DK.KEEP_ROW).values
            if self._row(backend, row).full(cap) and not kept:
                return DK.OTHER
            # room as last read (or kept): admitted by arrival if a slot is still free; the next
            # rollup decides by volume
            admitted, fresh = admission.admit(backend, row, value, cap)
            self._rows[row] = (self._clock(), fresh)
            return value if admitted or kept else DK.OTHER

    def admit_many(self, backend, asked):
        """Admit in bulk the values of ``asked`` ``[(field, value, product)]`` (what capping a
        batch of crashes will ask :meth:`value`, in arrival order) that are neither admitted nor
        refused by a full row as last read: per round (products and OSes, then the versions of
        admitted products), one read of their rows and one check-and-put call
        (:func:`.admission.admit_many`).  The answers :meth:`value` then gives are the same, from
        the rows read here; a value whose claim was lost is left to it."""
        for fields in (("product", "os"), ("version",)):
            wanted = {}
            with self._lock:
                for field, value, product in asked:
                    if field not in fields or value in (DK.UNKNOWN, DK.OTHER):
                        continue
                    if field == "version" and not self._known(DK.registry_row("product"), product):
                        continue  # asked only under an admitted product
                    row = DK.registry_row(field, product if field == "version" else None)
                    if not self._known(row, value, self.caps[field]):
                        values = wanted.setdefault(row, ([], self.caps[field]))[0]
                        if value not in values:
                            values.append(value)
            if wanted:
                views = admission.admit_many(backend, wanted)
                with self._lock:
                    for row, view in views.items():
                        if view is None:
                            self._rows.pop(row, None)  # read again at its next use
                        else:
                            self._rows[row] = (self._clock(), view)

    def _known(self, row, value, cap=None):
        """Whether ``row`` as last read (and still trusted) holds ``value``, or (given ``cap``)
        is full (under the lock)."""
        found = self._rows.get(row)
        if found is None or self._clock() - found[0] > self.refresh_s:
            return False
        return value in found[1].values or (cap is not None and found[1].full(cap))

    def admitter(self, backend):
        """The ``admitted(field, value, product)`` callback of :func:`DK.cap_values`: admitted
        already, or now by arrival when the row has room."""
        return lambda field, value, product: self.value(backend, field, value, product) == value

    def resolve(self, backend, dims):
        """``dims`` ({"product", "version", "os"}, normalized) with the cap applied."""
        return DK.cap_values(dims, self.admitter(backend))

    def resolve_key(self, backend, key):
        """A dimension key with the cap applied (cached with the rows it was decided by)."""
        with self._lock:
            if self._clock() - self._keys_since > self.refresh_s:  # decided by rows now stale
                self._keys, self._keys_since = {}, self._clock()
            found = self._keys.get(key)
        if found is None:
            found = DK.capped_key(key, self.admitter(backend))
            with self._lock:
                if len(self._keys) > 100000:  # bounded: keys over the cap are unbounded in number
                    self._keys.clear()
                self._keys[key] = found
        return found

    def rewrite(self, backend, increments):
        """``increments`` with every dimensioned column's key capped (and a product ranking's
        row key)."""
        out = []
        for inc in increments:
            if inc.table == SIGNATURES_SEEN and inc.row.startswith(RK.RANK_PREFIX):
                plain, key = DK.split_column(inc.row)  # a ranking: the key is in the row, a signature in the column
                if key is not None:
                    inc = Increment(inc.table, DK.with_key(plain, self.resolve_key(backend, key)), inc.column, inc.amount)
            else:
                plain, key = DK.split_column(inc.column)
                if key is not None:
                    inc = Increment(inc.table, inc.row, DK.with_key(plain, self.resolve_key(backend, key)), inc.amount)
            out.append(inc)
        return out

    def forget(self):
        """Read every registry row again at its next use."""
        with self._lock:
            self._rows.clear()
            self._keys = {}


# -- the operator's keep list ---------------------------------------------------------------

def _product_names(names):
    out = []
    for name in names:
        if not isinstance(name, str) or not name.strip() or DK.normalize(name) in (DK.UNKNOWN, DK.OTHER):
            raise InvalidArgument(f"not a product name: {name!r}")
        out.append(DK.normalize(name))
    return out


def kept_products(backend):
    """The products an operator keeps (sorted)."""
    cells = backend.get_row(SIGNATURES_SEEN, DK.KEEP_ROW, columns=[b"seen"])
    return sorted(DK.parse_registry_column(column) for column in cells)


def keep_products(backend, names, replace=False):
    """Keep ``names`` (products): always admitted, whatever their volume; with ``replace``, the
    keep list becomes exactly ``names``.  Returns the keep list.  A bad name is refused
    (:class:`InvalidArgument`) before anything is written."""
    names = _product_names(names)
    wanted = {DK.registry_column(name): b"1" for name in names}
    current = set(backend.get_row(SIGNATURES_SEEN, DK.KEEP_ROW, columns=[b"seen"])) if replace else set()
    gone = sorted(current - set(wanted))
    if wanted or gone:
        backend.mutate_rows(SIGNATURES_SEEN, [RowMutation(DK.KEEP_ROW, wanted, deletes=gone)])
    # a kept product is admitted at once (while the registry has room), not at the next rollup;
    # live counters count it under its name even when the registry is full
    for name in names:
        admission.admit(backend, DK.registry_row("product"), name, DIMENSION_CAPS["product"])
    return kept_products(backend)


def unkeep_products(backend, names):
    """Stop keeping ``names``: from the next ``rollup`` they stay only by volume.  Returns the
    keep list."""
    names = _product_names(names)
    backend.mutate_rows(SIGNATURES_SEEN, [RowMutation(DK.KEEP_ROW, deletes=[DK.registry_column(n) for n in names])])
    return kept_products(backend)


def registry(backend):
    """``{"product": [...], "os": [...], "versions": {product: [...]}, "kept": [...], "caps": {...}}``:
    the values admitted now."""
    out = {"product": [], "os": [], "versions": {}, "kept": kept_products(backend), "caps": dict(DIMENSION_CAPS)}
    for field in ("product", "os"):
        out[field] = sorted(admission.read_row(backend, DK.registry_row(field)).values)
    for product in out["product"]:
        out["versions"][product] = sorted(admission.read_row(backend, DK.registry_row("version", product)).values)
    return out
