"""What one stored crash counts for: its facts, and the counter increments they make.

:func:`facts_of` reads from a crash row what its counts depend on (its submitted time; as a raw
crash of this store's collector, its legacy throttle, process type, product and version; as a
crash this store processed, its signature, dimensions and processing error), and
:func:`increments_of` gives the increments of those facts with the same functions the live path
uses (:func:`.counters.submit_increments`, :func:`.counters.signature_increments`, the
processing errors).  So whatever counts a crash, the live path, a deletion taking its counts
back (:func:`stored_counts`) or the deriver (:mod:`.counter_deriver`, which keeps each crash's
facts as counted and applies the difference), counts it alike.

Not included: the hang pair (a pair of two crash rows) and the unique signatures of an interval
(a per-interval marker).  The queue counters count events (a crash entering or leaving a
queue), not a crash's state: :func:`queue_moves` gives them from the facts before and after.

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
from .dequeue import dequeue_mutations

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
    if cells.get(K.COL_PRIORITY):  # a priority request pending (an emptied flag: none)
        facts["prio"] = True
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


def waiting_in(facts):
    """The queues a crash counted under ``facts`` waits in: ``standard`` (and ``legacy``, with
    legacy_processing 0) for a raw crash of this store's collector it has not processed yet,
    ``priority`` while a priority request is pending."""
    queues = set()
    if facts is not None:
        if facts["raw"] is not None and facts["proc"] is None:
            queues.add("standard")
            if facts["raw"][0] == 0:
                queues.add("legacy")
        if facts.get("prio"):
            queues.add("priority")
    return queues


def queue_moves(was, now):
    """The queue counter increments (``crash_report_queues``) of a crash counted under ``was``
    now counted under ``now`` (either None: no facts).

    A raw crash of this store's collector is in the standard queue (and the legacy one, with
    legacy_processing 0) until this store processes it.  Appearing counts an insert, leaving a
    delete (and, processed, an insert into the processed legacy queue), so ``inserts - deletes``
    is the crashes waiting, and both only grow, as when each save moved them: a crash saved and
    processed between two derivations enters and leaves in the same batch.  A priority request
    made counts an insert of the priority queue; served or deleted, a delete (served, also an
    insert into the processed priority queue)."""
    out = {}

    def count(name, yes=True):
        if yes:
            out[name] = out.get(name, 0) + 1

    was_raw, now_raw = bool(was and was["raw"] is not None), bool(now and now["raw"] is not None)
    was_in, now_in = "standard" in waiting_in(was), "standard" in waiting_in(now)
    entered = now_raw and (not was_raw or (now_in and not was_in))  # saved, or resubmitted after processing
    left = _left_standard(was, now)
    if entered:
        count("inserts_unprocessed")
        count("inserts_unprocessed_legacy", now["raw"][0] == 0)
    if left:
        legacy = (was if was_raw else now)["raw"][0] == 0
        count("deletes_unprocessed")
        count("deletes_unprocessed_legacy", legacy)
        count("inserts_processed_legacy", legacy and now is not None)
    was_prio, now_prio = "priority" in waiting_in(was), "priority" in waiting_in(now)
    if now_prio and not was_prio:
        count("inserts_unprocessed_priority")
    elif was_prio and not now_prio:
        count("deletes_unprocessed_priority")
        count("inserts_processed_priority", now is not None)
    return counters.queue_increments(**out)


def _left_standard(was, now):
    """Whether a crash counted under ``was``, now under ``now``, left the standard queue."""
    now_raw = bool(now and now["raw"] is not None)
    entered_now = now_raw and not (was and was["raw"] is not None)
    return ("standard" in waiting_in(was) or entered_now) and "standard" not in waiting_in(now)


def dequeued(was, now):
    """How a crash counted under ``was``, now under ``now``, left the queues of this store's
    collector, or None: ``(forget, submitted, legacy_processing)``.  Processed (``forget``
    False): on a cut-over store the deriver takes its queue pointers and ends its claim
    histories (:func:`~.dequeue.dequeue_mutations`).  Deleted (True): the deletion took them
    already, and the deriver takes them again with its claim cells, in case a batch it applied
    after the deletion wrote them back."""
    if now is None:
        if was is None or was["raw"] is None:
            return None
        return True, datetime.fromisoformat(was["t"]), was["raw"][0]
    if now["proc"] is None or not _left_standard(was, now):
        return None
    raw = now["raw"] if now["raw"] is not None else was["raw"]
    return False, datetime.fromisoformat(now["t"]), raw[0]


def dequeue_moves(exits):
    """``[(table, row, puts or None, columns deleted or None)]`` (as :func:`pointer_moves`) of
    the queue rows of crashes that left the queues, ``exits`` ``{forget: [(crash id, submitted,
    legacy_processing)]}`` (:func:`dequeued`)."""
    out = []
    for forget, crashes in exits.items():
        if crashes:
            for table, mutations in dequeue_mutations(crashes, forget).items():
                out += [(table, m.row, m.puts or None, list(m.deletes) or None) for m in mutations]
    return out


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
