"""Key layouts of the dimensioned counters (product, product+version, OS), with their inverses.

A dimensioned counter is a plain counter column with a suffix ``|<key>``::

    metrics               counters:submitted_crash_reports|p=Firefox
                          counters:submitted_crash_reports|pv=Firefox:120.0
    crash_report_signatures  counters:daily_2024-01-05|p=Firefox      (and hourly_/monthly_/yearly_)
                             counters:daily_2024-01-05|pv=Firefox:120.0
                             counters:daily_2024-01-05|os=Windows%20NT
                             counters:daily_2024-01-05|po=Firefox:Windows%20NT
                             counters:daily_2024-01-05|pvo=Firefox:120.0:Windows%20NT

Every filter a report accepts (none, product, product+version, OS, product+OS,
product+version+OS) is one exact column per interval, so a top-crashers report for any filter
is one column-filtered scan of ``crash_report_signatures``.  Values are percent-quoted (``:``,
``|``, ``%`` and anything outside ``[A-Za-z0-9._+#-]`` escaped), so a key splits unambiguously.

Process type (kind ``pt``, ``pt=content``) is a kind of the daily rankings only
(:mod:`socorro_store.schema.ranking_keys`), never a counter column suffix: a counter cell more per
crash costs write throughput, and only top crashers filters or splits by it.  Its values are the
raw crash's ``ProcessType`` with ``default`` (or none) as :data:`PARENT`, capped by a fixed list
(:data:`PROCESS_TYPES`: Gecko's process types; any other is :data:`OTHER`), so the live counters
and the roll-up cap it alike without a registry.

Values: a missing or empty field is :data:`UNKNOWN`; a value is stripped and cut to
:data:`MAX_VALUE_CHARS` characters; a value over the cardinality cap is :data:`OTHER`
(:mod:`socorro_store.crashstore.counters`, ``Dimensions``).
"""

import functools
from datetime import date
from urllib.parse import quote, unquote

from ..errors import InvalidArgument
from .keys import FAMILY_COUNTERS, SIGNATURE_LEVELS, counter_column, parse_metrics_row

UNKNOWN = "##unknown##"
OTHER = "##other##"
MAX_VALUE_CHARS = 64
SEPARATOR = b"|"
SIGNATURE_DIMENSIONS = ("p", "pv", "os", "po", "pvo")
METRICS_DIMENSIONS = ("p", "pv")
_FIELDS = {"p": ("product",), "pv": ("product", "version"), "os": ("os",), "po": ("product", "os"),
           "pvo": ("product", "version", "os"), "pt": ("process_type",)}
#: the kinds kept only in the rankings, never as counter columns
RANKING_ONLY = ("pt",)
#: the browser (parent) process: a crash whose ProcessType is ``default`` or absent
PARENT = "parent"
#: the process types counted under their own name (Gecko's ``GeckoProcessType`` names); any
#: other value is :data:`OTHER`, so a client sending junk names cannot grow the rankings
PROCESS_TYPES = frozenset({PARENT, "content", "gpu", "plugin", "gmplugin", "rdd", "socket", "utility", "vr",
                           "remotesandboxbroker", "forkserver", "sandboxbroker", "ipdlunittest", "extension",
                           "inference"})
#: rows of ``crash_report_signatures_seen`` holding the admitted values (``seen:<quoted value>``)
REGISTRY_PREFIX = b"~dimensions/"


def normalize(value):
    """The stored form of a product, version or OS name: stripped, at most 64 characters;
    ``None``, a non-string or an empty string is :data:`UNKNOWN`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return UNKNOWN
    value = value.strip()[:MAX_VALUE_CHARS]
    return value or UNKNOWN


def normalize_process_type(value):
    """The ranked form of a ProcessType: ``default``/absent/empty is :data:`PARENT`, a name of
    :data:`PROCESS_TYPES` (case-insensitive) itself, anything else :data:`OTHER`."""
    if not isinstance(value, str) or not value.strip() or value.strip().lower() == "default":
        return PARENT
    value = value.strip().lower()
    return value if value in PROCESS_TYPES else OTHER


def process_type_key(process_type):
    """The ranking key of a process type (normalized as stored: ``pt=parent`` for ``default``)."""
    return dimension_key("pt", process_type=normalize_process_type(process_type))


def is_ranking_only(key):
    """True when dimension ``key`` (bytes, or None) is of a kind kept only in the rankings."""
    return key is not None and key.partition(b"=")[0].decode("ascii", "replace") in RANKING_ONLY


def _q(value):
    return quote(value, safe="._+-#").encode("ascii")


def dimension_key(kind, product=None, version=None, os=None, process_type=None):
    """``b"pv=Firefox:120.0"``: the key of one dimension (``kind`` in ``p pv os po pvo pt``)."""
    if kind not in _FIELDS:
        raise InvalidArgument(f"unknown dimension {kind!r}")
    values = {"product": product, "version": version, "os": os, "process_type": process_type}
    return kind.encode("ascii") + b"=" + b":".join(_q(values[f]) for f in _FIELDS[kind])


def parse_dimension_key(key):
    """Inverse of :func:`dimension_key`: ``(kind, {field: value})``."""
    kind, sep, rest = key.partition(b"=")
    kind = kind.decode("ascii", "replace")
    parts = rest.split(b":")
    if not sep or kind not in _FIELDS or len(parts) != len(_FIELDS[kind]):
        raise InvalidArgument(f"not a dimension key: {key!r}")
    return kind, {f: unquote(p.decode("ascii", "replace")) for f, p in zip(_FIELDS[kind], parts)}


def filter_key(product=None, version=None, os=None):
    """The dimension key a report filter reads (None: no filter, the plain columns).

    A version needs its product (versions are per product).  Values are normalized as stored."""
    if version is not None and product is None:
        raise InvalidArgument("a version filter needs its product (--product P --version V)")
    for name, value in (("product", product), ("version", version), ("os", os)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidArgument(f"{name} must be a non-empty string: {value!r}")
    kind = ("p" if product is not None else "") + ("v" if version is not None else "") + \
        ("o" if os is not None else "")
    if not kind:
        return None
    kind = {"o": "os"}.get(kind, kind)
    return dimension_key(kind, *(normalize(v) if v is not None else None for v in (product, version, os)))


def cap_values(fields, admitted):
    """``fields`` ({product, version, os, ...}, normalized) with the cardinality cap applied: the
    one rule the live counters and the roll-up share, so both key a crash alike.

    ``admitted(field, value, product)`` says whether a value has columns of its own (``product``:
    the version's product).  :data:`UNKNOWN` and :data:`OTHER` stay as they are and are never
    asked about.  A version is asked about only under an admitted product: the versions of an
    unknown or capped product are :data:`OTHER` (there is no registry row of them).  Other
    fields (a process type) pass unchanged.
    """
    out = dict(fields)
    product = out.get("product")
    if product not in (None, UNKNOWN, OTHER) and not admitted("product", product, None):
        out["product"] = product = OTHER
    version = out.get("version")
    if version not in (None, UNKNOWN, OTHER):
        if product in (None, UNKNOWN, OTHER) or not admitted("version", version, product):
            out["version"] = OTHER
    os = out.get("os")
    if os not in (None, UNKNOWN, OTHER) and not admitted("os", os, None):
        out["os"] = OTHER
    return out


def capped_key(key, admitted):
    """Dimension ``key`` with :func:`cap_values` applied to its values."""
    kind, fields = parse_dimension_key(key)
    return dimension_key(kind, **cap_values(fields, admitted))


def keys_of(dims, kinds):
    """The keys of each dimension in ``kinds`` for one crash's ``dims`` {product, version, os,
    process_type}."""
    return list(_keys(tuple(kinds), dims.get("product"), dims.get("version"), dims.get("os"),
                      dims.get("process_type")))


@functools.lru_cache(maxsize=4096)  # crashes share a few combinations; quoting them is the cost
def _keys(kinds, product, version, os, process_type):
    return tuple(dimension_key(kind, product, version, os, process_type) for kind in kinds)


def with_key(column, key):
    """A plain counter column with a dimension key: ``counters:…|key`` (``key`` None: as is)."""
    return column if key is None else column + SEPARATOR + key


def split_column(column):
    """``(plain column, key or None)`` of a counter column."""
    plain, sep, key = column.partition(SEPARATOR)
    return plain, (key if sep else None)


def metrics_name_column(name):
    """``counters:<name>`` of a (possibly dimensioned) metrics counter name ``base|key``."""
    base, sep, key = name.partition("|")
    column = counter_column(base)
    return with_key(column, key.encode("ascii")) if sep else column


def parse_signature_column(column):
    """``(level, interval start, key or None)`` of a plain or dimensioned signature column."""
    plain, key = split_column(column)
    family, _, qualifier = plain.partition(b":")
    if family == FAMILY_COUNTERS:
        for level, prefix in SIGNATURE_LEVELS.items():
            if qualifier.startswith(prefix.encode("ascii")):
                found, start = parse_metrics_row(qualifier[len(prefix):])
                if found == level:
                    if key is not None:
                        parse_dimension_key(key)
                    return level, start, key
    raise InvalidArgument(f"not a signature counter column: {column!r}")


_SIGNATURE_PREFIXES = tuple(FAMILY_COUNTERS + b":" + prefix.encode("ascii") for prefix in SIGNATURE_LEVELS.values())


def plain_signature_interval(column):
    """The metrics row of a plain signature interval column (``counters:daily_2016-09-18`` ->
    ``b"2016-09-18"``); None for a dimensioned one or any other column.  A cheap prefix test,
    for the deriver's every increment: :func:`parse_signature_column` validates."""
    if SEPARATOR in column:
        return None
    for prefix in _SIGNATURE_PREFIXES:
        if column.startswith(prefix):
            return column[len(prefix):]
    return None


def registry_row(field, product=None):
    """The registry row of ``product`` names, ``os`` names, or the versions of ``product``."""
    if field == "version":
        return REGISTRY_PREFIX + b"version/" + _q(product)
    if field not in ("product", "os"):
        raise InvalidArgument(f"unknown dimension field {field!r}")
    return REGISTRY_PREFIX + field.encode("ascii")


def registry_column(value):
    return b"seen:" + _q(value)


#: the products an operator keeps: always admitted, whatever their volume (``seen:<quoted name>``)
KEEP_ROW = REGISTRY_PREFIX + b"keep/product"
VOLUME_PREFIX = REGISTRY_PREFIX + b"volume/"


def parse_registry_column(column):
    """Inverse of :func:`registry_column`: the value."""
    family, _, quoted = column.partition(b":")
    if family != b"seen" or not quoted:
        raise InvalidArgument(f"not a registry column: {column!r}")
    return unquote(quoted.decode("ascii", "replace"))


#: A registry row's admission slots: ``seen:/<i>`` (``i`` below the row's cap) holds one
#: admitted value (UTF-8).  A value is admitted by claiming an empty slot, one single-cell
#: check-and-put (atomic on every backend), so a row holds at most its cap of values whatever the
#: number of processes admitting at once.  ``/`` is quoted in a value column (``seen:<quoted
#: value>``, the form before slots, still read), so no value column looks like a slot.
SLOT_PREFIX = b"seen:/"


def registry_slot(index):
    """The column of slot ``index`` of a registry row."""
    return SLOT_PREFIX + str(index).encode("ascii")


def parse_registry_slot(column):
    """The index of slot column ``column``; None for any other column."""
    if not column.startswith(SLOT_PREFIX):
        return None
    digits = column[len(SLOT_PREFIX):]
    return int(digits) if digits.isdigit() and digits.isascii() else None


def registry_values(cells):
    """The values a registry row's ``cells`` ({column: value}) admit: its slots' values and its
    value columns (the form before slots) alike."""
    out = set()
    for column, value in cells.items():
        if column.startswith(SLOT_PREFIX):
            if parse_registry_slot(column) is not None and value:
                out.add(value.decode("utf-8", "replace"))
        else:
            out.add(parse_registry_column(column))
    return out


def volume_row(day):
    """The row of one day's crash volumes per dimension value (``day``: a date)."""
    return VOLUME_PREFIX + day.strftime("%Y-%m-%d").encode("ascii")


def parse_volume_row(row):
    """Inverse of :func:`volume_row`: the date."""
    if not row.startswith(VOLUME_PREFIX):
        raise InvalidArgument(f"not a volume row: {row!r}")
    try:
        return date.fromisoformat(row[len(VOLUME_PREFIX):].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidArgument(f"not a volume row: {row!r}") from None


def volume_column(field, value, product=None):
    """``seen:product=Firefox``, ``seen:os=Linux``, ``seen:version=Firefox:120.0``: the column of
    one value's volume in a :func:`volume_row` (a version names its product)."""
    if field == "version":
        return b"seen:version=" + _q(product) + b":" + _q(value)
    if field not in ("product", "os"):
        raise InvalidArgument(f"unknown dimension field {field!r}")
    return b"seen:" + field.encode("ascii") + b"=" + _q(value)


def parse_volume_column(column):
    """Inverse of :func:`volume_column`: ``(field, value, product or None)``."""
    family, _, rest = column.partition(b":")
    field, sep, quoted = rest.partition(b"=")
    field = field.decode("ascii", "replace")
    parts = quoted.split(b":")
    if family != b"seen" or not sep or field not in ("product", "os", "version") or \
            len(parts) != (2 if field == "version" else 1):
        raise InvalidArgument(f"not a volume column: {column!r}")
    values = [unquote(p.decode("ascii", "replace")) for p in parts]
    return (field, values[1], values[0]) if field == "version" else (field, values[0], None)
