"""How much of what crash-stats shows publicly ``/api/report/<id>`` shows, and whether it shows
anything protected.

A crash filling every field of both schemas (:func:`socorro_schemas.full_document`) is saved in
an embedded store; Socorro's public reduction of it (:func:`socorro_schemas.reduce_public`) is
what crash-stats shows a user without protected access.  Its values are compared one by one
(path and value) with the ``raw_crash`` and ``processed_crash`` of ``/api/report/<id>``:

- ``shown``: public values the report shows, of ``public`` in all (the coverage);
- ``protected``: values of the crash the report shows that crash-stats does not show publicly
  (protected ones, and fields the schema does not name): must be 0;
- ``missing``: the public paths the report leaves out.
"""

import tempfile
from datetime import datetime, timedelta, timezone

import socorro_schemas as schemas

from socorro_store import open_store
from socorro_store.web import create_app

CRASH_ID = "de1bb258-cbbf-4589-a673-34f802161118"
SUBMITTED = datetime(2016, 11, 18, 13, 0, 5, tzinfo=timezone.utc)
WHEN = {"submitted_timestamp": SUBMITTED, "date_processed": SUBMITTED + timedelta(seconds=1),
        "started_datetime": SUBMITTED + timedelta(seconds=2), "completed_datetime": SUBMITTED + timedelta(seconds=3)}


def _fill(path, types):
    """Values the store and the page need to be of a form (ids, times, thread indexes)."""
    if path == "uuid":
        return CRASH_ID
    if path in WHEN:
        return WHEN[path].isoformat()
    if path in ("crashing_thread", "json_dump.crash_info.crashing_thread", "json_dump.crashing_thread.threads_index"):
        return 0
    return None


def crash(skeletons):
    """``(raw crash, processed crash)`` filling every field of the two schema skeletons."""
    raw = schemas.full_document(skeletons["raw_crash"], _fill)
    processed = schemas.full_document(skeletons["processed_crash"], _fill)
    # the store's own field (Socorro's HBase crash storage named it so), not in the schema
    processed["completeddatetime"] = processed["completed_datetime"]
    return raw, processed


def measure(skeletons, public_fields=None, directory=None):
    """The comparison for one allowlist (``public_fields``: a path or a PublicFields; default:
    the package's), as ``{"public", "shown", "coverage", "protected", "missing", "protected_paths"}``."""
    raw, processed = crash(skeletons)
    expected, every = {}, {}
    for kind, document in (("raw_crash", raw), ("processed_crash", processed)):
        public = schemas.reduce_public(document, skeletons[kind])
        expected.update({f"{kind}.{p}": v for p, v in schemas.leaves(public, "").items()})
        every.update({f"{kind}.{p}": v for p, v in schemas.leaves(document, "").items()})
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        with open_store(f"embedded://{tmp}/store") as store:
            store.create_tables()
            store.save_raw_crash(raw, {"upload_file_minidump": b"MDMP" + bytes(28)}, CRASH_ID)
            store.save_processed(processed)
            store.flush_counters()
            client = create_app(store, now=lambda: SUBMITTED + timedelta(hours=1),
                                public_fields=public_fields).test_client()
            response = client.get(f"/api/report/{CRASH_ID}")
            if response.status_code != 200:
                raise RuntimeError(f"/api/report answered {response.status_code}: {response.get_data(as_text=True)[:200]}")
            report = response.get_json()
    shown = {}
    for kind in ("raw_crash", "processed_crash"):
        shown.update({f"{kind}.{p}": v for p, v in schemas.leaves(report[kind] or {}, "").items()})
    hits = [path for path, value in expected.items() if path in shown and shown[path] == value]
    protected = sorted(path for path in shown if path not in expected and path in every)
    return {"public": len(expected), "shown": len(hits), "coverage": len(hits) / len(expected) if expected else 1.0,
            "protected": len(protected), "protected_paths": protected,
            "missing": sorted(path for path in expected if path not in hits)}
