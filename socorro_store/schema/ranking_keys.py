"""Key layouts of the daily rankings (the top-crashers report in one read), with their inverses.

A ranking row holds every signature processed on one day (by submission time) and its count,
for all crashes, for one product (and under it a version, an OS or both) or for one process type
(``pt``: a kind kept only here)::

    crash_report_signatures_seen  ~rank/2016-09-18              seen:<signature row> = 8-byte count
                                  ~rank/2016-09-18|p=Firefox    seen:<signature row> = 8-byte count
                                  ~rank/2016-09-18|pvo=Firefox:120.0:Windows%20NT
                                  ~rank/2016-09-18|pt=content   seen:<signature row> = 8-byte count
                                  ~rank/since                   seen:day = b"2016-09-01"

The live counters increment them with a crash's other signature counters, and ``rollup`` makes
a closed day's rows exact.

A closed day's ranking rows also have compact **top rows**, written by ``rollup``: the
:data:`TOP_K` signatures of the day with the most crashes, with the day's ``K``-th count (every
signature left out has at most that many) and its total, so a report reads ``K`` cells a day
instead of every signature (:mod:`socorro_store.crashstore.rankings`); and the same of the
:data:`HEAD_K` first, the **head row**, which a report reads first (it proves a skewed day's top
50), and the top row only when the head proves nothing::

    crash_report_signatures_seen  ~rank/top/2016-09-18            seen:<signature row> = 8-byte count (1000 of them)
                                  ~rank/top/2016-09-18|p=Firefox  seen:\\xffkth = the K-th count (0: all here)
                                                                  seen:\\xfftotal = crashes of every signature
                                  ~rank/top-head/2016-09-18[|key] the same, of HEAD_K signatures

(the ``\\xff`` qualifiers are no signature row: UTF-8 has no byte 0xff).  The head and top rows
sort after ``~rank/since`` (``~rank/top-head/``, then ``~rank/top/``), so a scan of a day's
ranking rows (``~rank/<day>`` to ``~rank/<day>|\\xff``) does not meet them.  ``~rank/since`` is
the first day whose rankings are complete (a store created with this version: its first day; an
upgraded one: set by ``rollup --since``); a report reads rankings only for days from it, and
scans the signature counters before.

A closed day can still change after its rollup (a late crash, a reprocessing, a deletion).  The
live counters then also add to the day's **slack row** (:func:`slack_row`, one per ranking row):
what was added to any signature of the day (``\\xffpos``), taken from any (``\\xffneg``), and the
net change (``\\xffnet``).  A top or head row records the slack it was computed under (its
``\\xffbase…`` cells), so a report widens each signature's bounds by the slack since, and adds the
net change to the total: the head and top rows stay true bounds without a rewrite::

    crash_report_signatures_seen  ~rank/slack/2016-09-18[|key]   seen:\\xffpos / \\xffneg / \\xffnet = counters

(slack rows sort after ``~rank/since`` and before the head rows: outside every day's scan).

On a cut-over store the deriver also keeps each ranking row's own slack, in the row (the same
``\\xffpos`` / ``\\xffneg`` / ``\\xffnet`` cells, written with the signature cells: one row,
one atomic write), for every day, the open one too.  So a report that reads a day's full row
(today's: no rollup has written its head) reads its counts and their slack at one moment, and
what it computes from them (:func:`open_head`) bounds the row later as a head row does, widened
by the row's slack since (:func:`widen_open_head`).
"""

import struct
from datetime import date

from ..errors import InvalidArgument
from .dimension_keys import SEPARATOR, dimension_key, parse_dimension_key
from .keys import decode_counter, encode_counter

RANK_PREFIX = b"~rank/"
#: the ``~rank/since`` of a new store: crash ids start in 2000
FIRST_DAY = date(2000, 1, 1)
SINCE_ROW = RANK_PREFIX + b"since"
COL_SINCE = b"seen:day"
#: the dimension kinds a ranking is kept for (besides all crashes): a product, and under it a
#: version, an OS or both (crash-stats' top-crashers filters: every one but an OS without its
#: product), and a process type
RANKED_KINDS = ("p", "pv", "po", "pvo", "pt")
TOP_PREFIX = RANK_PREFIX + b"top/"
#: signatures kept in a day's top row: a 30-day report reads at most 60 x TOP_K of them
TOP_K = 1000
HEAD_PREFIX = RANK_PREFIX + b"top-head/"
#: signatures kept in a day's head row, read first: 50 signatures shown need far fewer than
#: 1000 a day when the days are skewed, as crash days are
HEAD_K = 200
COL_KTH = b"seen:\xffkth"
COL_TOTAL = b"seen:\xfftotal"
SLACK_PREFIX = RANK_PREFIX + b"slack/"
#: a slack row's cells: added to the day's signatures, taken from them, and the net change
SLACK_COLUMNS = (b"seen:\xffpos", b"seen:\xffneg", b"seen:\xffnet")
#: a top row's copy of its slack row when it was computed
BASE_COLUMNS = (b"seen:\xffbase+", b"seen:\xffbase-", b"seen:\xffbase=")
_UNPACK = struct.Struct(">q").unpack  # an 8-byte counter cell, as keys.decode_counter reads it


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


def top_row(day, key=None, head=False):
    """The top row of ``day`` (a date), for all crashes or for dimension ``key``: its
    :data:`TOP_K` signatures, or with ``head`` its :data:`HEAD_K`."""
    row = (HEAD_PREFIX if head else TOP_PREFIX) + day.strftime("%Y-%m-%d").encode("ascii")
    return row if key is None else row + SEPARATOR + key


def slack_row(day, key=None):
    """The slack row of ``day``'s ranking for all crashes or for dimension ``key``."""
    row = SLACK_PREFIX + day.strftime("%Y-%m-%d").encode("ascii")
    return row if key is None else row + SEPARATOR + key


def parse_slack_row(row):
    """Inverse of :func:`slack_row`: ``(day, key or None)``."""
    if not row.startswith(SLACK_PREFIX):
        raise InvalidArgument(f"not a slack row: {row!r}")
    return parse_rank_row(RANK_PREFIX + row[len(SLACK_PREFIX):])


def slack_amounts(amount):
    """The slack row's ``{column: amount}`` of one signature's change of ``amount`` on a day."""
    return dict(zip(SLACK_COLUMNS, (max(amount, 0), max(-amount, 0), amount)))


def parse_slack_cells(cells):
    """``(added, taken, net)`` of a slack row's cells (zeros when it has none)."""
    return tuple(_decode(cells.get(column)) for column in SLACK_COLUMNS)


def base_cells(slack):
    """A top row's cells recording ``slack`` (``(added, taken, net)``) as its base."""
    return {column: encode_counter(n) for column, n in zip(BASE_COLUMNS, slack)}


def open_head(cells, k=HEAD_K):
    """The head of a ranking row read whole (``cells``: its signature cells and its own slack,
    read at one moment): ``({signature row: n} of its ``k`` first, k-th count (0: all here),
    total, base slack)``, or None when the row keeps no slack of its own (a live writer's)."""
    base = parse_slack_cells(cells)
    if base[0] <= 0:
        return None
    return (*_top_of(ranking_counts(cells), k), base)


def widen_open_head(head, slack):
    """An :func:`open_head` now, as :func:`parse_top_cells` gives a head row: ``({signature
    row: n}, k-th count, total, added, taken)`` widened by ``slack`` (the row's own slack cells
    now); None when the slack went back (the row was rewritten since: the head proves nothing)."""
    counts, kth, total, base = head
    added, taken, net = parse_slack_cells(slack)
    if added < base[0] or taken < base[1]:
        return None
    return counts, kth, total + net - base[2], added - base[0], taken - base[1]


def parse_top_row(row):
    """Inverse of :func:`top_row`: ``(day, key or None, head)``."""
    for prefix, head in ((TOP_PREFIX, False), (HEAD_PREFIX, True)):
        if row.startswith(prefix):
            return (*parse_rank_row(RANK_PREFIX + row[len(prefix):]), head)
    raise InvalidArgument(f"not a top row: {row!r}")


def top_cells(counts, k=None):
    """The cells of a top row of one day's exact ``counts`` ({signature row: n}): the ``k``
    (default :data:`TOP_K`) highest (ties by signature row), the ``k``-th count when some were
    left out (else 0), and the total."""
    kept, kth, total = _top_of(counts, TOP_K if k is None else k)
    return {**{rank_column(row): encode_counter(n) for row, n in kept.items()},
            COL_KTH: encode_counter(kth), COL_TOTAL: encode_counter(total)}


def _top_of(counts, k):
    """``({signature row: n} of the k highest, ties by signature row; the k-th count when some
    were left out, else 0; the total)`` of ``counts`` (counts of 0 or less left out)."""
    order = sorted(((n, row) for row, n in counts.items() if n > 0), key=lambda item: (-item[0], item[1]))
    kept = order[:k]
    return {row: n for n, row in kept}, kept[-1][0] if len(order) > k else 0, sum(n for n, _row in order)


def ranking_counts(cells):
    """``{signature row: n}`` of a ranking row's (or a top row's) cells: every 8-byte
    ``seen:<signature row>`` cell (a top row's ``\\xff`` cells left out).  The inverse of
    :func:`rank_column` over a whole row, in one pass: a month's report decodes ~100 k cells."""
    unpack = _UNPACK
    return {column[5:]: unpack(value)[0] for column, value in cells.items()
            if len(value) == 8 and column[:5] == b"seen:" and column[5:6] != b"\xff"}


def parse_top_cells(cells, slack=None):
    """Inverse of :func:`top_cells`: ``({signature row: n}, k-th count, total, added, taken)``.

    ``slack``: the day's slack row cells (:func:`slack_row`).  ``added``/``taken`` are what was
    added to and taken from the day's signatures since the top row was computed (0, 0 without
    it), and ``total`` includes the net change since.  So a signature of the row has between
    ``n - taken`` and ``n + added`` crashes that day, and one left out at most ``kth + added``."""
    added, taken, net = parse_slack_cells(slack or {})
    base_added, base_taken, base_net = (_decode(cells.get(column)) for column in BASE_COLUMNS)
    return (ranking_counts(cells), _decode(cells.get(COL_KTH)), _decode(cells.get(COL_TOTAL)) + net - base_net,
            max(added - base_added, 0), max(taken - base_taken, 0))


def _decode(value):
    return decode_counter(value) if value and len(value) == 8 else 0
