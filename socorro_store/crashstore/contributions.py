"""What one stored crash counts for: the counter increments this store's saves made for it.

The live path counts a crash as it is saved (:func:`.counters.submit_increments` for the raw
crash, :func:`.counters.signature_increments` and the processing errors for its first
processing); :func:`stored_counts` gives the same increments from the crash row as stored, with
the same functions, so whatever removes a crash (a privacy deletion) takes back exactly what its
saves added.  Not included: the queue counters (moved by whoever takes each pointer), the hang
pair (a pair of two crash rows) and the unique signatures of an interval (a per-interval
marker): ``rollup`` recounts those from the crash rows left.
"""

from ..schema import keys as K
from ..schema.crash_facts import stored_process_type, stored_processing_error
from ..schema.stored import stored_legacy, stored_processed, stored_time
from . import counters

#: the crash-row columns :func:`stored_counts` reads
COLUMNS = (b"flags", K.COL_SUBMITTED, K.COL_SIGNATURE, K.COL_META)


def stored_counts(cells, amount=1):
    """The metrics and signature counter increments (times ``amount``: -1 takes them back) of a
    crash row's ``cells`` (at least :data:`COLUMNS`); none for a row without a readable
    submitted time.

    Only what this store counted: the raw crash's counts when this store's collector saved it
    (``flags:process_type``, which Socorro's collector never writes), the processed crash's when
    this store's processor saved it (``flags:processing_error``).  Socorro's code counted its
    own crashes in fewer cells (no signature counters, no dimensions): taking those back would
    drive cells it never incremented below zero."""
    try:
        submitted = stored_time(cells[K.COL_SUBMITTED])
    except (KeyError, ValueError):
        return []
    incs = []
    if K.COL_PROCESS_TYPE in cells:  # saved by this store's collector (Socorro's never writes it)
        incs += [inc for inc in counters.submit_increments(submitted, stored_legacy(cells.get(K.COL_LEGACY)),
                                                           stored_process_type(cells), cells)
                 if inc.row != K.QUEUE_ROW]
    if stored_processed(cells) and K.COL_PROCESSING_ERROR in cells:  # processed by this store
        signature = cells.get(K.COL_SIGNATURE, K.NULL_SIGNATURE.encode()).decode("utf-8", "surrogatepass")
        incs += counters.signature_increments(signature, submitted, cells=cells)
        if signature == K.NULL_SIGNATURE or stored_processing_error(cells):
            incs += counters.metric_increments(submitted, [counters.PROCESSING_ERRORS])
    if amount == 1:
        return incs
    return [type(inc)(inc.table, inc.row, inc.column, inc.amount * amount) for inc in incs]
