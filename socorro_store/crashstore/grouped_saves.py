"""The group writers behind the one-crash calls: one outcome per caller, whatever the others did.

Each function writes a group of already validated items (from :mod:`group_commit`) with the
batch paths of :mod:`crashes` (one mutate per table touched, one counter call) and returns one
outcome per item: ``None`` or a value for success, an exception instance for that item alone.
A failure of the group's backend writes is raised, and so reaches every caller of the group.

Per-crash errors are isolated, never spread: a retry or conflicting raw crash is sorted out
before the write (:mod:`resubmissions`); a processed crash or priority request naming an unknown
crash is found after the batch path refuses the group (it raises :class:`CrashIDNotFound` before
writing anything), and the group is written again without it.
"""

from datetime import datetime, timezone

from ..errors import CrashDeleted, CrashIDNotFound
from ..schema import keys as K
from . import crashes, resubmissions


def weight_of(puts):
    """Bytes of a crash's cells, to bound a group's size."""
    return sum(len(column) + len(value) for column, value in puts.items())


def save_raw_group(backend, live_counters, prepared):
    """Write the new crashes of ``prepared``; retries succeed unwritten, conflicts fail alone."""
    outcomes = resubmissions.sort_out(backend, prepared)
    new = [crash for crash, outcome in zip(prepared, outcomes) if outcome == resubmissions.NEW]
    if new:
        crashes.write_raw(backend, new, live_counters)
    return [outcome if isinstance(outcome, Exception) else None for outcome in outcomes]


def save_processed_group(backend, live_counters, prepared, held=None):
    """Write processed crashes; an unknown crash gets :class:`CrashIDNotFound`, one deleted while
    being saved :class:`CrashDeleted` (nothing of it written), the others are written.

    Two saves of one crash in a group (two processors) are written one after the other, as they
    would be without grouping, so the second sees the first as processed and counts nothing.
    """
    outcomes = [None] * len(prepared)
    for indices in _rounds([crash.crash_id for crash in prepared]):
        batch = {i: prepared[i] for i in indices}
        while batch:
            try:
                crashes.write_processed(backend, list(batch.values()), live_counters, held)
                break
            except CrashDeleted as exc:  # the others were written: only these fail
                for i, crash in batch.items():
                    if crash.crash_id in exc.crash_ids:
                        outcomes[i] = CrashDeleted([crash.crash_id])
                break
            except CrashIDNotFound:
                missing = _missing(backend, {crash.crash_id for crash in batch.values()})
                if not missing:  # refused for a reason other than a missing crash row
                    raise
                for i in [i for i, crash in batch.items() if crash.crash_id in missing]:
                    outcomes[i] = CrashIDNotFound(f"no crash {prepared[i].crash_id}")
                    del batch[i]
    return outcomes


def enqueue_priority_group(backend, live_counters, requests):
    """Queue the crash ids of each request (a list of unique valid ids); each gets its own count.

    A crash asked for by two requests of one group is credited to the first, as it would be
    without grouping.  A request naming an unknown crash gets :class:`CrashIDNotFound` and
    queues nothing.
    """
    outcomes = [None] * len(requests)
    pending = dict(enumerate(requests))
    while pending:
        ids = list(dict.fromkeys(cid for request in pending.values() for cid in request))
        now = datetime.now(timezone.utc)
        try:
            queued = crashes.enqueue_priority(backend, ids, now, live_counters)
            break
        except CrashIDNotFound:
            missing = _missing(backend, set(ids))
            if not missing:
                raise
            for i in [i for i, request in pending.items() if missing.intersection(request)]:
                outcomes[i] = CrashIDNotFound(f"no crash {sorted(missing.intersection(requests[i]))[0]}")
                del pending[i]
    if not pending:
        return outcomes
    ours = _queued_by(backend, ids, now, queued)
    credited = set()
    for i, request in pending.items():
        mine = [cid for cid in request if cid in ours and cid not in credited]
        credited.update(mine)
        outcomes[i] = len(mine)
    return outcomes


def _queued_by(backend, ids, now, queued):
    """The ids whose priority request is the one made at ``now`` (read back only when mixed)."""
    if queued == len(ids):
        return set(ids)
    if queued == 0:
        return set()
    stamp = K.format_timestamp(now)
    flags = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(cid) for cid in ids], columns=[K.COL_PRIORITY])
    return {cid for cid in ids if flags.get(K.crash_row_key(cid), {}).get(K.COL_PRIORITY) == stamp}


def _missing(backend, crash_ids):
    """The ids of ``crash_ids`` that have no crash row."""
    rows = {K.crash_row_key(cid): cid for cid in crash_ids}
    found = backend.get_rows(K.CRASH_REPORTS, list(rows), columns=[K.COL_SUBMITTED])
    return {cid for row, cid in rows.items() if K.COL_SUBMITTED not in found.get(row, {})}


def _rounds(crash_ids):
    """Split positions into rounds in which each crash id appears once (first occurrences first)."""
    rounds, seen = [], {}
    for i, crash_id in enumerate(crash_ids):
        n = seen.get(crash_id, 0)
        seen[crash_id] = n + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(i)
    return rounds
