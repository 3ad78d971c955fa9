"""The data of each page, as plain dicts: what the HTML templates show and ``/api/…`` returns.

Every function here is library calls on an open :class:`~socorro_store.crashstore.store.CrashStore`
and reads only counters and indexes, never a scan of crash rows:

- :func:`home`: the queue counters, 48 metrics hour rows (one read), today's top 10 (one
  column-filtered scan of ``crash_report_signatures`` and one read of ``metrics``);
- :func:`top_crashers`: the same for the period asked (or a process type's rankings), plus the
  OS split, process-type split and first appearance of the signatures shown (three multi-row
  reads and the OS registry row);
- :func:`signature`: the columns of the signature's counter row it shows (trend, first seen,
  breakdown: the registry rows and about four column-listed gets, never the whole row) and a
  scan of its index from a cursor for one page of crashes (one get of at most 51 crash rows);
- the report page is :mod:`.report_page`.

Arguments arrive as the query's strings; a bad one raises
:class:`~socorro_store.errors.InvalidArgument` with a message for the page (HTTP 400).

Names stay as stored (``signature``, the split keys, ``counted_as``: what a link or a filter
sends back); what a person reads of them is beside them: each ranked signature's ``label``, the
signature page's ``label``, and ``labels`` ({marker: words}, :mod:`~socorro_store.schema.labels`)
for the markers among the column and filter names.
"""

from datetime import datetime, time, timedelta, timezone

from ..crashstore import listings, reports, signature_reports
from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import labels
from ..schema.crash_ids import parse_crash_id
from ..schema.timeparse import parse_day
from . import display
from .charts import bar_chart

HOME_TOP = 10
TOP_LIMIT = 50
DEFAULT_DAYS = 7
MAX_DAYS = 366
CRASHES_PER_PAGE = 50
OS_COLUMNS = 4
PROCESS_TYPE_COLUMNS = 5
#: the process types the top-crashers filter offers (the browser first; a name outside the
#: ranked list is counted as ``##other##``)
PROCESS_TYPE_CHOICES = [DK.PARENT] + sorted(DK.PROCESS_TYPES - {DK.PARENT}) + [DK.OTHER]


def _today(now):
    return datetime.combine(now.date(), time(), tzinfo=timezone.utc)


def _int_arg(text, name, low, high, default):
    if text is None or text == "":
        return default
    if not (text.isascii() and text.isdigit()):  # int() also takes "+7", " 7", "1_0", "٧"
        raise InvalidArgument(f"{name} must be a whole number, not {text!r}")
    value = int(text)
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


def _hourly_chart(hourly, title):
    return bar_chart([[display.hour_label(row), n] for row, n in hourly], title)


def home(store, now):
    """Queue sizes, crashes per hour over the last 48 hours, today's top 10 signatures."""
    today = _today(now)
    hourly = store.crashes_per_hour(now)
    top = store.top_signatures(today, today + timedelta(days=1), limit=HOME_TOP)
    _label_rows(top["signatures"])
    return {"queue": store.queue_sizes(), "hourly": hourly, "top": top, "day": today.date().isoformat(),
            "chart": _hourly_chart(hourly, "Crashes submitted per hour, last 48 hours (UTC)")}


def top_crashers(store, args, now):
    """The top-crashers report of the period and filters of the query, each signature with its
    crashes by OS (``os``: {name: n}, of the product/version asked), by process type
    (``process_types``: {name: n}, unfiltered reports only) and its first appearance.

    The ranking is :meth:`~socorro_store.crashstore.store.CrashStore.top_signatures`, or with
    ``process_type=T`` the process type's daily rankings (no other filter then); the OS split,
    process-type split and first appearances are three more reads (and the OS registry row), overlapped, for
    the signatures shown, whatever their number
    (:func:`~socorro_store.crashstore.reports.os_splits`,
    :func:`~socorro_store.crashstore.reports.process_type_splits`,
    :func:`~socorro_store.crashstore.signature_reports.first_appearances`).  ``os_columns`` /
    ``process_type_columns``: the names the HTML table gives a column (the most crashes among
    the rows shown; the rest is "other"; ``process_type_columns`` None: not split).
    """
    start, end, description = period(args, now)
    filters = _filters(args)
    process_type = (args.get("process_type") or "").strip() or None
    if process_type is None:
        report = store.top_signatures(start, end, limit=TOP_LIMIT, **filters)
    else:  # ranked per process type only (no counter column): the rankings, read directly
        store.live_counters.settle()
        report = reports.top_signatures(store.backend, start, end, TOP_LIMIT, **filters, process_type=process_type)
    names = [s["signature"] for s in report["signatures"]]
    backend = store.backend
    # three independent reads of the signatures shown: a backend that can overlaps their round trips
    splits, by_type, first = backend.overlap([
        lambda: {} if filters["os"] else reports.os_splits(backend, names, start, end, filters["product"],
                                                           filters["version"]),
        # the process-type rankings are of all products: split only the unfiltered report
        lambda: {} if process_type or any(filters.values()) else reports.process_type_splits(backend, names,
                                                                                             start, end),
        lambda: signature_reports.first_appearances(backend, names, now)])
    for row in report["signatures"]:
        row["os"] = splits.get(row["signature"], {})
        row["process_types"] = by_type.get(row["signature"], {})
        row["first_appearance"] = first.get(row["signature"])
    _label_rows(report["signatures"])
    return {**report, "labels": labels.MARKER_LABELS, "period": description, "filters": filters, "process_type": process_type,
            "os_columns": _columns(report["signatures"], "os", OS_COLUMNS),
            "process_type_columns": None if process_type or any(filters.values()) else
            _columns(report["signatures"], "process_types", PROCESS_TYPE_COLUMNS)}


def _label_rows(rows):
    """Each ranked signature with its ``label``, the words a person reads for it."""
    for row in rows:
        row["label"] = labels.label(row["signature"])


def _columns(rows, field, limit):
    """The ``limit`` names of ``row[field]`` ({name: n}) with the most crashes among ``rows``."""
    totals = {}
    for row in rows:
        for name, n in row[field].items():
            totals[name] = totals.get(name, 0) + n
    return [name for name, _n in sorted(totals.items(), key=lambda item: (-item[1], item[0]))][:limit]


def _cursor(args, name):
    text = args.get(name)
    return listings.parse_page_cursor(text) if text else None


#: the signature page's list columns and the processed field each shows (its public permission)
LIST_FIELDS = {"product": "product", "version": "version", "os": "os_name", "process_type": "process_type",
               "reason": "reason", "address": "address", "build": "build"}


def signature(store, args, now, hidden=()):
    """One signature: its trend, first seen, breakdown and a page of its crashes, newest first.

    The page is chosen by an opaque cursor, ``before`` (older crashes) or ``after`` (newer ones):
    any page costs what the first costs (:func:`~socorro_store.crashstore.listings.signature_page`).
    ``older`` / ``newer`` are the cursors of the next pages (None: none that way).  ``hidden``:
    list columns (:data:`LIST_FIELDS`) left empty, those the allowlist does not make public.
    The report has no ``counters`` (every interval of the row: ``signatures show`` and
    :meth:`~socorro_store.crashstore.store.CrashStore.signature_report` give them): the page reads
    only the columns it shows (``signature_overview(..., with_counters=False)``).
    """
    name = args.get("signature")
    if name is None:
        raise InvalidArgument("signature is required: /signature/?signature=NAME")
    before, after = _cursor(args, "before"), _cursor(args, "after")
    filters = _filters(args)
    today = _today(now)
    report, breakdown = store.signature_overview(name, now, today - timedelta(days=29), today + timedelta(days=1),
                                                 **filters, with_counters=False)
    page = listings.signature_page(store.backend, name, CRASHES_PER_PAGE, before=before, after=after)
    crashes = [{**c, **{name: None for name in hidden}, "submitted": c["submitted"].isoformat()}
               for c in page["crashes"]]
    return {
        **report, "label": labels.label(report["signature"]), "labels": labels.MARKER_LABELS,
        "filters": filters, "breakdown": breakdown, "crashes": crashes,
        "older": listings.page_cursor(*page["older"]) if page["older"] else None,
        "newer": listings.page_cursor(*page["newer"]) if page["newer"] else None,
        "hourly_chart": _hourly_chart(report["hourly"], "Crashes per hour, last 48 hours (UTC)"),
        "daily_chart": bar_chart([[row[5:], n] for row, n in report["daily"]], "Crashes per day, last 30 days (UTC)"),
    }


def crash_id_of(text):
    """The crash id in ``text``, in any form a person pastes (id, ``bp-<id>``, a report URL)."""
    if not text or not text.strip():
        raise InvalidArgument("paste a crash id, bp-<id> or a crash report URL")
    return parse_crash_id(text.strip())
