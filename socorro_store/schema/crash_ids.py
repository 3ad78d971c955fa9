"""Socorro's crash ids: the form, minting one, and reading one as people paste it.

The form is Socorro's (``socorro.lib.ooid``)::

    xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxDYYMMDD        e.g. de1bb258-cbbf-4589-a673-34f800160918

a random UUID, lowercase hex, whose last seven characters are replaced by a depth digit ``D``
and the submission date ``YYMMDD`` (20YY; it must be a real date).  The store keys crashes by
that date (``crash_reports`` rows start with salt + YYMMDD, see :mod:`.keys`), so a plain
``uuid.uuid4()`` is refused: :func:`new_crash_id` mints one.

People paste ids in three forms, all read by :func:`parse_crash_id`: the bare id, crash-stats'
``bp-<id>``, and a report URL (``https://crash-stats.mozilla.org/report/index/<id>``, also with
``bp-``).  The store's own calls take only the bare id: parsing is for what a person typed.

A leaf module: :mod:`.keys` re-exports everything here.
"""

import re
import uuid
from datetime import date, datetime, timezone
from urllib.parse import urlsplit

from ..errors import InvalidArgument, InvalidCrashID
from .timeparse import parse_timestamp

# Anchored with \A and \Z and used with ``fullmatch``: ``$`` also matches before a trailing
# newline, so ``match`` with ``$`` accepted ``"<crash id>\n"``, and the key built from it made a
# day of index rows unreadable.  Digits are ``[0-9]``: ``\d`` also matches other scripts' digits.
CRASH_ID_RE = re.compile(r"\A[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{6}[0-9]{6}\Z")
CRASH_ID_LEN = 36
_YYMMDD_RE = re.compile(r"\A[0-9]{6}\Z")
#: Socorro's default depth digit (``ooid.defaultDepth``).
DEFAULT_DEPTH = 2
#: The expected form, with an example, for error messages.
CRASH_ID_FORM = ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxDYYMMDD (lowercase hex, a depth digit D and the "
                 "submission date YYMMDD), e.g. de1bb258-cbbf-4589-a673-34f800160918; "
                 "socorro_store.new_crash_id() makes one")
#: crash-stats' prefix of a crash id in its pages and links.
BP_PREFIX = "bp-"
#: The path of a crash-stats report page, before the id.
REPORT_PATH = "/report/index/"


def validate_crash_id(crash_id):
    """Return ``crash_id`` if it is in Socorro's format with a real date; else raise InvalidCrashID
    (whose message shows the expected form)."""
    if not is_crash_id(crash_id):
        raise InvalidCrashID(f"not a Socorro crash id: {crash_id!r}; expected {CRASH_ID_FORM}")
    try:
        crash_date(crash_id)
    except ValueError:
        raise InvalidCrashID(f"crash id {crash_id!r} ends in an impossible date "
                             f"(YYMMDD); expected {CRASH_ID_FORM}") from None
    return crash_id


def is_crash_id(value):
    """True when ``value`` is a string in Socorro's crash id format (the date is not checked)."""
    return isinstance(value, str) and CRASH_ID_RE.fullmatch(value) is not None


def crash_date(crash_id):
    """The submission date encoded in the last six characters (YYMMDD, 20YY); ValueError when
    they are not six ASCII digits of a real date."""
    tail = crash_id[-6:]
    if not _YYMMDD_RE.fullmatch(tail):  # int() would take " 1", "1\n" and non-ASCII digits
        raise ValueError(f"not a YYMMDD date: {tail!r}")
    return date(2000 + int(tail[:2]), int(tail[2:4]), int(tail[4:]))


def new_crash_id(submitted=None, depth=DEFAULT_DEPTH):
    """A new crash id in Socorro's form, as Socorro's collector mints it.

    ``submitted``: when the crash was submitted (a datetime, a date or an ISO 8601 string; naive
    means UTC; default now).  Its UTC date becomes the id's YYMMDD, so it must fall in 2000-2099.
    Save the crash with the same time (``submitted_timestamp``), or the id's day and the
    submission day differ.  ``depth``: the depth digit, 0-9 (Socorro's default is 2; the store
    does not use it).  Raises InvalidArgument for anything else.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 9:
        raise InvalidArgument(f"depth must be an int 0-9, not {depth!r}")
    if submitted is None:
        day = datetime.now(timezone.utc).date()
    elif isinstance(submitted, date) and not isinstance(submitted, datetime):
        day = submitted
    else:
        day = parse_timestamp(submitted, "submitted").date()
    if not 2000 <= day.year <= 2099:
        raise InvalidArgument(f"a crash id holds a date in 2000-2099, not {day.isoformat()}")
    return f"{str(uuid.uuid4())[:-7]}{depth}{day:%y%m%d}"


def parse_crash_id(text):
    """The crash id in ``text``: a bare id, ``bp-<id>``, or a report URL such as
    ``https://crash-stats.mozilla.org/report/index/<id>`` (any host; ``bp-`` allowed; a query or
    fragment is ignored).  Surrounding whitespace is ignored and hex is lowercased.

    Returns the bare id, validated; raises InvalidCrashID naming the accepted forms.
    """
    if not isinstance(text, str):
        raise InvalidCrashID(f"a crash id must be a string, not {type(text).__name__}")
    candidate = text.strip()
    if candidate.lower().startswith(("http://", "https://")):
        try:
            path = urlsplit(candidate).path.rstrip("/")
        except ValueError:  # urlsplit refuses a bad bracketed host ("https://[::1/...") bare
            path = ""
        _head, sep, tail = path.rpartition(REPORT_PATH.rstrip("/") + "/")
        if not sep or "/" in tail:
            raise InvalidCrashID(f"not a crash report URL: {text!r}; expected "
                                 f"https://crash-stats.mozilla.org{REPORT_PATH}<crash id>")
        candidate = tail
    if candidate[:len(BP_PREFIX)].lower() == BP_PREFIX:
        candidate = candidate[len(BP_PREFIX):]
    candidate = candidate.lower()
    if not is_crash_id(candidate):
        raise InvalidCrashID(f"not a Socorro crash id: {text!r}; give the id, bp-<id> or a "
                             f"{REPORT_PATH}<id> URL, the id being {CRASH_ID_FORM}")
    return validate_crash_id(candidate)
