"""How the pages write values: dates with their time zone, booleans as words, durations with
units, and any stored value (a crash's documents hold whatever a client sent) as plain text.

Every function takes any value and returns text (or None: nothing to show); none raises, so a
crash holding a field of an unexpected type still renders.  The templates escape the text.
"""

import json
from datetime import datetime, timezone


def when(value):
    """A time as ``YYYY-MM-DD HH:MM:SS UTC``: an aware datetime, or ISO 8601 text (a time without
    an offset is taken as UTC, as Socorro stores them); other text is returned as it is."""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return value
    if not isinstance(moment, datetime):
        return text(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def epoch(value):
    """Epoch seconds (a number, or digits as Socorro's annotations hold them) as :func:`when`
    writes a time; anything else as text."""
    # ASCII only: isdigit() is also true of "²" (which int() refuses) and of other scripts' digits
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return when(datetime.fromtimestamp(value, timezone.utc))
        except (OverflowError, OSError, ValueError):
            return text(value)
    return text(value)


def hour_label(row):
    """A metrics hour row ``YYYY-MM-DDTHH`` as an axis label carrying its date: ``11-14 15h``."""
    return f"{row[5:10]} {row[11:13]}h" if len(row) >= 13 else row


def yes_no(value):
    """A boolean (or Socorro's ``"1"``/``"0"``, ``"true"``/``"false"``) as ``yes``/``no``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, str)) and str(value).strip().lower() in ("1", "true", "0", "false"):
        return "yes" if str(value).strip().lower() in ("1", "true") else "no"
    return text(value)


def duration(value):
    """Seconds as ``3,725 seconds (1 h 2 min)``; a value that is not a number as text."""
    try:
        seconds = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or seconds < 0:
        return text(value)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if n][:2]
    return f"{seconds:,} second{'s' if seconds != 1 else ''}" + (f" ({' '.join(parts)})" if parts else "")


def percent(value):
    """A number as ``87%`` (crash-stats' bit-flip confidence); anything else as text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}%"
    return text(value)


def text(value):
    """Any stored value as text: None and empty text are nothing (None); booleans as words;
    lists of scalars one per line; objects as JSON."""
    if value is None or value == "" or value == [] or value == {}:
        return None
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return "\n".join(str(v) for v in value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
