"""Key layouts of the daily rankings (the top-crashers report in one read), with their inverses.

A ranking row holds every signature processed on one day (by submission time) and its count,
for all crashes, for one product or for one process type (``pt``: a kind kept only here)::

    crash_report_signatures_seen  ~rank/2016-09-18              seen:<signature row> = 8-byte count
                                  ~rank/2016-09-18|p=Firefox    seen:<signature row> = 8-byte count
                                  ~rank/2016-09-18|pt=content   seen:<signature row> = 8-byte count
                                  ~rank/since                   seen:day = b"2016-09-01"

The live counters increment them with a crash's other signature counters, and ``rollup`` makes
a closed day's rows exact.  ``~rank/since`` is the first day whose rankings are complete (a store
created with this version: its first day; an upgraded one: set by ``rollup --since``); a report
reads rankings only for days from it, and scans the signature counters before.
"""

from datetime import date

from ..errors import InvalidArgument
from .dimension_keys import SEPARATOR, dimension_key, parse_dimension_key

RANK_PREFIX = b"~rank/"
#: the ``~rank/since`` of a new store: crash ids start in 2000
FIRST_DAY = date(2000, 1, 1)
SINCE_ROW = RANK_PREFIX + b"since"
COL_SINCE = b"seen:day"
#: the dimension kinds a ranking is kept for (besides all crashes)
RANKED_KINDS = ("p", "pt")


def rank_row(day, key=None):
    """The ranking row of ``day`` (a date), for all crashes or for dimension ``key``."""
    row = RANK_PREFIX + day.strftime("%Y-%m-%d").encode("ascii")
    return row if key is None else row + SEPARATOR + key


def parse_rank_row(row):
    """Inverse of :func:`rank_row`: ``(day, key or None)``."""
    if not row.startswith(RANK_PREFIX):
        raise InvalidArgument(f"not a ranking row: {row!r}")
    text, sep, key = row[len(RANK_PREFIX):].partition(SEPARATOR)
    try:
        day = date.fromisoformat(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidArgument(f"not a ranking row: {row!r}") from None
    if sep:
        parse_dimension_key(key)
    return day, (key if sep else None)


def since_cells(day):
    """The cells of :data:`SINCE_ROW` saying rankings are complete from ``day`` (a date)."""
    return {COL_SINCE: day.strftime("%Y-%m-%d").encode("ascii")}


def parse_since(value):
    """Inverse of :func:`since_cells`' value: the date."""
    try:
        return date.fromisoformat(value.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidArgument(f"not a ranking start day: {value!r}") from None


def rank_column(signature_row):
    """The column of one signature in a ranking row."""
    return b"seen:" + signature_row


def rank_signature_row(column):
    """Inverse of :func:`rank_column`: the signature row."""
    family, sep, qualifier = column.partition(b":")
    if family != b"seen" or not sep:
        raise InvalidArgument(f"not a ranking column: {column!r}")
    return qualifier


def ranked_key(key):
    """True when dimension ``key`` (or None: all crashes) has a ranking."""
    return key is None or parse_dimension_key(key)[0] in RANKED_KINDS


def product_key(product):
    """The dimension key of a product's ranking."""
    return dimension_key("p", product)
