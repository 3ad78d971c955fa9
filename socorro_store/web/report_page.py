"""The report page (``/report/index/<id>``, ``/api/report/<id>``): one crash as crash-stats shows it.

- **Details**: product, version, release channel, build id, OS and OS version, CPU architecture
  and info, crash reason and address, uptime, install age, process type, app notes, processor
  notes, date processed, ... from the processed crash (Socorro's processor output), falling back
  to the raw annotations for a crash not processed yet.
- **Crashing thread**: its frames (frame, module, function, file:line), from
  ``json_dump.crashing_thread``, else ``json_dump.threads[crashing_thread]`` (the index in the
  processed crash, else in ``json_dump.crash_info``).
- **Java exception** (a Java crash): each exception's class, message and frames (module,
  function, file:line, in app), from ``java_exception.exception.values``.
- **Modules**: filename, version, debug id, debug file, code id, from ``json_dump.modules``; the
  **unloaded modules** (filename, code id, signed by) from ``json_dump.unloaded_modules``.
- **Extensions**: the ``addons`` list (``id:version``), with each one's name, system flag and
  signed state from the telemetry environment's ``addons.activeAddons`` when it has them.
- The raw annotations and the processed crash, and the processing state and dumps.

Without ``unredacted`` both documents go through the allowlist (:mod:`.public_fields`) first, and
everything above is read from what it lets through: a protected field appears nowhere, not in
the details, the frames, nor the JSON.  The processed crash is also redacted by the store's
forbidden keys (``url``, ``email``, ...) before that.  Any field may be missing or of an
unexpected type: the page shows what the crash has (:mod:`.display`), never fails on it.

Reads: the crash's processing state and summary (its dumps' sizes), raw crash, processed crash.
"""

import json

from ..errors import CrashIDNotFound, UnreadableDocument
from . import display
from .pages import crash_id_of

MAX_FRAMES = 200
MAX_MODULES = 2000

# (label, processed crash field(s), raw annotation fallback, how to write it)
DETAILS = [
    ("Signature", ("signature",), None, display.text),
    ("Date Processed", ("date_processed", "completed_datetime", "completeddatetime"), None, display.when),
    ("Uptime", ("uptime",), None, display.duration),
    ("Last Crash", ("last_crash",), "SecondsSinceLastCrash", display.duration),
    ("Install Age", ("install_age",), None, display.duration),
    ("Install Time", ("install_time",), "InstallTime", display.epoch),
    ("Product", ("product",), "ProductName", display.text),
    ("Release Channel", ("release_channel",), "ReleaseChannel", display.text),
    ("Version", ("version",), "Version", display.text),
    ("Build ID", ("build",), "BuildID", display.text),
    ("OS", ("os_name",), None, display.text),
    ("OS Version", ("os_pretty_version", "os_version"), None, display.text),
    ("Build Architecture", ("cpu_arch",), "CPUArchitecture", display.text),
    ("CPU Info", ("cpu_info",), "CPUInfo", display.text),
    ("CPU Count", ("cpu_count",), None, display.text),
    ("Process Type", ("process_type",), "ProcessType", display.text),
    ("Crash Reason", ("reason",), None, display.text),
    ("Crash Address", ("address",), None, display.text),
    ("MOZ_CRASH Reason", ("moz_crash_reason",), None, display.text),
    ("Startup Crash", ("startup_crash",), None, display.yes_no),
    ("App Notes", ("app_notes",), "Notes", display.text),
    ("Processor Notes", ("processor_notes",), None, display.text),
    ("Possible Bit Flips Max Confidence", ("possible_bit_flips_max_confidence",), None, display.percent),
    ("Crash Inconsistencies", ("crash_inconsistencies",), None, display.text),
]


def _first(document, names):
    for name in names:
        value = document.get(name)
        if value not in (None, "", [], {}):
            return name, value
    return None, None


def details(processed, raw):
    """``[{"label", "field", "value", "text"}]`` of :data:`DETAILS` that the crash has."""
    out = []
    for label, names, fallback, write in DETAILS:
        field, value = _first(processed, names)
        if field is None and fallback is not None:
            field, value = _first(raw, (fallback,))
        shown = write(value) if field is not None else None
        if shown:
            out.append({"label": label, "field": field, "value": value, "text": shown})
    return out


def _dict(value):
    return value if isinstance(value, dict) else {}


def _index(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def crashing_thread(processed):
    """``{"index", "name", "frames": [{"frame", "module", "function", "source"}]}`` of the
    crashing thread, or None when the crash has none readable."""
    dump = _dict(processed.get("json_dump"))
    thread = dump.get("crashing_thread")
    index = None
    if isinstance(thread, dict) and isinstance(thread.get("frames"), list):
        # threads_index is the schema's name; thread_index what older stackwalkers wrote
        index = _index(thread.get("threads_index"))
        index = _index(thread.get("thread_index")) if index is None else index
        if index is None:
            index = _index(processed.get("crashing_thread"))
    else:
        index = _index(processed.get("crashing_thread"))
        if index is None:
            index = _index(_dict(dump.get("crash_info")).get("crashing_thread"))
        threads = dump.get("threads")
        thread = threads[index] if isinstance(threads, list) and index is not None and 0 <= index < len(threads) else None
        if not isinstance(thread, dict) or not isinstance(thread.get("frames"), list):
            return None
    frames = []
    for number, frame in enumerate(thread["frames"][:MAX_FRAMES]):
        if not isinstance(frame, dict):
            continue
        if isinstance(frame.get("truncated"), dict):  # the stackwalker's marker for frames left out
            frames.append({"truncated": display.text(frame["truncated"].get("msg")) or "frames truncated"})
            continue
        function = display.text(frame.get("function"))
        module = display.text(frame.get("module"))
        if function is None:  # no symbols: crash-stats shows where in the module
            offset = display.text(frame.get("module_offset")) or display.text(frame.get("offset"))
            function = f"{module}@{offset}" if module and offset else offset
        file, line = display.text(frame.get("file")), display.text(frame.get("line"))
        frames.append({"frame": display.text(frame.get("frame")) or str(number), "module": module,
                       "function": function, "source": f"{file}:{line}" if file and line else file})
    return {"index": index, "name": display.text(thread.get("thread_name")), "frames": frames,
            "truncated": len(thread["frames"]) > MAX_FRAMES or thread.get("truncated") is True}


def java_exception(processed):
    """``[{"module", "type", "message", "frames": [{"module", "function", "source", "in_app"}]}]``
    of ``java_exception.exception.values`` (crash-stats' Java crash frames)."""
    values = _dict(_dict(processed.get("java_exception")).get("exception")).get("values")
    out = []
    for value in values if isinstance(values, list) else []:
        trace = _dict(_dict(value).get("stacktrace"))
        if not trace:
            continue
        frames = []
        for frame in (trace.get("frames") if isinstance(trace.get("frames"), list) else [])[:MAX_FRAMES]:
            frame = _dict(frame)
            file, line = display.text(frame.get("filename")), display.text(frame.get("lineno"))
            frames.append({"module": display.text(frame.get("module")), "function": display.text(frame.get("function")),
                           "source": f"{file}:{line}" if file and line else file,
                           "in_app": display.yes_no(frame["in_app"]) if "in_app" in frame else None})
        out.append({"module": display.text(trace.get("module")), "type": display.text(trace.get("type")),
                    "message": display.text(trace.get("value")), "frames": frames})
    return out


def modules(processed):
    """``[{"filename", "version", "debug_id", "debug_file", "code_id"}]`` of ``json_dump.modules``."""
    found = _dict(processed.get("json_dump")).get("modules")
    if not isinstance(found, list):
        return []
    fields = ("filename", "version", "debug_id", "debug_file", "code_id")
    return [{name: display.text(module.get(name)) for name in fields}
            for module in found[:MAX_MODULES] if isinstance(module, dict)]


def unloaded_modules(processed):
    """``[{"filename", "code_id", "cert_subject"}]`` of ``json_dump.unloaded_modules``."""
    found = _dict(processed.get("json_dump")).get("unloaded_modules")
    if not isinstance(found, list):
        return []
    fields = ("filename", "code_id", "cert_subject")
    return [{name: display.text(module.get(name)) for name in fields}
            for module in found[:MAX_MODULES] if isinstance(module, dict)]


# AddonManager's Addon.signedState values, named as crash-stats' Extensions tab names them
SIGNED_STATES = {-2: "SIGNEDSTATE_BROKEN", -1: "SIGNEDSTATE_UNKNOWN", 0: "SIGNEDSTATE_MISSING",
                 1: "SIGNEDSTATE_PRELIMINARY", 2: "SIGNEDSTATE_SIGNED", 3: "SIGNEDSTATE_SYSTEM",
                 4: "SIGNEDSTATE_PRIVILEGED"}


def _active_addons(processed, raw):
    found = _dict(_dict(processed.get("telemetry_environment")).get("addons")).get("activeAddons")
    if isinstance(found, dict):
        return found
    try:  # the raw annotation is the same environment as JSON text
        environment = json.loads(raw.get("TelemetryEnvironment") or "{}")
    except (TypeError, ValueError, RecursionError):
        return {}
    return _dict(_dict(_dict(environment).get("addons")).get("activeAddons"))


def extensions(processed, raw):
    """``[{"id", "version", "name", "is_system", "signed_state"}]`` of the ``addons`` list
    (``id:version`` each), as crash-stats' Extensions tab shows them."""
    addons = processed.get("addons")
    if not isinstance(addons, list):
        return []
    active = _active_addons(processed, raw)
    out = []
    for line in addons[:MAX_MODULES]:
        if not isinstance(line, str) or not line:
            continue
        addon_id, _, version = line.partition(":")
        more = _dict(active.get(addon_id))
        out.append({"id": addon_id, "version": version.split(":")[0] or None,
                    "name": display.text(more.get("name")), "is_system": display.text(more.get("isSystem")),
                    "signed_state": SIGNED_STATES.get(_index(more.get("signedState")),
                                                      display.text(more.get("signedState")))})
    return out


def report(store, crash_id, public_fields, unredacted=False):
    """One crash: state, dumps, details, crashing thread, modules, raw and processed crash.

    ``withheld``: how many fields of each document the allowlist left out (0 when unredacted).
    """
    crash_id = crash_id_of(crash_id)
    summary = store.crash_summary(crash_id)
    unreadable = []  # documents another client stored that no parser here reads: named, not shown
    try:
        raw = store.get_raw_crash(crash_id)
    except UnreadableDocument as exc:
        raw, unreadable = {}, [str(exc)]
    try:
        processed = store.get_unredacted_processed(crash_id) if unredacted else store.get_processed(crash_id)
    except CrashIDNotFound:
        processed = None  # not processed yet
    except UnreadableDocument as exc:
        processed, unreadable = None, unreadable + [str(exc)]
    withheld = {"raw_crash": 0, "processed_crash": 0}
    if not unredacted:
        raw, withheld["raw_crash"] = public_fields.public("raw_crash", raw)
        if processed is not None:
            processed, withheld["processed_crash"] = public_fields.public("processed_crash", processed)
    raw = raw if isinstance(raw, dict) else {}
    shown = processed if isinstance(processed, dict) else {}
    return {"crash_id": crash_id, "state": summary, "details": details(shown, raw),
            "crashing_thread": crashing_thread(shown), "java_exception": java_exception(shown),
            "modules": modules(shown), "unloaded_modules": unloaded_modules(shown), "extensions": extensions(shown, raw),
            "raw_crash": raw, "processed_crash": processed, "dumps": summary["dumps"], "unredacted": unredacted,
            "withheld": withheld, "unreadable": unreadable}
