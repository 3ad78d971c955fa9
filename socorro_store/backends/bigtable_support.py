"""Pure helpers of the Bigtable backend: timestamps, GC rules and read filters.

Nothing here makes a call.  The backend (:mod:`socorro_store.backends.bigtable`) composes these.

* **Timestamps.**  The contract speaks milliseconds, Bigtable microseconds at millisecond
  granularity.  ``ms * 1000`` on the way in, ``us // 1000`` on the way out; a millisecond value
  whose microseconds do not fit in a signed 64-bit integer is rejected up front.
* **GC rules.**  VERSIONS becomes a max-versions rule and a finite TTL a max-age rule; both are
  unioned (a cell goes when either says so), which is HBase's meaning.  Bigtable collects garbage
  lazily, so reads add the same limits as filters (:func:`read_filter`).
* **Filters.**  Columns are selected with exact ``ColumnRangeFilter`` bounds rather than regexes,
  so any byte string works as a qualifier; values are compared with ``ValueRangeFilter`` bounds for
  the same reason.  Chains and interleaves of one element are collapsed, because the service
  rejects them.
"""

import datetime
import re
import time

from google.cloud.bigtable import column_family
from google.cloud.bigtable.data import row_filters as rf
from google.cloud.bigtable_v2.types import data as data_pb

from ..errors import InvalidArgument, RequestTooLarge
from ..schema.specs import FOREVER, FamilySpec

MAX_MICROS = 2**63 - 1
#: the largest contract timestamp (ms) whose microseconds Bigtable can hold
MAX_TIMESTAMP_MS = MAX_MICROS // 1000
#: Cloud Bigtable's own limits, tighter than HBase's (the emulator does not enforce them)
MAX_ROW_KEY = 4 * 1024
MAX_QUALIFIER = 16 * 1024
#: VERSIONS reported for a family that has no max-versions rule (keeps every version)
UNLIMITED_VERSIONS = 2**31 - 1


# -- timestamps ------------------------------------------------------------------------------

#: Bigtable's hard limit on all values of one row (100 MB is its recommendation)
MAX_ROW_BYTES = 256 * 1024 * 1024
#: batches are split so one MutateRows request carries at most this much (estimated)
MAX_REQUEST_BYTES = 256 * 1024 * 1024


def check_entry_size(table, row, count, size, max_mutations):
    """Raise :class:`RequestTooLarge` for a row's entry Bigtable would refuse in any request."""
    if count > max_mutations:
        raise RequestTooLarge(f"row {row[:60]!r} of table {table!r} needs {count} mutations, over "
                              f"Bigtable's {max_mutations} per request", size=count,
                              limit=max_mutations, setting="none: a Bigtable limit")
    if size > MAX_ROW_BYTES:
        raise RequestTooLarge(f"row {row[:60]!r} of table {table!r} carries about {size} bytes, over "
                              f"Bigtable's {MAX_ROW_BYTES}-byte row limit", size=size,
                              limit=MAX_ROW_BYTES, setting="none: a Bigtable limit")


def check_row_mutation_size(table, mutation, max_mutations):
    """:func:`check_entry_size` of a contract ``RowMutation`` (a row delete counts as one more)."""
    cells = [(b"", c, v) for c, v in mutation.puts.items()] + [(b"", c, b"") for c in mutation.deletes]
    check_entry_size(table, mutation.row, len(cells) + 1, mutation_bytes(mutation.row, cells), max_mutations)


def mutation_bytes(row, cells):
    """Upper bound of one MutateRows entry's encoded size: the row key, then each
    ``(family, qualifier, value)`` with 32 bytes of protobuf tags, lengths and timestamps."""
    return 16 + len(row) + sum(32 + len(family) + len(qualifier) + len(value) for family, qualifier, value in cells)


def now_ms():
    """The client's clock in ms: the "now" of writes, deletes and TTL cut-offs without a timestamp."""
    return int(time.time() * 1000)


def to_micros(ms):
    """Contract milliseconds to Bigtable microseconds (checked by :func:`check_ms`)."""
    return ms * 1000


def to_millis(us):
    return us // 1000


def check_ms(timestamp):
    """Reject a timestamp Bigtable cannot represent (the contract already rejected the rest)."""
    if timestamp is not None and timestamp > MAX_TIMESTAMP_MS:
        raise InvalidArgument(f"timestamp {timestamp} ms is beyond Bigtable's range ({MAX_TIMESTAMP_MS} ms)")


def ttl_floor_us(spec, now_ms):
    """First visible microsecond of a family with a finite TTL (HBase: ``ts > now - ttl``), or None."""
    if spec.ttl >= FOREVER:
        return None
    return to_micros(now_ms - spec.ttl * 1000 + 1)


# -- GC rules ----------------------------------------------------------------------------------

def gc_rule_for(spec):
    """The GC rule (admin ``GcRule`` message) for a :class:`FamilySpec`: max-versions, unioned
    with max-age for a finite TTL."""
    versions = column_family.MaxVersionsGCRule(spec.versions)
    if spec.ttl >= FOREVER:
        return versions.to_pb()
    age = column_family.MaxAgeGCRule(datetime.timedelta(seconds=spec.ttl))
    return column_family.GCRuleUnion([versions, age]).to_pb()


def family_from_gc_rule(name, rule):
    """Rebuild a :class:`FamilySpec` from a live GC rule (an admin ``GcRule`` message or None).

    VERSIONS and TTL come from the rule (a missing part means "keep every version" / "forever");
    the attributes Bigtable has no notion of take the spec defaults.  An intersection rule, which
    this backend never creates, is read the same way, as its parts are the closest equivalent.
    """
    versions, ttl = _rule_limits(rule)
    return FamilySpec(name=name, versions=versions or UNLIMITED_VERSIONS, ttl=ttl or FOREVER)


def _rule_limits(rule):
    kind = type(rule).pb(rule).WhichOneof("rule") if rule is not None else None
    if kind == "max_num_versions":
        return rule.max_num_versions, None
    if kind == "max_age":
        return None, int(rule.max_age.total_seconds())
    versions = ttl = None
    if kind in ("union", "intersection"):
        for part in getattr(rule, kind).rules:
            part_versions, part_ttl = _rule_limits(part)
            versions = versions or part_versions
            ttl = ttl or part_ttl
    return versions, ttl


# -- filters -----------------------------------------------------------------------------------

class MicrosRangeFilter(rf.RowFilter):
    """Cells with ``start_us <= ts < end_us`` (None: unbounded), in microseconds.

    The client's own ``TimestampRangeFilter`` takes datetimes; this takes the integers we have.
    """

    def __init__(self, start_us=None, end_us=None):
        self.start_us, self.end_us = start_us, end_us

    def _to_dict(self):
        bounds = {}
        if self.start_us:
            bounds["start_timestamp_micros"] = self.start_us
        if self.end_us is not None:
            bounds["end_timestamp_micros"] = self.end_us
        return {"timestamp_range_filter": bounds}

    def _to_pb(self):
        return data_pb.RowFilter(**self._to_dict())


def chain(filters):
    """A chain of the non-None filters; None when there are none (the service wants two or more)."""
    filters = [f for f in filters if f is not None]
    if not filters:
        return None
    return filters[0] if len(filters) == 1 else rf.RowFilterChain(filters)


def union(filters):
    """An interleave of the filters (never empty here)."""
    return filters[0] if len(filters) == 1 else rf.RowFilterUnion(filters)


def family_filter(family):
    # Family names are letters, digits and "_" (spec-checked); the regex is an RE2 full match.
    return rf.FamilyNameRegexFilter(re.escape(family))


def column_filter(family, qualifier):
    """Exactly one column, any bytes in the qualifier (an inclusive range of one)."""
    return rf.ColumnRangeFilter(family, qualifier, qualifier, inclusive_start=True, inclusive_end=True)


def exact_value_filter(value):
    return rf.ValueRangeFilter(value, value, inclusive_start=True, inclusive_end=True)


def non_empty_value_filter():
    # Every non-empty byte string sorts at or after b"\x00"; the empty one sorts before it.
    return rf.ValueRangeFilter(b"\x00", None, inclusive_start=True)


def key_only_filter(base_filter):
    """One stripped cell per row: enough to learn which rows match, cheaply."""
    return chain([base_filter, rf.CellsRowLimitFilter(1), rf.StripValueTransformerFilter(True)])


def read_filter(families, select, timestamp, versions, now_ms):
    """The filter that makes a Bigtable read answer as an HBase read does.

    ``families``: ``{name: FamilySpec}`` of the table.  ``select``: None (every column) or
    ``{family: None (whole family) | set of qualifiers}``.  ``timestamp``: read ``ts < timestamp``
    (ms) or None.  ``versions``: newest versions per column to return.

    Returns ``(filter or None, empty)``; ``empty`` is True when nothing can match (the caller then
    skips the call).  Order matters: time ranges (the read timestamp, each family's TTL) are applied
    before the per-column version limit, as HBase selects "the newest visible versions".
    """
    end_us = None if timestamp is None else to_micros(timestamp)
    if end_us == 0:
        return None, True  # ts < 0: nothing (and 0 would mean "unbounded" to Bigtable)
    names = list(families) if select is None else list(select)
    per_family = select is not None or any(families[n].ttl < FOREVER for n in names)
    limit = rf.CellsColumnLimitFilter(versions) if versions < UNLIMITED_VERSIONS else None
    if not per_family:
        time_range = MicrosRangeFilter(None, end_us) if end_us is not None else None
        return chain([time_range, limit]), False
    branches = []
    for name in names:
        start_us = ttl_floor_us(families[name], now_ms)
        if start_us is not None and end_us is not None and start_us >= end_us:
            continue  # this family has nothing both unexpired and older than the read timestamp
        qualifiers = None if select is None else select[name]
        if qualifiers is None:
            picked = family_filter(name)
        else:
            picked = union([column_filter(name, q) for q in sorted(qualifiers)])
        time_range = MicrosRangeFilter(start_us, end_us) if (start_us or end_us is not None) else None
        branches.append(chain([picked, time_range]))
    if not branches:
        return None, True
    return chain([union(branches), limit]), False


def latest_cell_filter(family, qualifier, spec, now_ms):
    """The newest unexpired cell of one column (the check-and-put predicate's base)."""
    start_us = ttl_floor_us(spec, now_ms)
    return chain([column_filter(family, qualifier),
                  MicrosRangeFilter(start_us, None) if start_us else None,
                  rf.CellsColumnLimitFilter(1)])
