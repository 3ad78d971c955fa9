"""Recounting crashes from the source of truth, for the roll-up, in bounded memory.

:func:`count_day` counts the crashes submitted in ``[start, end)`` within one UTC day:

* **Through the submitted_time index** (16 salted scans, in pages): each page of pointers is
  resolved to its crash rows with one multi-row get, reading only small columns (the ``flags``
  family, ``timestamps:submitted``, ``ids:hang``, ``processed_data:signature``).  Rows written
  before ``flags:process_type`` / ``flags:processing_error`` existed (ours, older; Socorro's) get
  a second get of ``meta_data:json`` / ``processed_data:json`` for those rows only.  Hang pairs
  are resolved per page too.  A pointer whose crash row is absent, or says another submitted
  time, is skipped (that crash row has its own pointer).
* **Cross-checked against the crash rows of the day** (``crash_reports`` by day prefix, reading
  only ``timestamps:submitted``): a crash row the index pass did not count (no pointer, as
  Socorro's happybase storage left them; an unreadable cell) makes its minute *unaccounted*; a
  crash row whose submitted time cannot be read makes the whole day unaccounted.  The roll-up
  never rewrites or deletes a counter of an unaccounted interval (``reference/anchors.md``:
  Socorro's own counters count crashes we may not see).

Held state does not depend on the number of crashes or signatures: one page of rows and a
counter per minute of the day (per counter name).  The per-signature counts (per hour and
dimension key) go, a page at a time, to a :class:`~socorro_store.engine.spilled_counts.SpilledCounts` on disk.
"""

import collections
from datetime import timedelta

from ..crashstore import counters
from ..crashstore.hang_pairs import pair_time
from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema import dimension_keys as DK
from ..schema.crash_facts import stored_process_type, stored_processing_error
from ..schema.stored import (
    parse_stored_time_index_key,
    stored_legacy,
    stored_processed,
    stored_time,
)
from ..engine.spilled_counts import SpilledCounts
from . import data_days

PAGE = 500
CRASH_COLUMNS = [b"flags", K.COL_SUBMITTED, K.COL_HANG, K.COL_SIGNATURE]
_EXAMPLES = 20


class Tally:
    """Exact counts of the crashes submitted in one range of one day.

    ``signature_level``: the interval the signature counts are kept per (``hour``; the recount
    of an expired month or year uses that level, so it holds one number per signature).
    ``signature_counts``: the :class:`SpilledCounts` they are summed into (a new one when
    None: :meth:`close` it); its plain counts are keyed ``b""``, the dimensioned ones by key.
    """

    def __init__(self, signature_level="hour", signature_counts=None):
        self.signature_level = signature_level
        self.signature_counts = signature_counts if signature_counts is not None else SpilledCounts()
        # this page's counts, summed into signature_counts at its end
        self.page_signatures = collections.Counter()  # (sig row, interval row, key) -> n
        self.page_minutes = collections.Counter()     # (minute row, counter name) -> n
        self.page_volumes = collections.Counter()     # (field, product, value) -> n
        self.crashes = 0
        self.counted_by_minute = collections.Counter()  # crashes of this day's crash ids, per minute
        self.unaccounted = set()   # minute rows holding crashes that were not counted
        self.whole_day_unaccounted = False
        self.unreadable = []       # a few (crash id, reason) examples
        self.unreadable_count = 0
        self.held_peak = 0         # most crash rows held at once (one page)

    def unreadable_row(self, crash_id, reason, minute_row=None):
        self.unreadable_count += 1
        if len(self.unreadable) < _EXAMPLES:
            self.unreadable.append({"crash_id": crash_id, "reason": reason})
        if minute_row is None:
            self.whole_day_unaccounted = True
        else:
            self.unaccounted.add(minute_row)

    def end_page(self):
        """Sum the page's counts into :attr:`signature_counts`."""
        self.signature_counts.add(self.page_signatures, self.page_minutes, self.page_volumes)
        for page in (self.page_signatures, self.page_minutes, self.page_volumes):
            page.clear()

    def close(self):
        self.signature_counts.close()


def count_day(backend, start, end, on_page=None, signature_level="hour", page_size=PAGE, signature_counts=None):
    """Recount the crashes submitted in ``[start, end)``, a range within one UTC day, reading
    ``page_size`` pointers (and their crash rows) at a time.  ``signature_counts``: where the
    counts are summed (see :class:`Tally`); dimension keys and volumes hold the values as sent."""
    tally = Tally(signature_level, signature_counts)
    for salt_char in K.SALTS:
        low, high = K.time_index_range(salt_char, start, end)
        page = []
        for row, _cells in backend.scan(K.SUBMITTED_TIME, start=low, stop=high, columns=[K.COL_OOID],
                                        page_size=page_size):
            page.append(row)
            if len(page) >= page_size:
                _count_page(backend, page, tally, start, end)
                page = []
                if on_page:
                    on_page()
        if page:
            _count_page(backend, page, tally, start, end)
        if on_page:
            on_page()
    _cross_check(backend, start, end, tally, on_page, page_size)
    return tally


def _facts(backend, rows):
    """``{crash row: cells}`` of ``rows`` with the facts a count needs; JSON only where needed."""
    found = backend.get_rows(K.CRASH_REPORTS, rows, columns=CRASH_COLUMNS)
    fallback = {}
    for row, cells in found.items():
        wanted = []
        if stored_process_type(cells) is None:
            wanted.append(K.COL_META)
        if stored_processed(cells) and cells.get(K.COL_SIGNATURE) != K.NULL_SIGNATURE.encode() \
                and stored_processing_error(cells) is None:
            wanted.append(K.COL_PROCESSED_JSON)
        if wanted:
            fallback.setdefault(tuple(wanted), []).append(row)
    for columns, needing in fallback.items():
        for row, cells in backend.get_rows(K.CRASH_REPORTS, needing, columns=list(columns)).items():
            found[row].update(cells)
    return found


def _count_page(backend, index_rows, tally, start, end):
    wanted = {}
    for row in index_rows:
        try:
            crash_id, moment = parse_stored_time_index_key(row)
        except InvalidArgument:
            continue  # not a pointer of ours or Socorro's (verify-indexes reports it)
        if start <= moment < end:  # a 19-char key may sort into the range from outside it
            wanted[K.crash_row_key(crash_id)] = (crash_id, moment)
    tally.held_peak = max(tally.held_peak, len(wanted))
    found = _facts(backend, list(wanted))
    hang_sides = []
    for crash_row, cells in found.items():
        crash_id, moment = wanted[crash_row]
        minute_row = K.metrics_row(moment, "minute")
        if K.COL_SUBMITTED not in cells:
            continue  # no crash (yet): a pointer written before its crash row
        try:
            submitted = stored_time(cells[K.COL_SUBMITTED])
        except InvalidArgument as exc:
            tally.unreadable_row(crash_id, f"timestamps:submitted: {exc}", minute_row)
            continue
        if submitted != moment:
            continue  # a stale pointer: the crash row says another time (it has its own pointer)
        _count_crash(tally, crash_id, submitted, cells)
        if cells.get(K.COL_HANG):
            hang_sides.append((cells[K.COL_HANG], crash_id, submitted))
    if hang_sides:
        _count_hang_pairs(backend, hang_sides, tally)
    tally.end_page()


def _count_crash(tally, crash_id, submitted, cells):
    rows = K.metrics_rows(submitted)
    names = [counters.SUBMITTED]
    legacy = stored_legacy(cells.get(K.COL_LEGACY))
    if legacy is not None:
        names.append(counters.throttle_counter(legacy))
    process_type = stored_process_type(cells)
    if process_type != "default":
        names.append(counters.oop_counter(process_type))
    signature = None
    if stored_processed(cells):
        signature = cells.get(K.COL_SIGNATURE, K.NULL_SIGNATURE.encode()).decode("utf-8", "surrogatepass")
        if signature == K.NULL_SIGNATURE or stored_processing_error(cells):
            names.append(counters.PROCESSING_ERRORS)
    # dimension values as sent: the roll-up caps them once the day's volumes are known
    submitted_dims = counters.crash_dimensions(cells, processed=False)
    processed_dims = counters.crash_dimensions(cells)
    names += [f"{counters.SUBMITTED}|{key.decode('ascii')}" for key in DK.keys_of(submitted_dims, DK.METRICS_DIMENSIONS)]
    minute = rows["minute"]
    for name in names:
        tally.page_minutes[(minute, name)] += 1
    tally.page_volumes.update(_volume_keys(submitted_dims) | _volume_keys(processed_dims))
    tally.crashes += 1
    if K.crash_date(crash_id) == submitted.date():
        tally.counted_by_minute[rows["minute"]] += 1
    if signature is not None:
        sig_row = K.signature_row(signature)
        interval = rows[tally.signature_level]
        tally.page_signatures[(sig_row, interval, b"")] += 1
        # a day's recount (hours) also counts the ranking-only kinds (process type): the day's
        # rankings are made exact from them, and the roll-up writes no counter column of them
        kinds = DK.SIGNATURE_DIMENSIONS + (DK.RANKING_ONLY if tally.signature_level == "hour" else ())
        for key in DK.keys_of(processed_dims, kinds):
            tally.page_signatures[(sig_row, interval, key)] += 1


def _volume_keys(dims):
    """The ``(field, product, value)`` volume keys of one crash's dimension values (the
    unknown ones are not values)."""
    product = dims.get("product")
    out = set()
    if product not in (None, DK.UNKNOWN):
        out.add(("product", "", product))
        if dims.get("version") not in (None, DK.UNKNOWN):
            out.add(("version", product, dims["version"]))
    if dims.get("os") not in (None, DK.UNKNOWN):
        out.add(("os", "", dims["os"]))
    return out


def _count_hang_pairs(backend, hang_sides, tally):
    """A pair counts once, at the later side, when two or more sides have crash rows."""
    ours = {crash_id: submitted for _h, crash_id, submitted in hang_sides}
    rows = backend.get_rows(K.HANG_ID, list({h for h, _c, _s in hang_sides}), columns=[b"ids"])
    others = {}
    for cells in rows.values():
        for column, value in cells.items():
            if K.is_hang_column(column):
                cid = value.decode("ascii", "replace")
                if cid not in ours and K.CRASH_ID_RE.match(cid):
                    others[K.crash_row_key(cid)] = cid
    times = dict(ours)
    if others:
        for row, cells in backend.get_rows(K.CRASH_REPORTS, list(others), columns=[K.COL_SUBMITTED]).items():
            try:
                times[others[row]] = stored_time(cells[K.COL_SUBMITTED])
            except (KeyError, InvalidArgument):
                pass  # an unreadable side is reported by its own day's recount
    for hang_row, crash_id, submitted in hang_sides:
        sides = [v.decode("ascii", "replace") for c, v in rows.get(hang_row, {}).items()
                 if K.is_hang_column(c)]
        alive = [(times[c], c) for c in sides if c in times]
        # counted once: by the later side (of equal times, the greater crash id)
        if pair_time(t for t, _c in alive) is not None and max(alive) == (submitted, crash_id):
            tally.page_minutes[(K.metrics_row(submitted, "minute"), counters.HANG_PAIRS)] += 1


def _cross_check(backend, start, end, tally, on_page=None, page_size=PAGE):
    """Mark the minutes of crash rows of the day that the index pass did not count."""
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    per_minute = collections.Counter()
    # every crash row of the day, Socorro's pre-salt ones too: a crash the index pass cannot
    # reach through its pointer leaves its minute to the counters that counted it
    rows = data_days.crash_rows_of_day(backend, day, [K.COL_SUBMITTED], page_size=page_size)
    for n, (_row, cells) in enumerate(rows):
        crash_id = cells.get(K.COL_OOID, b"").decode("ascii", "replace")
        try:
            submitted = stored_time(cells[K.COL_SUBMITTED])
        except (KeyError, InvalidArgument) as exc:
            if K.COL_SUBMITTED in cells:
                tally.unreadable_row(crash_id, f"timestamps:submitted: {exc}")
            continue  # a row with no submitted time is no crash yet (a save in flight)
        if start <= submitted < end and submitted.date() == day.date():
            per_minute[K.metrics_row(submitted, "minute")] += 1
        if on_page and n % 1000 == 999:
            on_page()
    for minute_row, n in per_minute.items():
        if n > tally.counted_by_minute.get(minute_row, 0):
            tally.unaccounted.add(minute_row)


def kept_rows(tally, day, end):
    """The metrics rows (minute, hour, day) the roll-up must leave alone: every interval holding
    an unaccounted crash, and the coarser intervals that contain it."""
    if tally.whole_day_unaccounted:
        out, moment = set(), day
        while moment < end:
            out.update(K.metrics_row(moment, level) for level in ("minute", "hour", "day"))
            moment += timedelta(minutes=1)
        return out
    out = set()
    for minute_row in tally.unaccounted:
        moment = K.parse_metrics_row(minute_row)[1]
        out.update(K.metrics_row(moment, level) for level in ("minute", "hour", "day"))
    return out
