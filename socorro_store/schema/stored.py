"""Reading stored data in every format it was written in, ours and Socorro's own.

A store may hold crashes written by Socorro's HBase code (``socorro/external/hb/crashstorage.py``,
its 2013 predecessor, and its happybase crash storage; ``reference/anchors.md``).  Their cells and
keys differ from ours in a few ways, and readers must accept both.  Caller input stays strictly
validated (:mod:`socorro_store.schema.keys`, :mod:`socorro_store.schema.timeparse`); what is already
stored is read as it is and never rewritten by a reader.

=====================================  ===========================  ============================
what                                   ours                         Socorro's
=====================================  ===========================  ============================
``timestamps:submitted``               ``2016-09-18T12:34:56.123456``  the collector's isoformat
                                                                    with offset
                                                                    (``…56.123456+00:00``)
``timestamps:processed``               as submitted                 ``2016-09-18 12:34:56.123456``
``flags:legacy_processing``            ``0`` / ``1`` / ``2`` / absent  ``Y`` (= 0) / absent
``flags:processed``                    ``N`` / ``Y``                ``N`` / ``Y``; ``""`` (happybase)
time-index keys                        ``S + T(26) + ID``           ``S + ts[:-6] + ID``: 26
                                                                    characters of time, 19 when
                                                                    the microsecond is 0
signature index                        ``esc(sig) 00 T ID``         ``sig + ID`` (FOREIGN to us)
``hang_id_submitted_time``             ``S + T + ID``               the hang id (FOREIGN to us)
``crash_reports`` key                  ``S + YYMMDD + ID``          also ``YYMMDD + ID`` (pre-salt,
                                                                    FOREIGN to us)
queue counters (``metrics`` row)       ``crash_report_queues``      ``crash_report_queue``
=====================================  ===========================  ============================

Every stored time is returned as an aware UTC datetime: naive times are UTC (both writers wrote
UTC), an offset is converted.
"""

import re
from datetime import datetime, timedelta, timezone

from ..errors import InvalidArgument
from . import keys as K

# \A…\Z with fullmatch (``$`` accepts a trailing newline); [0-9], not \d (other scripts' digits)
_STORED_TIME_RE = re.compile(
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:?[0-9]{2})?\Z")
SOCORRO_SHORT_STAMP_LEN = 19  # isoformat without microseconds: ``YYYY-MM-DDTHH:MM:SS``
SOCORRO_QUEUE_ROW = b"crash_report_queue"
_ROW_NAME_MAX = 256


def stored_time(raw):
    """An aware UTC datetime from a stored timestamp (cell value or key part), any writer's form.

    Accepts ``T`` or a space between date and time, no fraction or 1-6 fraction digits, and no
    offset (UTC), ``Z`` or ``±HH:MM``.  Raises InvalidArgument for anything else.
    """
    try:
        text = raw.decode("ascii") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError:
        text = None
    if not isinstance(text, str) or not _STORED_TIME_RE.fullmatch(text):
        raise InvalidArgument(f"not a stored timestamp: {raw!r}")
    text = text[:10] + "T" + text[11:]
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    elif re.search(r"[+-][0-9]{4}\Z", text):
        text = text[:-2] + ":" + text[-2:]
    fraction = re.search(r"\.([0-9]{1,6})", text)
    if fraction and len(fraction.group(1)) < 6:  # Python 3.10's fromisoformat wants 3 or 6 digits
        text = text[:fraction.start(1)] + fraction.group(1).ljust(6, "0") + text[fraction.end(1):]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"not a stored timestamp: {raw!r}") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidArgument(f"stored timestamp out of range in UTC: {raw!r}") from None


def stored_legacy(raw):
    """``flags:legacy_processing`` as an int or None: ours ``0``/``1``/``2``, Socorro's ``Y`` (0).

    Socorro wrote ``Y`` only when legacy_processing was 0 and nothing otherwise, so absent (or
    any other value) means no legacy flag.
    """
    if raw in (b"0", b"1", b"2"):
        return int(raw)
    if raw == b"Y":
        return 0
    return None


def stored_processed(cells):
    """Whether a crash row says its crash was processed.

    ``flags:processed`` ``Y``/``N`` decide; Socorro's happybase storage wrote ``""`` there, so
    without a Y/N the presence of ``processed_data:signature`` decides.
    """
    flag = cells.get(K.COL_PROCESSED)
    if flag in (b"Y", b"N"):
        return flag == b"Y"
    return K.COL_SIGNATURE in cells

# -- time-index keys ------------------------------------------------------------------------------

def parse_stored_time_index_key(key):
    """``(crash_id, aware UTC datetime)`` of a time-index key in our layout or Socorro's.

    Socorro's keys are ``salt + ts[:-6] + crash_id`` with ``ts`` the isoformat: 26 characters of
    time (as ours) or 19 when the microsecond is 0.  Raises InvalidArgument for anything else.
    """
    if not isinstance(key, bytes) or len(key) not in (1 + K.TIMESTAMP_LEN + K.CRASH_ID_LEN,
                                                      1 + SOCORRO_SHORT_STAMP_LEN + K.CRASH_ID_LEN):
        raise InvalidArgument(f"not a time index row key: {key!r}")
    crash_id = K.validate_crash_id(key[-K.CRASH_ID_LEN:].decode("ascii", "replace"))
    if key[:1] != K.salt(crash_id):
        raise InvalidArgument(f"time index key salt does not match its crash id: {key!r}")
    stamp = key[1:-K.CRASH_ID_LEN]
    if len(stamp) == K.TIMESTAMP_LEN:
        return crash_id, K.parse_key_timestamp(stamp)
    if not re.fullmatch(rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}", stamp):
        raise InvalidArgument(f"not a time index row key: {key!r}")
    return crash_id, stored_time(stamp)


def time_index_key_forms(crash_id, moment):
    """Every key a pointer of ``crash_id`` at ``moment`` may have: ours first, then Socorro's
    19-character form when the microsecond is 0 (its 26-character form is ours)."""
    key = K.time_index_key(crash_id, moment)
    if K.parse_timestamp(moment).microsecond:
        return [key]
    return [key, key[:1] + key[1:1 + SOCORRO_SHORT_STAMP_LEN] + key[1 + K.TIMESTAMP_LEN:]]


def window_scan_end(end):
    """The instant a time-index scan for ``[start, end)`` must stop at, so that it meets every key
    form of every instant before ``end``.

    Socorro's 19-character key of a whole second ``w`` (``…T12:35:00<crash id>``) sorts after
    every 26-character key of ``w`` (``.`` sorts before the crash id's hex digits), so a stop key
    inside ``w`` would cut it off although ``w < end``.  The scan stops at the next whole second
    instead (``end`` itself when it is one); readers drop the 26-character keys of ``[end, that
    second)`` by their time.
    """
    end = K.parse_timestamp(end, "end")
    return end if not end.microsecond else end.replace(microsecond=0) + timedelta(seconds=1)


def second_of_key(key):
    """The bytes naming the whole second of a time-index key in either layout (salt and
    ``YYYY-MM-DDTHH:MM:SS``): the keys of one second, 19- or 26-character, share it."""
    return key[:1 + SOCORRO_SHORT_STAMP_LEN]


def canonical_time_index_key(key):
    """Our form of a time-index key in either layout (InvalidArgument when it is neither)."""
    crash_id, moment = parse_stored_time_index_key(key)
    return K.time_index_key(crash_id, moment)

# -- Socorro's layouts we do not use --------------------------------------------------------------

def presalt_crash_row_key(crash_id):
    """Socorro's pre-salt crash_reports key of a crash: ``YYMMDD + crash_id`` (its 2013 client
    still read it with ``ooid_to_row_id(ooid, old_format=True)``).  Inverse: :func:`crash_id_of_row`."""
    return K.crash_row_key(crash_id)[1:]


def crash_id_of_row(row):
    """The crash id of a crash_reports row key in our layout or Socorro's pre-salt one;
    InvalidArgument for any other key."""
    if isinstance(row, bytes) and len(row) == 6 + K.CRASH_ID_LEN:
        crash_id = K.validate_crash_id(row[6:].decode("ascii", "replace"))
        if presalt_crash_row_key(crash_id) != row:
            raise InvalidArgument(f"crash_reports row key does not match its crash id: {row!r}")
        return crash_id
    return K.crash_id_from_row_key(row)


def parse_socorro_signature_key(key):
    """``(signature, crash_id)`` of Socorro's signature-index key ``signature + crash_id``.

    Only call it for keys that are not in our layout (:func:`keys.parse_signature_index_key`
    fails): Socorro's layout cannot be told apart from ours by itself.
    """
    if not isinstance(key, bytes) or len(key) <= K.CRASH_ID_LEN:
        raise InvalidArgument(f"not a Socorro signature index key: {key!r}")
    crash_id = K.validate_crash_id(key[-K.CRASH_ID_LEN:].decode("ascii", "replace"))
    return key[:-K.CRASH_ID_LEN].decode("utf-8", "replace"), crash_id


def socorro_signature_key(signature, crash_id):
    """Socorro's signature-index key of a crash: ``signature + crash_id`` (``signature`` as
    stored: ``##empty##`` / ``##null##`` for the special values).  Inverse:
    :func:`parse_socorro_signature_key`."""
    return signature.encode("utf-8", "surrogatepass") + K.validate_crash_id(crash_id).encode("ascii")


def socorro_hang_time_key(hang_id, moment):
    """Socorro's ``hang_id_submitted_time`` key of a hang crash submitted at ``moment``:
    ``hang_id[0] + time + hang_id``, the time in UTC without an offset as Python's isoformat
    writes it (no fraction at a whole second).  Inverse: :func:`parse_socorro_hang_time_key`."""
    stamp = K.parse_timestamp(moment).replace(tzinfo=None).isoformat()
    return (hang_id[0] + stamp + hang_id).encode("utf-8", "surrogatepass")


def parse_socorro_hang_time_key(key):
    """``(hang_id, aware UTC datetime)`` of a key :func:`socorro_hang_time_key` makes."""
    try:
        text = key.decode("utf-8", "surrogatepass")
    except (AttributeError, UnicodeDecodeError):
        raise InvalidArgument(f"not a Socorro hang time key: {key!r}") from None
    width = 1 + K.TIMESTAMP_LEN if text[1 + SOCORRO_SHORT_STAMP_LEN:2 + SOCORRO_SHORT_STAMP_LEN] == "." \
        else 1 + SOCORRO_SHORT_STAMP_LEN
    hang_id = text[width:]
    if not hang_id or hang_id[0] != text[0]:
        raise InvalidArgument(f"not a Socorro hang time key: {key!r}")
    return hang_id, K.parse_timestamp(text[1:width] + "+00:00")


def validate_metrics_row_name(row):
    """A metrics row name as bytes: any name, ours or Socorro's (``crash_report_queue``), as long
    as it is 1-256 bytes of printable UTF-8 without spaces.  InvalidArgument otherwise."""
    if isinstance(row, str):
        row = row.encode("utf-8", "surrogatepass")
    if not isinstance(row, bytes):
        raise InvalidArgument(f"a metrics row must be str or bytes, not {type(row).__name__}")
    try:
        text = row.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"metrics row is not UTF-8: {row!r}") from None
    if not 0 < len(row) <= _ROW_NAME_MAX or not text.isprintable() or any(c.isspace() for c in text):
        raise InvalidArgument(f"bad metrics row name {row!r}: expected 1-{_ROW_NAME_MAX} printable "
                              "bytes without spaces, e.g. 2016-09-18T12 or crash_report_queues")
    return row
