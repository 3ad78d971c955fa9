"""Reading a time given by a caller: a datetime, a date or an ISO 8601 string, as aware UTC;
one UTC day (``YYYY-MM-DD``) as the interval it spans; and a duration (``90s``, ``15m``, ``1h``,
``2d``) as seconds.

A leaf module (like ``errors``): the key layouts (:mod:`socorro_store.schema.keys`) format what this
returns, and the domain modules accept the same inputs through it.
"""

import re
from datetime import date, datetime, timedelta, timezone

from ..errors import InvalidArgument

#: The first and last day :func:`parse_day` takes.  The store's time keys begin in year 1000
#: (``keys.format_timestamp``), and a day's end, the next midnight, must be a datetime: 9999-12-31
#: has none.  (A top-crashers report of a day also reads the day before: 0999-12-31 is still a date.)
FIRST_DAY = date(1000, 1, 1)
LAST_DAY = date(9999, 12, 30)

# The fields of an ISO 8601 date or time as far as they are given: YYYY-MM[-DD[Thh[:mm[:ss]]]]
_ISO_FIELDS = re.compile(r"\A([0-9]{4})-([0-9]{2})(?:-([0-9]{2})(?:[T ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2}))?)?)?)?")


def date_problem(text):
    """Why ``text``, shaped as an ISO 8601 date or time (``YYYY-MM[-DD[Thh[:mm[:ss]]]]``), is not a
    real one (``"month must be in 1..12"``, ``"day is out of range for month"``); None when its
    fields make a real date and time, or when it does not have that shape at all."""
    match = _ISO_FIELDS.match(text.strip()) if isinstance(text, str) else None
    if not match:
        return None
    year, month, day, hour, minute, second = (int(field) if field is not None else default for field, default
                                              in zip(match.groups(), (0, 0, 1, 0, 0, 0)))
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        return str(exc)
    return None


def parse_timestamp(value, what="timestamp"):
    """An aware UTC datetime from a datetime or an ISO 8601 string; InvalidArgument otherwise.

    Naive values are taken as UTC; values with an offset are converted to UTC.  A trailing ``Z``
    is accepted (Python 3.10's ``fromisoformat`` does not).
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            problem = date_problem(text)
            if problem is not None:  # ISO 8601 in form, but no such date (2026-13-01, 2026-02-30)
                raise InvalidArgument(f"{what} {value!r} is not a valid date: {problem}") from None
            raise InvalidArgument(f"{what} is not ISO 8601: {value!r}") from None
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        raise InvalidArgument(f"{what} must be an ISO 8601 string or a datetime, not {type(value).__name__}")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00 is before datetime.min in UTC
        raise InvalidArgument(f"{what} is out of range in UTC: {value!r}") from None


def parse_day(value, what="day"):
    """``(start, end)`` of one UTC day: its midnight and the next, aware UTC.

    ``value`` is ``YYYY-MM-DD`` (or any ISO 8601 midnight, or a date).  InvalidArgument, with a
    message that says which, for anything else, for a date that does not exist (2026-02-30), and
    for a day before :data:`FIRST_DAY` or after :data:`LAST_DAY` (9999-12-31 has no end).
    """
    problem = date_problem(value)
    if problem is not None:
        raise InvalidArgument(f"{what} {value!r} is not a valid date YYYY-MM-DD: {problem}")
    try:
        start = parse_timestamp(value, what)
    except InvalidArgument:
        raise InvalidArgument(f"{what} must be a date YYYY-MM-DD, not {value!r}") from None
    if start.hour or start.minute or start.second or start.microsecond:
        raise InvalidArgument(f"{what} must be a date YYYY-MM-DD, not {value!r}")
    if not FIRST_DAY <= start.date() <= LAST_DAY:
        raise InvalidArgument(f"{what} must be from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}, "
                              f"not {start.date().isoformat()}")
    return start, start + timedelta(days=1)


_DURATION = re.compile(r"\A([0-9]+(?:\.[0-9]+)?)([smhd]?)\Z")  # [0-9]: float() takes other scripts' digits
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text):
    """Seconds (a float) from ``90``, ``90s``, ``15m``, ``1h`` or ``2d``; InvalidArgument otherwise."""
    match = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if not match:
        raise InvalidArgument(f"bad duration {text!r}: expected e.g. 90s, 15m, 1h, 2d")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]
