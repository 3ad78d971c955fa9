"""The roll-up's side of the dimension registry: admission by volume, not by arrival.

For each day it recounts, the roll-up records the day's crashes per dimension value as sent
(``~dimensions/volume/<day>`` in ``crash_report_signatures_seen``: the most crashed
:data:`DAY_LIMITS` values per field, a version's limit per product), then decides the day's
:class:`Admission` from the volumes of the :data:`WINDOW_DAYS` days ending with it:

* the products an operator keeps (:func:`~socorro_store.crashstore.dimensions.keep_products`);
* per field, the values with the most crashes in the window, up to the cap less a reserve of a
  tenth (ties by name); a version only if its product is admitted;
* nothing else: a value no crash used in the window is not admitted (old versions age out).

The day's dimensioned counters are written under that admission (a value not admitted counts as
``##other##``), so a day counted under a registry filled by arrival (100 junk product names first)
is fixed.  At the end of a run, :func:`write_registry` rewrites the registry rows to the
admission of the latest day, which the live counters then follow (leaving them the reserve for
values that arrive between runs, taken slot by slot: never past the cap).
"""

import collections
from datetime import timedelta

from ..backends.base import RowMutation
from ..crashstore import admission as slots
from ..crashstore.dimensions import DIMENSION_CAPS, kept_products
from ..schema import dimension_keys as DK
from ..schema import keys as K

#: days of volume an admission is decided by
WINDOW_DAYS = 30
#: the values of each field kept in a day's volume row (a version's per product, for the
#: ``DAY_LIMITS["product"]`` most crashed products only)
DAY_LIMITS = {"product": DIMENSION_CAPS["product"], "version": DIMENSION_CAPS["version"],
              "os": DIMENSION_CAPS["os"]}


def reserve(cap):
    """The registry room left to values arriving between runs: a tenth of the cap."""
    return max(1, cap // 10) if cap > 1 else 0


def day_volumes(spilled):
    """The volumes of a recounted day to store: :data:`DAY_LIMITS` values per field, the
    versions of the products kept only (from a :class:`~socorro_store.engine.spilled_counts.SpilledCounts`)."""
    volumes = spilled.top_volumes(DAY_LIMITS)
    products = {value for (field, _p, value) in volumes if field == "product"}
    return {k: n for k, n in volumes.items() if k[0] != "version" or k[1] in products}


def write_day_volumes(backend, day, volumes):
    """Store ``volumes`` ``{(field, product, value): n}`` as ``day``'s volume row (replacing it)."""
    row = DK.volume_row(day)
    cells = {DK.volume_column(field, value, product or None): K.encode_counter(n)
             for (field, product, value), n in volumes.items()}
    old = backend.get_row(K.SIGNATURES_SEEN, row, columns=[b"seen"])
    backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, cells, deletes=sorted(set(old) - set(cells)))])


class VolumeWindow:
    """The volume rows of the days a run needs, read once each (the days go forward)."""

    def __init__(self, backend):
        self.backend = backend
        self._days = {}  # date -> Counter {(field, product, value): n}

    def set_day(self, day, volumes):
        self._days[day] = collections.Counter(volumes)

    def _read(self, days):
        missing = [d for d in days if d not in self._days]
        if missing:
            rows = {DK.volume_row(d): d for d in missing}
            found = self.backend.get_rows(K.SIGNATURES_SEEN, list(rows), columns=[b"seen"])
            for row, d in rows.items():
                volumes = collections.Counter()
                for column, value in found.get(row, {}).items():
                    field, value_name, product = DK.parse_volume_column(column)
                    volumes[(field, product or "", value_name)] = K.decode_counter(value)
                self._days[d] = volumes

    def admission(self, day, kept, caps=None):
        """The :class:`Admission` of ``day`` (a date): the window ending with it."""
        days = [day - timedelta(days=i) for i in range(WINDOW_DAYS)]
        self._read(days)
        for old in [d for d in self._days if d < days[-1]]:
            del self._days[old]  # the days go forward: what left the window is not read again
        total = collections.Counter()
        for d in days:
            total.update(self._days[d])
        return Admission.by_volume(total, kept, caps)


class Admission:
    """Which values are counted under their own name (see the module docstring)."""

    def __init__(self, products, versions, oses):
        self.products, self.versions, self.oses = set(products), versions, set(oses)
        self._keys = {}

    @classmethod
    def by_volume(cls, volumes, kept=(), caps=None):
        caps = caps or DIMENSION_CAPS
        by_field = collections.defaultdict(list)
        for (field, product, value), n in volumes.items():
            if n > 0:
                by_field[(field, product)].append((-n, value))

        def top(field, product, cap, always=()):
            ranked = [value for _n, value in sorted(by_field.get((field, product), ())) if value not in always]
            return set(always) | set(ranked[:max(0, cap - reserve(cap) - len(always))])

        products = top("product", "", caps["product"], set(kept))
        versions = {p: top("version", p, caps["version"]) for p in products}
        return cls(products, versions, top("os", "", caps["os"]))

    def map_key(self, key):
        """A dimension key (values as sent) with the values not admitted as ``##other##``."""
        found = self._keys.get(key)
        if found is None:
            found = DK.capped_key(key, self.admitted)
            if len(self._keys) > 100000:
                self._keys.clear()
            self._keys[key] = found
        return found

    def admitted(self, field, value, product):
        """Whether ``value`` of ``field`` has columns of its own (``product``: a version's)."""
        if field == "product":
            return value in self.products
        if field == "version":
            return value in self.versions.get(product, ())
        return value in self.oses

    def map_name(self, name):
        """A metrics counter name (``base`` or ``base|key``) with its key mapped by :meth:`map_key`."""
        base, sep, key = name.partition("|")
        return f"{base}|{self.map_key(key.encode('ascii')).decode('ascii')}" if sep else name


def write_registry(backend, admission):
    """Rewrite the registry rows to ``admission``: its values in the rows' slots, every other
    value deleted (the version rows of products no longer admitted emptied), each row by
    :func:`~socorro_store.crashstore.admission.rewrite`, so live admissions racing it never take
    a row past its cap."""
    wanted = {DK.registry_row("product"): (admission.products, DIMENSION_CAPS["product"]),
              DK.registry_row("os"): (admission.oses, DIMENSION_CAPS["os"])}
    for product, versions in admission.versions.items():
        wanted[DK.registry_row("version", product)] = (versions, DIMENSION_CAPS["version"])
    version_rows = DK.registry_row("version", "")
    for row, _cells in backend.scan(K.SIGNATURES_SEEN, start=version_rows, stop=version_rows[:-1] + b"0",
                                    columns=[b"seen"]):  # "0" follows "/": every version row
        wanted.setdefault(row, ((), DIMENSION_CAPS["version"]))  # a product no longer admitted: emptied
    slots.rewrite(backend, wanted)


class Admissions:
    """A run's admissions: each recounted day's volumes recorded and its admission decided, and
    the registry rewritten at the end (:meth:`write_registry`)."""

    def __init__(self, backend):
        self.backend = backend
        self.window = VolumeWindow(backend)
        self.kept = set(kept_products(backend))
        self.latest = None

    def after_recount(self, day, spilled):
        """Record the volumes of ``day`` (a date) recounted into ``spilled``; its admission."""
        volumes = day_volumes(spilled)
        write_day_volumes(self.backend, day, volumes)
        self.window.set_day(day, volumes)
        self.latest = day if self.latest is None else max(self.latest, day)
        return self.window.admission(day, self.kept)

    def of(self, day):
        """The admission of ``day`` from the volumes stored (a month's last day, for its recount)."""
        return self.window.admission(day, self.kept)

    def write_registry(self):
        """Rewrite the registry to the admission of the latest day recounted (none: untouched)."""
        if self.latest is not None:
            write_registry(self.backend, self.window.admission(self.latest, self.kept))
