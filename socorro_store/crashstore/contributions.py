"""What one stored crash counts for: its facts, and the counter increments they make.

:func:`facts_of` reads from a crash row what its counts depend on (its submitted time; as a raw
crash of this store's collector, its legacy throttle, process type, product and version; as a
crash this store processed, its signature, dimensions and processing error), and
:func:`increments_of` gives the increments of those facts with the same functions the live path
uses (:func:`.counters.submit_increments`, :func:`.counters.signature_increments`, the
processing errors).  So whatever counts a crash, the live path, a deletion taking its counts
back (:func:`stored_counts`) or the deriver (:mod:`.counter_deriver`, which keeps each crash's
facts as counted and applies the difference), counts it alike.

Not included: the queue counters (moved by whoever takes each pointer), the hang pair (a pair of
two crash rows) and the unique signatures of an interval (a per-interval marker).

:func:`pointers_of` gives the index rows the same facts imply that the deriver writes (the
signature, legacy time and hang time indexes; the hang-id rows and pairs are
:mod:`.hang_pairs`'s): a cut-over store's saves write none of them.
"""

from datetime import datetime

from ..backends import Increment
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema.crash_facts import stored_process_type, stored_processing_error
from ..schema.stored import stored_legacy, stored_processed, stored_time
from . import counters

#: the crash-row columns :func:`facts_of` reads (small cells only: a raw crash counts here only
#: when this store's collector wrote it, with ``flags:process_type``, so the annotations are not needed)
COLUMNS = (b"flags", K.COL_SUBMITTED, K.COL_SIGNATURE, K.COL_HANG)


def facts_of(cells):
    """The facts a crash row's ``cells`` (at least :data:`COLUMNS`) count under, uncapped; None
    when it counts for nothing (no readable submitted time, or neither saved nor processed by
    this store).

    Only what this store counts: the raw crash's counts when this store's collector saved it
    (``flags:process_type``, which Socorro's collector never writes), the processed crash's when
    this store's processor saved it (``flags:processing_error``).  Socorro's code counted its
    own crashes in fewer cells (no signature counters, no dimensions): taking those back would
    drive cells it never incremented below zero."""
    try:
        submitted = stored_time(cells[K.COL_SUBMITTED])
    except (KeyError, ValueError):
        return None
    raw = proc = None
    if K.COL_PROCESS_TYPE in cells:  # saved by this store's collector (Socorro's never writes it)
        raw = [stored_legacy(cells.get(K.COL_LEGACY)), stored_process_type(cells),
               counters.crash_dimensions(cells, processed=False)]
    if stored_processed(cells) and K.COL_PROCESSING_ERROR in cells:  # processed by this store
        signature = cells.get(K.COL_SIGNATURE, K.NULL_SIGNATURE.encode()).decode("utf-8", "surrogatepass")
        error = signature == K.NULL_SIGNATURE or bool(stored_processing_error(cells))
        proc = [signature, counters.crash_dimensions(cells), error]
    if raw is None and proc is None:
        return None
    facts = {"t": submitted.isoformat(), "raw": raw, "proc": proc}
    if raw is not None and cells.get(K.COL_HANG):  # a side of a hang pair (:mod:`.hang_pairs`)
        facts["hang"] = cells[K.COL_HANG]
    return facts


def capped(facts, admitted):
    """``facts`` with the cardinality cap applied to their dimension values
    (:func:`~socorro_store.schema.dimension_keys.cap_values`, ``admitted(field, value, product)``)."""
    if facts is None:
        return None
    out = dict(facts)
    if facts["raw"] is not None:
        legacy, process_type, dims = facts["raw"]
        out["raw"] = [legacy, process_type, DK.cap_values(dims, admitted)]
    if facts["proc"] is not None:
        signature, dims, error = facts["proc"]
        out["proc"] = [signature, DK.cap_values(dims, admitted), error]
    return out


def registry_questions(facts_list):
    """``[(field, value, product)]``: what capping each of ``facts_list`` (uncapped, in order)
    may ask ``admitted`` (:func:`capped`), a version as if its product were admitted."""
    asked = []

    def record(field, value, product):
        asked.append((field, value, product))
        return True

    for facts in facts_list:
        capped(facts, record)
    return asked


def increments_of(facts, amount=1):
    """The metrics and signature counter increments (times ``amount``) of ``facts``."""
    if facts is None:
        return []
    submitted, incs = facts["t"], []
    if facts["raw"] is not None:
        legacy, process_type, dims = facts["raw"]
        incs += counters.submit_increments(submitted, legacy, process_type, dims=dims, queues=False)
    if facts["proc"] is not None:
        signature, dims, error = facts["proc"]
        incs += counters.signature_increments(signature, submitted, dims=dims)
        if error:
            incs += counters.metric_increments(submitted, [counters.PROCESSING_ERRORS])
    if amount == 1:
        return incs
    return [Increment(inc.table, inc.row, inc.column, inc.amount * amount) for inc in incs]


def pointers_of(crash_id, facts):
    """``{(table, row): puts}``: the derived index rows of ``facts`` (a crash's, as counted) that
    name one crash each: ``legacy_submitted_time`` for a raw crash of this store's collector with
    legacy_processing 0 and ``hang_id_submitted_time`` for one with a hang id, ``signature_ooid``
    for a crash this store processed; the same rows as
    :func:`~socorro_store.jobs.scrutiny.expected_pointers` expects.  (The hang-id row, shared by
    a pair's sides, is :mod:`.hang_pairs`'s.)"""
    if facts is None:
        return {}
    submitted, ooid, out = datetime.fromisoformat(facts["t"]), {K.COL_OOID: crash_id.encode("ascii")}, {}
    if facts["raw"] is not None and facts["raw"][0] == 0:
        out[(K.LEGACY_SUBMITTED_TIME, K.time_index_key(crash_id, submitted))] = ooid
    if facts.get("hang"):
        out[(K.HANG_ID_SUBMITTED_TIME, K.time_index_key(crash_id, submitted))] = {**ooid, K.COL_HANG: facts["hang"]}
    if facts["proc"] is not None:
        out[(K.SIGNATURE_OOID, K.signature_index_key(facts["proc"][0], submitted, crash_id))] = ooid
    return out


def pointer_moves(crash_id, was, now):
    """``[(table, row, puts or None, None)]``: what brings the derived pointers of a crash counted
    under ``was`` to those of ``now`` (either None: no facts); a row without puts is deleted."""
    old, new = pointers_of(crash_id, was), pointers_of(crash_id, now)
    return ([(table, row, None, None) for table, row in old if (table, row) not in new]
            + [(table, row, puts, None) for (table, row), puts in new.items() if old.get((table, row)) != puts])


def stored_counts(cells, amount=1):
    """The increments (times ``amount``: -1 takes them back) of a crash row's ``cells``, uncapped."""
    return increments_of(facts_of(cells), amount)
