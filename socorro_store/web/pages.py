"""The data of each page, as plain dicts: what the HTML templates show and ``/api/…`` returns.

Every function here is library calls on an open :class:`~socorro_store.crashstore.store.CrashStore`
and reads only counters and indexes, never a scan of crash rows:

- :func:`home`: the queue counters, 48 metrics hour rows (one read), today's top 10 (one
  column-filtered scan of ``crash_report_signatures`` and one read of ``metrics``);
- :func:`top_crashers`: the same scan for the period asked;
- :func:`signature`: one read of the signature's counter row (trend, first seen, breakdown) and
  a reverse scan of its index for one page of crashes (each checked against its crash row);
- :func:`report`: the rows of that one crash.

Arguments arrive as the query's strings; a bad one raises
:class:`~socorro_store.errors.InvalidArgument` with a message for the page (HTTP 400).
"""

from datetime import datetime, time, timedelta, timezone

from ..errors import CrashIDNotFound, InvalidArgument, UnreadableDocument
from ..schema.crash_ids import parse_crash_id
from ..schema.timeparse import parse_day
from .charts import bar_chart

HOME_TOP = 10
TOP_LIMIT = 50
DEFAULT_DAYS = 7
MAX_DAYS = 366
CRASHES_PER_PAGE = 50


def _today(now):
    return datetime.combine(now.date(), time(), tzinfo=timezone.utc)


def _int_arg(text, name, low, high, default):
    if text is None or text == "":
        return default
    try:
        value = int(text, 10)
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number, not {text!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high}, not {value}")
    return value


def _filters(args):
    """``{product, version, os}`` of the query (empty values are no filter)."""
    return {name: (args.get(name) or None) for name in ("product", "version", "os")}


def period(args, now):
    """``(start, end, description)`` of ``day=YYYY-MM-DD`` or ``days=N`` (the last N days,
    today included; default 7).

    A day that does not exist, or whose interval is not representable (before year 1000, or
    9999-12-31, which has no end), is InvalidArgument (400) from :func:`parse_day`.
    """
    day = args.get("day")
    if day:
        start, end = parse_day(day, "day")
        if args.get("days"):
            raise InvalidArgument("give day or days, not both")
        return start, end, start.date().isoformat()
    days = _int_arg(args.get("days"), "days", 1, MAX_DAYS, DEFAULT_DAYS)
    end = _today(now) + timedelta(days=1)
    return end - timedelta(days=days), end, f"the last {days} day{'s' if days > 1 else ''}"


def home(store, now):
    """Queue sizes, crashes per hour over the last 48 hours, today's top 10 signatures."""
    today = _today(now)
    hourly = store.crashes_per_hour(now)
    top = store.top_signatures(today, today + timedelta(days=1), limit=HOME_TOP)
    return {"queue": store.queue_sizes(), "hourly": hourly, "top": top, "day": today.date().isoformat(),
            "chart": bar_chart([[row[-2:] + "h", n] for row, n in hourly], "Crashes submitted per hour, last 48 hours")}


def top_crashers(store, args, now):
    """The top-crashers report of the period and filters of the query."""
    start, end, description = period(args, now)
    report = store.top_signatures(start, end, limit=TOP_LIMIT, **_filters(args))
    return {**report, "period": description, "filters": _filters(args)}


def signature(store, args, now):
    """One signature: its trend, first seen, breakdown and a page of its crashes, newest first."""
    name = args.get("signature")
    if name is None:
        raise InvalidArgument("signature is required: /signature/?signature=NAME")
    page = _int_arg(args.get("page"), "page", 1, 10_000, 1)
    filters = _filters(args)
    report = store.signature_report(name, now=now, **filters)
    today = _today(now)
    breakdown = store.signature_breakdown(name, today - timedelta(days=29), today + timedelta(days=1))
    crashes, more = store.latest_crashes_by_signature(name, CRASHES_PER_PAGE, (page - 1) * CRASHES_PER_PAGE)
    return {
        **report, "filters": filters, "breakdown": breakdown, "page": page, "more": more,
        "crashes": [{"crash_id": crash_id, "submitted": moment.isoformat()} for moment, crash_id in crashes],
        "hourly_chart": bar_chart([[row[-2:] + "h", n] for row, n in report["hourly"]], "Crashes per hour, last 48 hours"),
        "daily_chart": bar_chart([[row[5:], n] for row, n in report["daily"]], "Crashes per day, last 30 days"),
    }


def crash_id_of(text):
    """The crash id in ``text``, in any form a person pastes (id, ``bp-<id>``, a report URL)."""
    if not text or not text.strip():
        raise InvalidArgument("paste a crash id, bp-<id> or a crash report URL")
    return parse_crash_id(text.strip())


def report(store, crash_id, unredacted=False):
    """One crash: processing state, raw annotations, processed crash, dump names and sizes.

    Without ``unredacted`` the processed crash is redacted (the store's forbidden keys) and the
    raw annotations whose name is one of those keys (any case) are left out.
    """
    crash_id = crash_id_of(crash_id)
    summary = store.crash_summary(crash_id)
    unreadable = []  # documents another client stored that no parser here reads: named, not shown
    try:
        raw = store.get_raw_crash(crash_id)
    except UnreadableDocument as exc:
        raw, unreadable = {}, [str(exc)]
    hidden = {key.lower() for key in store.forbidden_keys if "." not in key}
    if not unredacted:
        raw = {key: value for key, value in raw.items() if key.lower() not in hidden}
    try:
        processed = store.get_unredacted_processed(crash_id) if unredacted else store.get_processed(crash_id)
    except CrashIDNotFound:
        processed = None  # not processed yet
    except UnreadableDocument as exc:
        processed, unreadable = None, unreadable + [str(exc)]
    return {"crash_id": crash_id, "state": summary, "raw_crash": raw, "processed_crash": processed,
            "dumps": summary["dumps"], "unredacted": unredacted, "unreadable": unreadable}
