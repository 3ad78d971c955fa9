"""Reading a time given by a caller: a datetime, a date or an ISO 8601 string, as aware UTC;
and a duration (``90s``, ``15m``, ``1h``, ``2d``) as seconds.

A leaf module (like ``errors``): the key layouts (:mod:`socorro_store.schema.keys`) format what this
returns, and the domain modules accept the same inputs through it.
"""

import re
from datetime import date, datetime, timezone

from ..errors import InvalidArgument


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


_DURATION = re.compile(r"\A([0-9]+(?:\.[0-9]+)?)([smhd]?)\Z")  # [0-9]: float() takes other scripts' digits
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text):
    """Seconds (a float) from ``90``, ``90s``, ``15m``, ``1h`` or ``2d``; InvalidArgument otherwise."""
    match = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if not match:
        raise InvalidArgument(f"bad duration {text!r}: expected e.g. 90s, 15m, 1h, 2d")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]
