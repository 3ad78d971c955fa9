"""Taking processed crashes out of their queues: pointers, dead-letter marks, claim histories.

A processed save writes these (:mod:`.processed_saves`), or on a cut-over store, for a crash this
store's collector queued, the deriver does once it derives the processing
(:func:`~.contributions.dequeued`): until then the processor's claim stays live, and a take skips
a processed crash.  All of it is idempotent.
"""

from ..backends.base import RowMutation
from ..schema.keys import LEGACY_UNPROCESSED_FLAG, UNPROCESSED_FLAG
from ..schema.queue_keys import dead_letter_key
from ..schema.stored import time_index_key_forms
from .claims import by_claim_row, encode_done, now_ms


def claims_done_mutations(queue_rows):
    """Puts that end the claim histories of ``queue_rows`` (one mutation per claim row): written
    with the processed crash's queue deletes, in the same call."""
    done = encode_done(now_ms())
    return [RowMutation(claim_row, puts) for claim_row, puts in by_claim_row(dict.fromkeys(queue_rows, done)).items()]


def dequeue_mutations(crashes, forget=False):
    """``{table: [RowMutation]}`` that take processed crashes out of their queues: ``crashes``
    ``[(crash id, submitted time, legacy_processing)]``.  Each crash's pointers go in every key
    form (ours, and Socorro's 19-character one) from the standard queue and, with
    legacy_processing 0, the legacy one; so does its dead-letter mark, and its claim histories
    end (``done``, one put per claim row), or with ``forget`` (a deleted crash) go.  All
    idempotent: a processed save writes them, or on a cut-over store the deriver
    (:mod:`.counter_deriver`) once it derives the processing."""
    out = {UNPROCESSED_FLAG: [], LEGACY_UNPROCESSED_FLAG: []}
    ended = []
    for crash_id, submitted, legacy in crashes:
        forms = time_index_key_forms(crash_id, submitted)
        out[UNPROCESSED_FLAG] += [RowMutation(form, delete_row=True) for form in forms]
        out[UNPROCESSED_FLAG].append(RowMutation(dead_letter_key(crash_id), delete_row=True))
        if legacy == 0:
            out[LEGACY_UNPROCESSED_FLAG] += [RowMutation(form, delete_row=True) for form in forms]
        ended += forms
    if forget:
        out[UNPROCESSED_FLAG] += [RowMutation(claim_row, deletes=list(columns))
                                  for claim_row, columns in by_claim_row(dict.fromkeys(ended)).items()]
    else:
        out[UNPROCESSED_FLAG] += claims_done_mutations(ended)
    return out
