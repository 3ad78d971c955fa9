"""``search verify``: the search index compared with the crash rows it derives from.

The index is derived from the crash rows (:mod:`.search_feed`), and a reindex rewrites it
whole; this says whether it needs one, and repairs only what differs.  Each crash row of the
days read is compared with its document as the engine holds it (:meth:`~socorro_store.search.
contract.SearchEngine.documents`, a page of rows at a time), and every document dated in those
days is checked to have a crash row.  A crash is:

* **missing**: its row holds a processed crash, the engine no document;
* **stale**: its document differs from the one its row gives, or its row holds no processed
  crash (a document the feed should have removed);
* **orphaned**: a document dated in the days read whose crash has no row;
* **pending**: it differed, but a change record naming it waits for the feed, which will bring
  it to its row (not a problem: ``search status`` shows how far the feed lags).

A crash that differs is looked at twice: once in its page, and again after the waiting records
are read, so a save the feed indexed in between is not reported.  ``repair`` indexes the missing
and stale documents from their rows (taking any of them off the feed's dead letters) and removes
the others.
"""

from ..errors import InvalidArgument
from ..schema import keys as K
from . import change_records
from .search_feed import ROW_COLUMNS, crash_document, index_documents, revive_dead_letters

#: ids listed per kind in a report
EXAMPLES = 10
#: crashes that differed looked at again (rows read, documents asked, repaired) at a time
CHUNK = 1000
#: change records read to tell pending crashes (more waiting: the rest count as differences)
PENDING_READ = 100_000


def verify_search(backend, engine, pages, bounds, repair=False, progress=None):
    """Compare ``engine`` with the crash rows of ``pages`` (pages of ``(row, cells)`` read with
    :data:`~.search_feed.ROW_COLUMNS`), and its documents dated in ``bounds`` (``(start, end)``
    aware datetimes or None) with the rows they name.  ``repair``: set right what differs.
    ``progress(n)`` is called with each page's number of rows.

    Returns ``{"checked", "documents", "missing", "stale", "orphaned", "pending", "repaired",
    "dead_lettered", "examples"}``: crash rows read, documents held of them, the counts of each
    kind (module docstring), documents written or removed, documents the engine refused (left
    dead-lettered), and up to :data:`EXAMPLES` crash ids of each kind."""
    seen, differ, held_count, checked = set(), set(), 0, 0
    for page in pages:
        rows = {}
        for row, cells in page:
            try:
                rows[K.crash_id_from_row_key(row)] = cells
            except InvalidArgument:
                continue  # Socorro's pre-salt rows and strays: never indexed
        checked += len(rows)
        seen.update(rows)
        held = engine.documents(rows)
        held_count += len(held)
        differ.update(cid for cid, cells in rows.items() if crash_document(cid, cells) != held.get(cid))
        if progress is not None:
            progress(len(page))
    start, end = bounds
    unseen = [cid for cid in engine.crash_ids(start, end) if cid not in seen]
    return _second_look(backend, engine, differ, unseen, checked, held_count, repair)


def _second_look(backend, engine, differ, unseen, checked, held_count, repair):
    """Sort what differed (and the documents of crashes not read) into the kinds, from a fresh
    read of their rows and documents after the waiting records, a chunk at a time (memory: one
    chunk of rows, however much differs); repair them if asked."""
    waiting, _resume, _full = change_records.read_records(backend, K.COL_CHANGE_ID, b"", PENDING_READ)
    looked = sorted(differ | set(unseen))
    counts = {"missing": 0, "stale": 0, "orphaned": 0, "pending": 0}
    examples, repaired, dead = {}, 0, 0
    for i in range(0, len(looked), CHUNK):
        kinds, want = _sort(backend, engine, looked[i:i + CHUNK], waiting)
        for kind, ids in kinds.items():
            counts[kind] += len(ids)
            examples.setdefault(kind, []).extend(ids[:EXAMPLES - len(examples.get(kind, []))])
        if repair:
            fixed, refused = _repair(backend, engine, kinds, want)
            repaired, dead = repaired + fixed, dead + refused
    return {"checked": checked, "documents": held_count, **counts, "repaired": repaired, "dead_lettered": dead,
            "examples": {kind: ids for kind, ids in examples.items() if ids}}


def _sort(backend, engine, crash_ids, waiting):
    """``({kind: crash ids}, {crash id: the document its row gives})`` of ``crash_ids`` that
    still differ; the documents are of those a repair indexes."""
    rows = _crash_rows(backend, crash_ids)
    held = engine.documents(crash_ids)
    kinds = {"missing": [], "stale": [], "orphaned": [], "pending": []}
    want = {}
    for cid in crash_ids:
        cells = rows.get(cid)
        document = crash_document(cid, cells) if cells is not None else None
        if document == held.get(cid):
            continue  # indexed meanwhile, or a crash of the day beside with its document right
        if cid in waiting:
            kinds["pending"].append(cid)
        elif cells is None:
            kinds["orphaned"].append(cid)
        elif document is None:
            kinds["stale"].append(cid)
        else:
            kinds["stale" if cid in held else "missing"].append(cid)
            want[cid] = document
    return kinds, want


def _repair(backend, engine, kinds, want):
    """Index ``want`` and remove the other orphaned and stale documents: ``(set right, refused)``."""
    repaired, dead = 0, []
    if want:
        indexed, dead = index_documents(backend, engine, [want[cid] for cid in sorted(want)])
        repaired += len(indexed)
        revive_dead_letters(backend, {doc["uuid"] for doc in indexed})
    gone = [cid for cid in kinds["orphaned"] + kinds["stale"] if cid not in want]
    if gone:
        engine.delete(gone)
        repaired += len(gone)
    return repaired, len(dead)


def problems_left(report, repair=False):
    """How many crashes a report leaves differing (``search verify`` exits 1 when any): a check,
    every missing, stale and orphaned one; a repair, those it could not set right."""
    found = report["missing"] + report["stale"] + report["orphaned"]
    return found - report["repaired"] if repair else found


def _crash_rows(backend, crash_ids, page=500):
    """``{crash id: cells}`` of the crashes of ``crash_ids`` that have a crash row."""
    out = {}
    rowed = [cid for cid in crash_ids if _is_crash_id(cid)]  # another id in the engine names no row
    for i in range(0, len(rowed), page):
        keys = {K.crash_row_key(cid): cid for cid in rowed[i:i + page]}
        for key, cells in backend.get_rows(K.CRASH_REPORTS, list(keys), columns=ROW_COLUMNS).items():
            if K.COL_OOID in cells:
                out[keys[key]] = cells
    return out


def _is_crash_id(text):
    """Whether ``text`` names a crash row (:func:`~socorro_store.schema.keys.crash_row_key`
    takes it): a crash id with a real date, which ``is_crash_id`` does not check."""
    try:
        K.validate_crash_id(text)
    except InvalidArgument:
        return False
    return True
