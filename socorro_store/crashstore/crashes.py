"""Saving and reading crashes: the crash row, its seven indexes and their write order.

Write order (DESIGN.md "Consistency": the harmless side first):

* submit: index and queue pointers (submitted_time, unprocessed_flag, legacy_unprocessed_flag,
  legacy_submitted_time, hang_id, hang_id_submitted_time) -> the crash row -> hang-pair check ->
  one ``increment_many`` with every counter of the crash (or batch);
* processing (:mod:`processed_saves`): signature_ooid pointer -> the crash row (processed data)
  beside ``flags:processed`` N -> Y (the check-and-put that decides who counts) -> the counters
  beside the deletes of the queue pointers (and a stale signature pointer).

On a cut-over store (:mod:`.counter_deriver`) the saves write a change record with their
pointers, and the deriver writes the signature, legacy_submitted_time and hang pointers, the
hang pairs and every counter but the queue's from the crash rows.

A pointer without its crash row is garbage that readers skip; a crash row without its queue
pointer would be a lost crash, so the pointers always go first.  Every argument is validated, and
every cell is built and size-checked, before the first write: bad input raises a typed error and
writes nothing in any table.  One mutate per table touched, whatever the batch size (a backend
splits a batch over its request limit; see ``Backend.mutate_rows``).
"""

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

from ..backends import RowMutation
from ..backends.base import MAX_CELL_BYTES
from ..checks import is_int
from ..errors import BackendError, BackendUnavailable, CrashIDNotFound, InvalidArgument, UnreadableDocument
from ..files import make_private_directory, open_private
from ..schema import keys as K
from ..schema.crash_facts import (
    process_type_of,
    processed_dimension_cells,
    processed_listing_cells,
    raw_dimension_cells,
)
from ..schema.queue_keys import COL_DEAD, COL_DEAD_LETTER, claim_cell, dead_letter_key
from ..schema.stored import stored_time, time_index_key_forms
from . import change_records, counters
from .hang_pairs import pair_time
from .listings import crashes_by_signature, crashes_submitted  # noqa: F401 - the listings, re-exported
from .processed_saves import write_processed  # noqa: F401 - the save path of processed crashes
from .queue import lease_of, read_claims, read_dead_letter_cells
from .states import COL_DEAD_LETTERED, out_of_queue, read_states

#: Socorro's default ``forbidden_keys``: removed by get_processed (dotted paths reach inside).
DEFAULT_FORBIDDEN_KEYS = (
    "url", "email", "user_id", "exploitability", "json_dump.sensitive",
    "upload_file_minidump_flash1.json_dump.sensitive",
    "upload_file_minidump_flash2.json_dump.sensitive",
    "upload_file_minidump_browser.json_dump.sensitive",
)


@dataclass
class RawCrash:
    """A validated raw crash with every cell of its crash row already built."""

    crash_id: str
    submitted: datetime
    legacy: object  # 0, 1, 2 or None
    process_type: str
    hang_id: str
    row: bytes
    puts: dict = field(default_factory=dict)

    def row_mutation(self):
        """The crash row's mutation (what must fit in one backend request)."""
        return RowMutation(self.row, self.puts)


@dataclass
class ProcessedCrash:
    crash_id: str
    signature: str  # stored name (##empty## / ##null## for the special values)
    error: bool
    puts: dict = field(default_factory=dict)

    def row_mutation(self):
        """The crash row's mutation (what must fit in one backend request)."""
        return RowMutation(K.crash_row_key(self.crash_id), self.puts)


def _json_default(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _to_json(document, what):
    try:
        text = json.dumps(document, allow_nan=False, separators=(",", ":"), default=_json_default)
        return text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as exc:
        raise InvalidArgument(f"{what} cannot be serialised as JSON: {exc}") from None


def _check_cell(row, column, value, limit):
    if len(row) + len(column) + len(value) > limit:
        raise InvalidArgument(f"cell {column.decode()} of {len(value)} bytes is over the "
                              f"{limit}-byte cell limit")


def _legacy_flag(raw_crash):
    value = raw_crash.get("legacy_processing")
    if value is None:
        return None
    if isinstance(value, str) and value.strip() in ("0", "1", "2"):
        return int(value)
    if is_int(value) and value in (0, 1, 2):
        return value
    raise InvalidArgument(f"legacy_processing must be 0, 1 or 2: {value!r}")


def prepare_raw(raw_crash, dumps, crash_id, max_cell_bytes=MAX_CELL_BYTES):
    """Validate one raw crash and build its crash-row cells; raise a typed error on bad input."""
    K.validate_crash_id(crash_id)
    if not isinstance(raw_crash, Mapping):
        raise InvalidArgument(f"raw crash must be a mapping, not {type(raw_crash).__name__}")
    if raw_crash.get("uuid") not in (None, crash_id):
        raise InvalidArgument(f"raw crash uuid {raw_crash.get('uuid')!r} differs from crash id {crash_id}")
    if "submitted_timestamp" not in raw_crash:
        raise InvalidArgument(f"raw crash {crash_id} has no submitted_timestamp")
    submitted = K.parse_timestamp(raw_crash["submitted_timestamp"], "submitted_timestamp")
    legacy = _legacy_flag(raw_crash)
    process_type = process_type_of(raw_crash)
    K.validate_process_type(process_type)
    hang_id = raw_crash.get("HangID") or None
    if hang_id is not None:
        K.hang_row_key(hang_id)
    if dumps is None:
        dumps = {}
    if not isinstance(dumps, Mapping):
        raise InvalidArgument(f"dumps must be a mapping of name to bytes, not {type(dumps).__name__}")
    row = K.crash_row_key(crash_id)
    puts = {
        K.COL_PROCESSED: b"N",
        K.COL_OOID: crash_id.encode("ascii"),
        K.COL_META: _to_json(dict(raw_crash), f"raw crash {crash_id}"),
        K.COL_SUBMITTED: K.format_timestamp(submitted),
        K.COL_PROCESS_TYPE: process_type.encode("ascii"),
        **raw_dimension_cells(raw_crash),  # product/version: counted per dimension
    }
    if legacy is not None:
        puts[K.COL_LEGACY] = str(legacy).encode("ascii")
    if hang_id is not None:
        puts[K.COL_HANG] = hang_id.encode("utf-8", "surrogatepass")
    for name, blob in dumps.items():
        column = K.dump_column(name)
        if isinstance(blob, (bytearray, memoryview)):
            blob = bytes(blob)
        if not isinstance(blob, bytes):
            raise InvalidArgument(f"dump {name!r} must be bytes, not {type(blob).__name__}")
        puts[column] = blob
    for column, value in puts.items():
        _check_cell(row, column, value, max_cell_bytes)
    return RawCrash(crash_id, submitted, legacy, process_type, hang_id, row, puts)


def prepare_processed(processed_crash, max_cell_bytes=MAX_CELL_BYTES):
    """Validate a processed crash (``uuid`` and ``completeddatetime`` required)."""
    if not isinstance(processed_crash, Mapping):
        raise InvalidArgument(f"processed crash must be a mapping, not {type(processed_crash).__name__}")
    crash_id = K.validate_crash_id(processed_crash.get("uuid"))
    if processed_crash.get("completeddatetime") is None:
        raise InvalidArgument(f"processed crash {crash_id} has no completeddatetime")
    completed = K.parse_timestamp(processed_crash["completeddatetime"], "completeddatetime")
    raw_signature = processed_crash.get("signature")
    name = K.signature_name(raw_signature)
    K.signature_row(raw_signature)  # length check
    row = K.crash_row_key(crash_id)
    puts = {
        K.COL_PROCESSED_JSON: _to_json(dict(processed_crash), f"processed crash {crash_id}"),
        K.COL_SIGNATURE: name.encode("utf-8", "surrogatepass"),
        K.COL_PROCESSED: b"Y",
        K.COL_PROCESSED_AT: K.format_timestamp(completed),
    }
    for column, value in puts.items():
        _check_cell(row, column, value, max_cell_bytes)
    error = raw_signature is None or processed_crash.get("success") is False
    puts[K.COL_PROCESSING_ERROR] = b"1" if error else b"0"
    puts.update(processed_dimension_cells(processed_crash))  # product/version/os_name
    puts.update(processed_listing_cells(processed_crash))  # reason/address/build, for lists
    return ProcessedCrash(crash_id, name, error, puts)


def write_raw(backend, crashes, live_counters):
    """Write prepared raw crashes: pointers, crash rows, hang-pair check, one increment call.

    ``live_counters`` (a :class:`counters.LiveCounters`) receives the increments.
    """
    index = {t: [] for t in (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG,
                             K.LEGACY_SUBMITTED_TIME, K.HANG_ID, K.HANG_ID_SUBMITTED_TIME)}
    derived = live_counters.deriver() is not None
    for crash in crashes:
        key = K.time_index_key(crash.crash_id, crash.submitted)
        ooid = {K.COL_OOID: crash.crash_id.encode("ascii")}
        index[K.SUBMITTED_TIME].append(RowMutation(key, dict(ooid)))
        index[K.UNPROCESSED_FLAG].append(RowMutation(key, dict(ooid)))
        if crash.legacy == 0:
            index[K.LEGACY_UNPROCESSED_FLAG].append(RowMutation(key, dict(ooid)))
            if not derived:  # else the deriver writes it, from the crash row
                index[K.LEGACY_SUBMITTED_TIME].append(RowMutation(key, dict(ooid)))
        if crash.hang_id is not None and not derived:  # else the deriver writes them (:mod:`.hang_pairs`)
            index[K.HANG_ID].append(RowMutation(K.hang_row_key(crash.hang_id),
                                                {K.hang_column(crash.process_type): ooid[K.COL_OOID]}))
            index[K.HANG_ID_SUBMITTED_TIME].append(
                RowMutation(key, {**ooid, K.COL_HANG: crash.puts[K.COL_HANG]}))
    stamps = []
    if derived:  # counted by the deriver from the crash row: a change record, with the pointers
        changes = change_records.new_records([crash.crash_id for crash in crashes], search=False, derive=b"S")
        index[K.CHANGES] = [mutation for _stamp, mutation in changes.values()]
        for crash in crashes:
            stamps.append(changes[crash.crash_id][0])
            crash.puts[K.COL_CHANGED] = stamps[-1]  # lands with the row: the deriver's proof it landed
    backend.mutate_tables(index)  # every pointer is stored before any crash row
    increments = [] if derived else [  # else the deriver counts them, queues included
        inc for crash in crashes for inc in counters.submit_increments(crash.submitted, crash.legacy,
                                                                       crash.process_type, crash.puts)]
    try:
        backend.mutate_rows(K.CRASH_REPORTS, [crash.row_mutation() for crash in crashes])
    except (BackendUnavailable, BackendError):
        # maybe written: a retry that finds the crash stored counts nothing, so say so (rollup repairs)
        live_counters.tally("uncertain", len(increments))
        raise
    hangs = [c for c in crashes if c.hang_id is not None and not derived]
    live_counters.send(increments, lambda: _new_hang_pairs(backend, hangs))
    live_counters.changed(stamps)


def _new_hang_pairs(backend, crashes):
    """Count each hang pair once: the first writer to see both sides' crash rows sets
    ``ids:paired``.

    Each side's crash row is written before its detection reads the hang row back, so at least
    one side sees both; the check-and-put on the marker lets exactly one of them count the pair.
    The pair is counted at its later side's submission time, whichever side counts it (as
    ``rollup`` counts it): with counters sent in the background, the earlier side's check may run
    after both are stored.
    """
    if not crashes:
        return []
    rows = backend.get_rows(K.HANG_ID, list({K.hang_row_key(c.hang_id) for c in crashes}), columns=[b"ids"])
    pairs = {}
    for row, cells in rows.items():
        sides = [v.decode("ascii", "replace") for c, v in cells.items() if K.is_hang_column(c)]
        if len(sides) >= 2 and K.COL_PAIRED not in cells:
            pairs[row] = sides
    if not pairs:
        return []
    times = _submitted_times(backend, {cid for sides in pairs.values() for cid in sides})
    out = []
    for row, sides in pairs.items():
        # A side whose crash row is not readable yet (its pointers go first) is no side yet, as
        # for rollup: its own save's detection, after its row, counts the pair at the right time.
        at = pair_time(times[cid] for cid in sides if cid in times)
        if at is not None and backend.check_and_put(K.HANG_ID, row, K.COL_PAIRED, None, {K.COL_PAIRED: b"1"}):
            out += counters.hang_pair_increments(at)
    return out


def _submitted_times(backend, crash_ids):
    """``{crash id: submitted time}`` of the crashes of ``crash_ids`` whose row is readable."""
    rows = {}
    for cid in crash_ids:
        try:
            rows[K.crash_row_key(cid)] = cid
        except InvalidArgument:
            pass  # a foreign value in a hang row names no crash of ours
    found = backend.get_rows(K.CRASH_REPORTS, list(rows), columns=[K.COL_SUBMITTED]) if rows else {}
    times = {}
    for row, cells in found.items():
        try:
            times[rows[row]] = stored_time(cells[K.COL_SUBMITTED])
        except (KeyError, InvalidArgument):
            pass
    return times


def unique_crash_ids(crash_ids):
    """A list of validated crash ids, duplicates dropped (one id may be given as a string)."""
    if isinstance(crash_ids, str):
        crash_ids = [crash_ids]
    try:
        crash_ids = list(dict.fromkeys(crash_ids))
    except TypeError:  # not iterable, or unhashable items
        raise InvalidArgument(f"crash ids must be a list of crash ids, not {type(crash_ids).__name__}") from None
    for crash_id in crash_ids:
        K.validate_crash_id(crash_id)
    return crash_ids


def enqueue_priority(backend, crash_ids, now, live_counters):
    """Queue crashes for (re)processing: pointer rows first, then ``flags:priority_processing``.

    A crash deleted meanwhile is not queued, and nothing of the request stays (the flag is put
    by a check-and-put that cannot also check the crash exists, so the rows are read back).

    A crash that already has a pending priority request keeps it (no duplicate row).  The flag is
    set with a check-and-put expecting none, so of two concurrent requests only one wins; the
    loser deletes the pointer it wrote.  A dead-lettered crash is requeued: taken off the
    dead-letter list, with a fresh claim history (its pending priority row is reset, else it gets
    a new one).
    """
    crash_ids = unique_crash_ids(crash_ids)
    states = read_states(backend, crash_ids)
    dead = [cid for cid in crash_ids if states[cid]["dead_lettered"] is not None]
    revived = _requeue_dead(backend, dead, states) if dead else 0
    todo = [cid for cid in crash_ids if not states[cid]["priority"]]
    if not todo:
        return revived
    stamp = K.format_timestamp(now)
    first = {K.UNPROCESSED_FLAG: [RowMutation(K.priority_key(cid, now), {K.COL_OOID: cid.encode("ascii")})
                                  for cid in todo]}
    changes = {}
    if live_counters.deriver() is not None:  # counted by the deriver: a change record with the pointer
        changes = change_records.new_records(todo, search=False, derive=b"S")
        first[K.CHANGES] = [mutation for _stamp, mutation in changes.values()]
    backend.mutate_tables(first)
    won = backend.check_and_put_many(K.CRASH_REPORTS, [
        (K.crash_row_key(cid), K.COL_PRIORITY, None,
         {K.COL_PRIORITY: stamp, **({K.COL_CHANGED: changes[cid][0]} if changes else {})}) for cid in todo])
    lost = [cid for cid, ok in zip(todo, won) if not ok]
    gone = _vanished(backend, [cid for cid, ok in zip(todo, won) if ok])
    if gone:  # deleted since their state was read: the flag just put (a stub row), the pointer and the record go
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(cid), delete_row=True) for cid in gone])
        backend.mutate_tables({
            K.UNPROCESSED_FLAG: [RowMutation(K.priority_key(cid, now), delete_row=True) for cid in gone],
            K.CHANGES: [RowMutation(changes[cid][1].row, delete_row=True) for cid in gone if cid in changes]})
    if lost and changes:  # our records go: the rows never got their stamps
        backend.mutate_rows(K.CHANGES, [RowMutation(changes[cid][1].row, delete_row=True) for cid in lost])
    if lost:  # another request got there first: its pointer stands, ours goes...
        flags = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(cid) for cid in lost], columns=[K.COL_PRIORITY])
        ours = [cid for cid in lost  # ...unless both were made in the same microsecond (same row)
                if flags.get(K.crash_row_key(cid), {}).get(K.COL_PRIORITY) != stamp]
        if ours:
            backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(K.priority_key(cid, now), delete_row=True)
                                                     for cid in ours])
    queued = len(todo) - len(lost) - len(gone)
    if changes:
        live_counters.changed([stamp for cid, (stamp, _m) in changes.items() if cid not in gone])
    elif queued:
        live_counters.send(counters.queue_increments(inserts_unprocessed_priority=queued))
    return queued + revived


def _vanished(backend, crash_ids):
    """The crashes of ``crash_ids`` whose row no longer names them (deleted): one read."""
    if not crash_ids:
        return []
    rows = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(cid) for cid in crash_ids], columns=[K.COL_OOID])
    return [cid for cid in crash_ids if K.COL_OOID not in rows.get(K.crash_row_key(cid), {})]


def _requeue_dead(backend, crash_ids, states):
    """Take dead letters off the list; reset the claim history of a pending priority row (a crash
    dead-lettered in the standard or legacy queue gets a new priority request instead, and the
    standard queue leaves crashes with a pending request to the priority queue).  Returns how many
    were requeued in place."""
    mutations, in_place = [], 0
    for cid in crash_ids:
        mutations.append(RowMutation(dead_letter_key(cid), delete_row=True))
        if states[cid]["priority"]:
            requested = K.parse_key_timestamp(states[cid]["priority"])
            row = K.priority_key(cid, requested)
            claim_row, column = claim_cell(row)
            mutations += [RowMutation(row, deletes=[COL_DEAD]), RowMutation(claim_row, deletes=[column])]
            in_place += 1
    backend.mutate_rows(K.UNPROCESSED_FLAG, mutations)
    backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(cid), deletes=[COL_DEAD_LETTERED])
                                          for cid in crash_ids])
    for cid in crash_ids:
        states[cid]["dead_lettered"] = None
    return in_place

# -- reads -----------------------------------------------------------------------------------

def _crash_cells(backend, crash_id, columns):
    row = K.crash_row_key(crash_id)
    return backend.get_row(K.CRASH_REPORTS, row, columns=columns + [K.COL_OOID])


def _stored_document(value, what, crash_id):
    """A stored JSON document; :class:`UnreadableDocument` for one nesting too deep to parse
    (written by another client: this library refuses such input)."""
    try:
        return json.loads(value)
    except RecursionError:
        raise UnreadableDocument(f"the {what} of crash {crash_id} nests too deep to read") from None


def get_raw_crash(backend, crash_id):
    cells = _crash_cells(backend, crash_id, [K.COL_META])
    if K.COL_META not in cells:
        raise CrashIDNotFound(f"no raw crash {crash_id}")
    return _stored_document(cells[K.COL_META], "raw crash", crash_id)


def get_raw_dumps(backend, crash_id):
    """``{dump name: bytes}`` (``raw_data:dump`` comes back as ``upload_file_minidump``)."""
    cells = _crash_cells(backend, crash_id, [K.FAMILY_RAW])
    if not cells:
        raise CrashIDNotFound(f"no crash {crash_id}")
    return {K.dump_name_from_column(c): v for c, v in cells.items() if c.startswith(K.FAMILY_RAW + b":")}


def get_raw_dump(backend, crash_id, name=None):
    name = K.DEFAULT_DUMP if name in (None, "dump") else name
    column = K.dump_column(name)
    cells = _crash_cells(backend, crash_id, [column])
    if column not in cells:
        raise CrashIDNotFound(f"no dump {name!r} for crash {crash_id}")
    return cells[column]


def get_raw_dumps_as_files(backend, crash_id, directory, suffix=".TEMPORARY.dump"):
    """Write each dump to ``directory/<crash_id>.<name><suffix>`` (Socorro's temporary files by
    default); return ``{name: path}``.  The files are 0600 and a directory created here 0700
    (:mod:`socorro_store.files`): a minidump holds the crashed process's memory."""
    dumps = get_raw_dumps(backend, crash_id)
    make_private_directory(directory)
    paths = {}
    for name, blob in dumps.items():
        path = os.path.join(directory, f"{crash_id}.{name}{suffix}")
        with open_private(path) as handle:
            handle.write(blob)
        paths[name] = path
    return paths


def get_unredacted_processed(backend, crash_id):
    cells = _crash_cells(backend, crash_id, [K.COL_PROCESSED_JSON])
    if K.COL_PROCESSED_JSON not in cells or K.COL_OOID not in cells:  # no ids:ooid: no crash (a stub)
        raise CrashIDNotFound(f"no processed crash {crash_id}")
    return _stored_document(cells[K.COL_PROCESSED_JSON], "processed crash", crash_id)


def redact(document, forbidden_keys):
    """Remove ``forbidden_keys`` (dotted paths reach into nested mappings) in place; return it."""
    for dotted in forbidden_keys:
        parts = dotted.split(".")
        node = document
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return document


def get_processed(backend, crash_id, forbidden_keys=DEFAULT_FORBIDDEN_KEYS):
    return redact(get_unredacted_processed(backend, crash_id), forbidden_keys)


def _stored_time_text(raw):
    """A stored time in our form (Socorro wrote ``2016-09-18 12:34:56.123456``); as stored if unreadable."""
    if not raw:
        return None
    try:
        return K.format_timestamp(stored_time(raw)).decode()
    except InvalidArgument:
        return raw.decode("utf-8", "replace")


def get_processing_state(backend, crash_id):
    """Flags, timestamps, the queues the crash is still in, its claim and its failed attempts.

    ``claim`` is the owning claim of the crash's claim history (``{"processor", "claimed",
    "expires"}``, ``expires`` including renewals), live or expired; None when it has none
    (unclaimed, or processed).  ``attempts``: claims whose lease ended without a save;
    ``dead_lettered``: whether the queue stopped handing it out after too many.
    """
    state = read_states(backend, [crash_id])[crash_id]
    forms = time_index_key_forms(crash_id, state["submitted"])  # Socorro's 19-char keys too
    claim_rows = list(forms)
    if state["priority"]:
        claim_rows.insert(0, K.priority_key(crash_id, K.parse_key_timestamp(state["priority"])))
    histories, rows = read_claims(backend, claim_rows, queue_cells=True,
                                  other_rows=[dead_letter_key(crash_id)], other_columns=[COL_DEAD_LETTER])
    queues = []
    gone = out_of_queue(state)  # its pointers may wait for the deriver: the queues skip it
    if not gone and any(rows.get(form, {}).get(K.COL_OOID) for form in forms):
        queues.append("standard")
    if state["priority"] and rows.get(claim_rows[0], {}).get(K.COL_OOID):
        queues.append("priority")
    if not gone and backend.get_rows(K.LEGACY_UNPROCESSED_FLAG, forms, columns=[K.COL_OOID]):
        queues.append("legacy")
    claim, attempts = None, 0
    for row in claim_rows:  # the priority row's claim first: that queue hands the crash out
        if gone and row in forms:
            continue  # processed: the claim that saved it is over
        history = histories[row]
        lease = lease_of(history)
        if lease.owner is not None:
            claim = {**history[lease.owner], "expires": lease.expires}
            claim.pop("token", None)
            attempts = lease.attempts
            break
    dead = read_dead_letter_cells(rows.get(dead_letter_key(crash_id), {}))
    if gone and dead is not None and dead.get("queue") != "priority":
        dead = None  # processed since: no dead letter, whether or not its mark is gone yet
    return {
        "crash_id": crash_id,
        "processed": state["processed"],
        "legacy_processing": state["legacy"],
        "priority_processing": bool(state["priority"]),  # an empty flag: a request served
        "submitted": K.format_timestamp(state["submitted"]).decode(),
        "processed_at": _stored_time_text(state["processed_at"]),
        "signature": state["signature"],
        "queues": sorted(queues),
        "claim": claim,
        "attempts": dead["attempts"] if dead else attempts,
        "dead_lettered": dead is not None,
    }


# -- queries ---------------------------------------------------------------------------------

# crashes_submitted, crashes_by_signature: see listings.py (every key layout, merged)


def hang_pair(backend, hang_id):
    """``{ProcessType: crash_id}`` of a hang id (``{}`` when none is stored)."""
    cells = backend.get_row(K.HANG_ID, K.hang_row_key(hang_id), columns=[b"ids"])
    return {K.process_type_from_hang_column(c): v.decode("ascii")
            for c, v in cells.items() if K.is_hang_column(c)}
