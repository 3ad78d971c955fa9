"""Every row-key and column layout of the store, each with its inverse.

This module is the one place that knows how bytes are laid out; the domain modules (crashes,
queue, counters) and the batch jobs (rollup, reconcile, expiry, verify-indexes) build and parse
keys only through it.  All keys are ``bytes``; text parts are ASCII except signatures and hang ids
(UTF-8).

Crash ids
    Socorro's format: ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxDYYMMDD``, lowercase hex, where ``D`` is a
    depth digit and ``YYMMDD`` the submission date (it must be a real date).  The salt of a crash
    is its first character (16 buckets, ``0``-``f``).  Validating, minting
    (:func:`new_crash_id`) and reading pasted forms (:func:`parse_crash_id`: ``bp-<id>``, report
    URLs) live in :mod:`socorro_store.schema.crash_ids`, re-exported here.

Timestamps in keys
    ``YYYY-MM-DDTHH:MM:SS.ffffff`` (26 ASCII bytes), UTC, no offset, always microseconds: fixed
    width, so byte order is time order.  :func:`format_timestamp` / :func:`parse_key_timestamp`.
    Socorro's own rows hold other forms (offsets, 19-character key times, ``Y`` flags): readers
    of stored data go through :mod:`socorro_store.schema.stored`, which accepts them all.

Tables and row keys (``S`` = salt, ``T`` = 26-byte timestamp, ``ID`` = 36-byte crash id)::

    crash_reports                               S + YYMMDD + ID            (43 bytes)
    crash_reports_index_submitted_time          S + T + ID                 (63 bytes)
    crash_reports_index_unprocessed_flag        S + T + ID                 standard queue
                                                b"priority/" + S + T' + ID priority queue (T' =
                                                                           time of the request)
    crash_reports_index_legacy_unprocessed_flag S + T + ID                 legacy queue
    crash_reports_index_legacy_submitted_time   S + T + ID
    crash_reports_index_hang_id_submitted_time  S + T + ID
    crash_reports_index_hang_id                 hang id (UTF-8)            as Socorro
    crash_reports_index_signature_ooid          esc(signature) + 0x00 + T + ID
    crash_report_signatures                     signature row (UTF-8; ``##empty##`` / ``##null##``)
    metrics                                     ``yyyy`` | ``yyyy-mm`` | ``yyyy-mm-dd`` |
                                                ``yyyy-mm-ddThh`` | ``yyyy-mm-ddThh:mm`` |
                                                ``crash_report_queues``

Priority rows live in the standard queue table under ``b"priority/"``: that prefix sorts after
every salt character, so the 16 salted prefix scans of the standard queue never see them.

The signature index differs from Socorro's ``signature + crash_id`` in two ways: (1) a 0x00
separator ends the signature, so ``"foo"`` never matches rows of ``"foo::bar"``; signatures are
escaped so they contain no 0x00 (0x01 -> 0x01 0x01, 0x00 -> 0x01 0x02; injective, and
0x00-free); (2) the submitted time precedes the crash id, so "signature S between T1 and T2" is
one range scan ``[esc(S) 00 T1, esc(S) 00 T2)``.  The rows of one hot signature are contiguous,
as in Socorro; the time component spreads them in time order.

Columns (``family:qualifier``)::

    crash_reports   flags:processed (b"N" / b"Y"), flags:legacy_processing (b"0"/b"1"/b"2"),
                    flags:priority_processing (the pending priority request's timestamp T'),
                    ids:ooid, ids:hang, meta_data:json, raw_data:<dump name> (``dump`` for
                    ``upload_file_minidump``), timestamps:submitted (T), timestamps:processed (T),
                    processed_data:json, processed_data:signature, flags:process_type
                    (ProcessType), flags:processing_error (b"1" / b"0"); rows written by Socorro
                    hold other forms, read by :mod:`socorro_store.schema.stored`
    time indexes    ids:ooid (the crash id)
    queue rows      processor_state:dead; ``~claims/<minute>`` rows (the claim histories) and
                    ``~dead/<crash id>`` rows, laid out in :mod:`socorro_store.schema.queue_keys`
    hang_id         ids:ooid:<ProcessType> -> crash id; ids:paired (marker, pair counted once)
    hang_id_submitted_time   ids:ooid, ids:hang
    signature_ooid  ids:ooid
    metrics         counters:<name> (8-byte big-endian signed)
    crash_report_signatures  counters:hourly_yyyy-mm-ddThh, counters:daily_yyyy-mm-dd,
                             counters:monthly_yyyy-mm, counters:yearly_yyyy
    crash_report_signatures_seen (ours)  rows = metrics rows of hours, days, months, years;
                             seen:<signature row> -> first-seen marker (:func:`first_seen_cells`)
"""

import functools
import re
import struct
from datetime import datetime, timedelta, timezone

from ..checks import is_int
from ..errors import InvalidArgument
from .crash_ids import (  # noqa: F401 - re-exported: the crash id form lives in crash_ids.py
    CRASH_ID_FORM,
    CRASH_ID_LEN,
    CRASH_ID_RE,
    crash_date,
    is_crash_id,
    new_crash_id,
    parse_crash_id,
    validate_crash_id,
)
from .job_keys import (  # noqa: F401 - re-exported: the jobs table's layouts
    COL_LEASE,
    COL_RUN_JOB,
    JOBS,
    job_lease_key,
    job_run_key,
    job_run_prefix,
    new_run_id,
    parse_job_run_key,
    parse_run_id_key,
    run_id_key,
    validate_job_name,
    validate_run_id,
)
from .specs import SALTS  # noqa: F401 - re-exported: the salt characters of every salted key
from .timeparse import parse_timestamp  # noqa: F401 - re-exported: keys take the same time inputs

# Every pattern that validates a whole name or id is anchored with \A and \Z and used with
# ``fullmatch``: ``$`` also matches before a trailing newline.  Digits are ``[0-9]``: in a ``str``
# pattern ``\d`` also matches other scripts' digits, which ``int`` accepts.
TIMESTAMP_LEN = 26
_TIMESTAMP_RE = re.compile(rb"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\Z")
MAX_KEY_PART = 16 * 1024  # a signature or hang id longer than this is refused (row keys <= 32767)

# -- tables ----------------------------------------------------------------------------------
CRASH_REPORTS = "crash_reports"
SUBMITTED_TIME = "crash_reports_index_submitted_time"
UNPROCESSED_FLAG = "crash_reports_index_unprocessed_flag"
LEGACY_UNPROCESSED_FLAG = "crash_reports_index_legacy_unprocessed_flag"
LEGACY_SUBMITTED_TIME = "crash_reports_index_legacy_submitted_time"
HANG_ID = "crash_reports_index_hang_id"
HANG_ID_SUBMITTED_TIME = "crash_reports_index_hang_id_submitted_time"
SIGNATURE_OOID = "crash_reports_index_signature_ooid"
METRICS = "metrics"
SIGNATURES = "crash_report_signatures"
SIGNATURES_SEEN = "crash_report_signatures_seen"  # our addition: first-seen markers
CHANGES = "crash_report_changes"  # our addition: change records (see change_record_key)
DERIVED = "crash_report_derived"  # our addition: the deriver's state (see derived_keys)
#: Every table the crash store writes, index tables first (the order of the writes).
CRASH_TABLES = (SUBMITTED_TIME, UNPROCESSED_FLAG, LEGACY_UNPROCESSED_FLAG, LEGACY_SUBMITTED_TIME,
                HANG_ID, HANG_ID_SUBMITTED_TIME, SIGNATURE_OOID, CRASH_REPORTS, METRICS, SIGNATURES,
                SIGNATURES_SEEN, CHANGES, DERIVED)

# -- columns ---------------------------------------------------------------------------------
COL_PROCESSED = b"flags:processed"
COL_LEGACY = b"flags:legacy_processing"
COL_PRIORITY = b"flags:priority_processing"
COL_OOID = b"ids:ooid"
COL_HANG = b"ids:hang"
COL_META = b"meta_data:json"
COL_SUBMITTED = b"timestamps:submitted"
COL_PROCESSED_AT = b"timestamps:processed"
COL_PROCESSED_JSON = b"processed_data:json"
COL_SIGNATURE = b"processed_data:signature"
FAMILY_RAW = b"raw_data"
FAMILY_PROCESSOR_STATE = b"processor_state"
COL_PAIRED = b"ids:paired"
COL_PROCESS_TYPE = b"flags:process_type"  # the raw crash's ProcessType, so counts skip meta_data:json
COL_PROCESSING_ERROR = b"flags:processing_error"  # b"1"/b"0", so counts skip processed_data:json
COL_CHANGED = b"flags:changed"  # the stamp of the crash's last change record
COL_CHANGE_ID = b"change:ooid"  # a change record's crash id
COL_CHANGE_LEASE = b"change:lease"  # the feed lease: holder|expiry
COL_CHANGE_DERIVE = b"change:derive"  # a change record's mark for the counter deriver: S (save), D (deletion) or E (expiry)
FAMILY_COUNTERS = b"counters"

# -- crash ids -------------------------------------------------------------------------------

# validate_crash_id, is_crash_id, crash_date, new_crash_id, parse_crash_id: see crash_ids.py


def salt(crash_id):
    """The salt byte of a crash: its first character."""
    return crash_id[0].encode("ascii")


def crash_row_key(crash_id):
    """crash_reports row key: ``salt + YYMMDD + crash_id``."""
    validate_crash_id(crash_id)
    return (crash_id[0] + crash_id[-6:] + crash_id).encode("ascii")


def crash_day_prefix(salt_char, day):
    """The crash_reports rows of one salt and one crash-id day: ``salt + YYMMDD`` (a prefix of
    :func:`crash_row_key`)."""
    return salt_char.encode("ascii") + day.strftime("%y%m%d").encode("ascii")


def crash_id_from_row_key(key):
    """Inverse of :func:`crash_row_key`; raises InvalidArgument for a malformed key."""
    if not isinstance(key, bytes) or len(key) != 7 + CRASH_ID_LEN:
        raise InvalidArgument(f"not a crash_reports row key: {key!r}")
    crash_id = key[7:].decode("ascii", "replace")
    validate_crash_id(crash_id)
    if crash_row_key(crash_id) != key:
        raise InvalidArgument(f"crash_reports row key does not match its crash id: {key!r}")
    return crash_id


def format_timestamp(moment):
    """The fixed-width key form of a time: ``YYYY-MM-DDTHH:MM:SS.ffffff`` (UTC, 26 bytes)."""
    moment = parse_timestamp(moment)
    if moment.year < 1000:
        raise InvalidArgument(f"timestamp before year 1000: {moment!r}")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f").encode("ascii")


def parse_key_timestamp(raw):
    """Inverse of :func:`format_timestamp`: an aware UTC datetime."""
    if not isinstance(raw, bytes) or not _TIMESTAMP_RE.fullmatch(raw):
        raise InvalidArgument(f"not a key timestamp: {raw!r}")
    return datetime.strptime(raw.decode("ascii"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc)

# -- salted time indexes (submitted_time, queues, legacy_*, hang_id_submitted_time) -----------

PRIORITY_PREFIX = b"priority/"


def time_index_key(crash_id, moment):
    """``salt + T + crash_id``: a time-ordered row within the crash's salt bucket."""
    validate_crash_id(crash_id)
    return salt(crash_id) + format_timestamp(moment) + crash_id.encode("ascii")


def parse_time_index_key(key):
    """Inverse of :func:`time_index_key`: ``(crash_id, aware UTC datetime)``."""
    if not isinstance(key, bytes) or len(key) != 1 + TIMESTAMP_LEN + CRASH_ID_LEN:
        raise InvalidArgument(f"not a time index row key: {key!r}")
    crash_id = validate_crash_id(key[1 + TIMESTAMP_LEN:].decode("ascii", "replace"))
    if key[:1] != salt(crash_id):
        raise InvalidArgument(f"time index key salt does not match its crash id: {key!r}")
    return crash_id, parse_key_timestamp(key[1:1 + TIMESTAMP_LEN])


def time_index_range(salt_char, start=None, end=None, prefix=b""):
    """``(start, stop)`` row bounds of one salt bucket for times in ``[start, end)``.

    ``prefix`` selects keys behind a prefix (:data:`PRIORITY_PREFIX` for the priority queue).
    """
    bucket = prefix + salt_char.encode("ascii")
    low = bucket + (format_timestamp(start) if start is not None else b"")
    if end is not None:
        high = bucket + format_timestamp(end)
    else:
        high = bucket[:-1] + bytes([bucket[-1] + 1])
    return low, high


def time_index_order(key, prefix=b""):
    """The part of a (prefixed) time index key that orders it across salts: time + crash id."""
    return key[len(prefix) + 1:]


def time_index_stamp(key):
    """The fixed-width timestamp bytes of a time index key (as ``timestamps:submitted`` holds)."""
    return key[1:1 + TIMESTAMP_LEN]


def priority_key(crash_id, requested):
    """Priority queue row: ``b"priority/" + salt + T' + crash_id`` (T' = time of the request)."""
    return PRIORITY_PREFIX + time_index_key(crash_id, requested)


def parse_priority_key(key):
    """Inverse of :func:`priority_key`: ``(crash_id, request time)``."""
    if not isinstance(key, bytes) or not key.startswith(PRIORITY_PREFIX):
        raise InvalidArgument(f"not a priority queue row key: {key!r}")
    return parse_time_index_key(key[len(PRIORITY_PREFIX):])

# -- signatures ------------------------------------------------------------------------------

EMPTY_SIGNATURE = "##empty##"
NULL_SIGNATURE = "##null##"
SIGNATURE_SEPARATOR = b"\x00"


def signature_name(signature):
    """The stored name of a processor's signature: ``##null##`` for None, ``##empty##`` for ""."""
    if signature is None:
        return NULL_SIGNATURE
    if not isinstance(signature, str):
        raise InvalidArgument(f"signature must be a string or None, not {type(signature).__name__}")
    return signature if signature else EMPTY_SIGNATURE


def signature_row(signature):
    """crash_report_signatures row key (UTF-8 of :func:`signature_name`)."""
    raw = signature_name(signature).encode("utf-8", "surrogatepass")
    if len(raw) > MAX_KEY_PART:
        raise InvalidArgument(f"signature longer than {MAX_KEY_PART} bytes")
    return raw


def signature_from_row(row):
    """Inverse of :func:`signature_row`: the stored name (special values stay as they are)."""
    return row.decode("utf-8", "surrogatepass")


def escape_signature(raw):
    """Make ``raw`` free of 0x00 (0x01 -> 0x01 0x01, 0x00 -> 0x01 0x02); injective."""
    return raw.replace(b"\x01", b"\x01\x01").replace(b"\x00", b"\x01\x02")


def unescape_signature(escaped):
    out, i = bytearray(), 0
    while i < len(escaped):
        byte = escaped[i]
        if byte == 1:
            nxt = escaped[i + 1:i + 2]
            if nxt == b"\x01":
                out.append(1)
            elif nxt == b"\x02":
                out.append(0)
            else:
                raise InvalidArgument(f"bad escape in signature key: {escaped!r}")
            i += 2
        elif byte == 0:
            raise InvalidArgument(f"unescaped 0x00 in signature key: {escaped!r}")
        else:
            out.append(byte)
            i += 1
    return bytes(out)


def signature_prefix(signature):
    """Every signature-index row of ``signature`` starts with this (esc(name) + 0x00)."""
    return escape_signature(signature_row(signature)) + SIGNATURE_SEPARATOR


def signature_index_key(signature, moment, crash_id):
    """``esc(signature name) + 0x00 + T + crash_id``."""
    validate_crash_id(crash_id)
    return signature_prefix(signature) + format_timestamp(moment) + crash_id.encode("ascii")


def parse_signature_index_key(key):
    """Inverse of :func:`signature_index_key`: ``(signature name, time, crash_id)``."""
    if not isinstance(key, bytes) or len(key) < 1 + TIMESTAMP_LEN + CRASH_ID_LEN + 1:
        raise InvalidArgument(f"not a signature index row key: {key!r}")
    head, tail = key[:-(TIMESTAMP_LEN + CRASH_ID_LEN)], key[-(TIMESTAMP_LEN + CRASH_ID_LEN):]
    if not head.endswith(SIGNATURE_SEPARATOR):
        raise InvalidArgument(f"signature index key lacks its separator: {key!r}")
    name = signature_from_row(unescape_signature(head[:-1]))
    crash_id = validate_crash_id(tail[TIMESTAMP_LEN:].decode("ascii", "replace"))
    return name, parse_key_timestamp(tail[:TIMESTAMP_LEN]), crash_id


def signature_index_range(signature, start=None, end=None):
    """``(start, stop)`` bounds of "signature between start and end" (end exclusive)."""
    prefix = signature_prefix(signature)
    low = prefix + (format_timestamp(start) if start is not None else b"")
    high = prefix + format_timestamp(end) if end is not None else prefix[:-1] + b"\x01"
    return low, high

# -- hang index ------------------------------------------------------------------------------

_NAME_RE = re.compile(r"\A[A-Za-z0-9_.\-]{1,128}\Z")


def hang_row_key(hang_id):
    """crash_reports_index_hang_id row: the hang id itself, as Socorro."""
    if not isinstance(hang_id, str) or not hang_id:
        raise InvalidArgument(f"hang id must be a non-empty string: {hang_id!r}")
    raw = hang_id.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_KEY_PART:
        raise InvalidArgument(f"hang id longer than {MAX_KEY_PART} bytes")
    return raw


def hang_id_from_row_key(row):
    return row.decode("utf-8", "surrogatepass")


def validate_process_type(process_type):
    """A ProcessType value usable in a column name (letters, digits, ``_.-``)."""
    if not isinstance(process_type, str) or not _NAME_RE.fullmatch(process_type):
        raise InvalidArgument(f"bad ProcessType: {process_type!r}")
    return process_type


HANG_COLUMN_PREFIX = b"ids:ooid:"


def hang_column(process_type):
    """``ids:ooid:<ProcessType>``: the side of a hang pair in the hang-id row."""
    return HANG_COLUMN_PREFIX + validate_process_type(process_type).encode("ascii")


def is_hang_column(column):
    return column.startswith(HANG_COLUMN_PREFIX) and len(column) > len(HANG_COLUMN_PREFIX)


def process_type_from_hang_column(column):
    if not is_hang_column(column):
        raise InvalidArgument(f"not a hang column: {column!r}")
    return column[len(HANG_COLUMN_PREFIX):].decode("ascii")

# -- dumps -----------------------------------------------------------------------------------

DEFAULT_DUMP = "upload_file_minidump"


def validate_dump_name(name):
    """A dump name from the submission form: letters, digits, ``_.-``, at most 128; not "dump"."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name == "dump":
        raise InvalidArgument(f"bad dump name: {name!r}")
    return name


def dump_column(name):
    """``raw_data:dump`` for ``upload_file_minidump`` (as Socorro), else ``raw_data:<name>``."""
    name = validate_dump_name(name)
    return FAMILY_RAW + b":" + (b"dump" if name == DEFAULT_DUMP else name.encode("ascii"))


def dump_name_from_column(column):
    """Inverse of :func:`dump_column`."""
    family, _, qualifier = column.partition(b":")
    if family != FAMILY_RAW or not qualifier:
        raise InvalidArgument(f"not a dump column: {column!r}")
    return DEFAULT_DUMP if qualifier == b"dump" else qualifier.decode("ascii")

# -- metrics and signature counters ----------------------------------------------------------

#: Time levels, finest first: (name, metrics row format, signature counter column prefix).
LEVELS = ("minute", "hour", "day", "month", "year")
_METRICS_FORMATS = {"minute": "%Y-%m-%dT%H:%M", "hour": "%Y-%m-%dT%H", "day": "%Y-%m-%d",
                    "month": "%Y-%m", "year": "%Y"}
_METRICS_RE = {"minute": r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}", "hour": r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}",
               "day": r"[0-9]{4}-[0-9]{2}-[0-9]{2}", "month": r"[0-9]{4}-[0-9]{2}", "year": r"[0-9]{4}"}
QUEUE_ROW = b"crash_report_queues"
#: Signature counter levels (the wiki has no per-minute signature column).
SIGNATURE_LEVELS = {"hour": "hourly_", "day": "daily_", "month": "monthly_", "year": "yearly_"}


def metrics_row(moment, level):
    """The metrics row of ``moment``'s interval at ``level`` (e.g. ``b"2016-09-18T12"``)."""
    if level not in _METRICS_FORMATS:
        raise InvalidArgument(f"unknown level {level!r}: expected one of {', '.join(LEVELS)}")
    return metrics_rows(moment)[level]


def metrics_rows(moment):
    """``{level: row}`` for the five levels of ``moment`` (a new dict: the caller may keep it)."""
    moment = parse_timestamp(moment)
    return dict(_minute_rows(moment.year, moment.month, moment.day, moment.hour, moment.minute))


@functools.lru_cache(maxsize=4096)
def _minute_rows(year, month, day, hour, minute):
    """The five metrics rows of one minute, formatted once: every counted crash needs them
    (strftime was a tenth of a batched save's client time), and a minute's crashes share them."""
    moment = datetime(year, month, day, hour, minute)
    return tuple((level, moment.strftime(fmt).encode("ascii")) for level, fmt in _METRICS_FORMATS.items())


def parse_metrics_row(row):
    """Inverse of :func:`metrics_row`: ``(level, start of interval)``, or ``("queues", None)``.

    Raises InvalidArgument for anything that is not a metrics row (including impossible dates).
    """
    if isinstance(row, str):
        row = row.encode("utf-8")
    if not isinstance(row, bytes):
        raise InvalidArgument(f"a metrics row must be str or bytes, not {type(row).__name__}")
    if row == QUEUE_ROW:
        return "queues", None
    text = row.decode("ascii", "replace")
    for level in LEVELS:
        if re.fullmatch(_METRICS_RE[level], text):
            try:
                start = datetime.strptime(text, _METRICS_FORMATS[level]).replace(tzinfo=timezone.utc)
            except ValueError:
                break
            return level, start
    raise InvalidArgument(f"not a metrics row: {row!r} (yyyy, yyyy-mm, yyyy-mm-dd, yyyy-mm-ddThh, "
                          "yyyy-mm-ddThh:mm or crash_report_queues)")


def interval_end(level, start):
    """End (exclusive) of the interval of ``level`` starting at ``start``."""
    if level == "minute":
        return start + timedelta(minutes=1)
    if level == "hour":
        return start + timedelta(hours=1)
    if level == "day":
        return start + timedelta(days=1)
    if level == "month":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start.replace(year=start.year + 1)


def counter_column(name):
    """``counters:<name>`` of a metrics counter."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidArgument(f"bad counter name: {name!r}")
    return FAMILY_COUNTERS + b":" + name.encode("ascii")


def signature_counter_columns(moment):
    """``{level: b"counters:hourly_yyyy-mm-ddThh"…}`` for hour, day, month and year (a new dict)."""
    moment = parse_timestamp(moment)
    return dict(_hour_signature_columns(moment.year, moment.month, moment.day, moment.hour))


@functools.lru_cache(maxsize=1024)
def _hour_signature_columns(year, month, day, hour):
    """The signature counter columns of one hour, built once (see :func:`_minute_rows`)."""
    rows = dict(_minute_rows(year, month, day, hour, 0))
    return tuple((level, signature_counter_column(level, rows[level])) for level in SIGNATURE_LEVELS)


def signature_counter_column(level, interval_row):
    """The signature column of one interval, named by its metrics row (``b"2016-09-18T12"``)."""
    return FAMILY_COUNTERS + b":" + SIGNATURE_LEVELS[level].encode("ascii") + interval_row


def parse_signature_counter_column(column):
    """Inverse of :func:`signature_counter_columns`: ``(level, interval start)``."""
    family, _, qualifier = column.partition(b":")
    if family != FAMILY_COUNTERS:
        raise InvalidArgument(f"not a signature counter column: {column!r}")
    for level, prefix in SIGNATURE_LEVELS.items():
        if qualifier.startswith(prefix.encode("ascii")):
            found, start = parse_metrics_row(qualifier[len(prefix):])
            if found == level:
                return level, start
    raise InvalidArgument(f"not a signature counter column: {column!r}")


FAMILY_SEEN = b"seen"


def first_seen_cells(signature, moment):
    """``{level: (row, column)}``: where ``signature`` is marked as seen in each interval of
    ``moment`` that has a signature column (hour, day, month, year).

    The row is the interval's metrics row (``b"2016-09-18T12"``) in :data:`SIGNATURES_SEEN`, the
    column ``seen:`` + the signature's row key, so one row holds every signature of an interval.
    """
    column = FAMILY_SEEN + b":" + signature_row(signature)
    rows = metrics_rows(moment)
    return {level: (rows[level], column) for level in SIGNATURE_LEVELS}


#: the intervals whose signature detail an ``expire`` run is deleting (``seen:<interval row>``),
#: recorded before the detail goes: a run killed half-way leaves them for the next run to clean
#: (their first-seen markers and a day's rankings), whatever that run deletes itself
EXPIRING_ROW = b"~expire/pending"


def expiring_column(interval_row):
    """The column of :data:`EXPIRING_ROW` naming one interval's metrics row."""
    parse_metrics_row(interval_row)
    return FAMILY_SEEN + b":" + interval_row


def parse_expiring_column(column):
    """Inverse of :func:`expiring_column`: the interval's metrics row."""
    family, sep, row = column.partition(b":")
    if family != FAMILY_SEEN or not sep:
        raise InvalidArgument(f"not an expiring-interval column: {column!r}")
    parse_metrics_row(row)
    return row


def parse_first_seen_cell(row, column):
    """Inverse of :func:`first_seen_cells`: ``(level, interval start, signature name)``."""
    family, sep, qualifier = column.partition(b":")
    level, start = parse_metrics_row(row)
    if family != FAMILY_SEEN or not sep or level not in SIGNATURE_LEVELS:
        raise InvalidArgument(f"not a first-seen cell: {row!r} {column!r}")
    return level, start, signature_from_row(qualifier)


_COUNTER = struct.Struct(">q")


def encode_counter(value):
    """8-byte big-endian signed integer, as HBase stores counters."""
    if not is_int(value) or not -(2**63) <= value < 2**63:
        raise InvalidArgument(f"counter value must be a 64-bit int: {value!r}")
    return _COUNTER.pack(value)


def decode_counter(raw):
    """Inverse of :func:`encode_counter`; InvalidArgument for a cell that is not 8 bytes."""
    if not isinstance(raw, bytes) or len(raw) != 8:
        raise InvalidArgument(f"not a counter cell: {raw!r}")
    return _COUNTER.unpack(raw)[0]
