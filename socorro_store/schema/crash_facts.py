"""Facts the store reads out of a crash's documents, the same way wherever they are read.

The collector's raw crash is a mapping of annotations; the crash row keeps it as JSON in
``meta_data:json``.  Saving a crash, counting it again (rollup) and checking its index pointers
(verify-indexes) must agree on what they read from it.
"""

import json
from collections.abc import Mapping

DEFAULT_PROCESS_TYPE = "default"


def process_type_of(raw_crash):
    """The crash's ``ProcessType`` annotation, ``"default"`` when absent or empty.

    ``raw_crash`` is the annotations mapping or the stored ``meta_data:json`` bytes.  Stored
    JSON that cannot be read counts as the browser process (``"default"``), as Socorro counted
    a crash without the annotation.
    """
    if not isinstance(raw_crash, Mapping):
        try:
            raw_crash = json.loads(raw_crash)
        except (TypeError, ValueError):
            return DEFAULT_PROCESS_TYPE
        if not isinstance(raw_crash, Mapping):
            return DEFAULT_PROCESS_TYPE
    return raw_crash.get("ProcessType") or DEFAULT_PROCESS_TYPE
