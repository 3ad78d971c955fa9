"""Facts the store reads out of a crash's documents, the same way wherever they are read.

The collector's raw crash is a mapping of annotations; the crash row keeps it as JSON in
``meta_data:json``.  Saving a crash, counting it again (rollup) and checking its index pointers
(verify-indexes) must agree on what they read from it.
"""

import json
from collections.abc import Mapping

from .keys import COL_META, COL_PROCESS_TYPE, COL_PROCESSED_JSON, COL_PROCESSING_ERROR

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


def stored_process_type(cells):
    """The ProcessType of a crash row: ``flags:process_type`` when written (our rows since it
    exists), else from ``meta_data:json`` (older rows, Socorro's).  None when neither was read,
    so the caller fetches ``meta_data:json`` for that row only."""
    if COL_PROCESS_TYPE in cells:
        return cells[COL_PROCESS_TYPE].decode("ascii", "replace") or DEFAULT_PROCESS_TYPE
    if COL_META in cells:
        return process_type_of(cells[COL_META])
    return None


def processing_failed(processed_crash):
    """True when a processed crash says processing failed (``success`` is False)."""
    return isinstance(processed_crash, Mapping) and processed_crash.get("success") is False


def stored_processing_error(cells):
    """Whether a processed crash row records a failed processing: ``flags:processing_error``
    when written, else ``success`` in ``processed_data:json``.  None when neither was read."""
    if COL_PROCESSING_ERROR in cells:
        return cells[COL_PROCESSING_ERROR] == b"1"
    if COL_PROCESSED_JSON in cells:
        try:
            return processing_failed(json.loads(cells[COL_PROCESSED_JSON]))
        except (TypeError, ValueError):
            return False
    return None


# -- dimensions: product, version, OS (small flags cells, so counts skip the JSON documents) ----

COL_PRODUCT = b"flags:product"            # the raw crash's ProductName
COL_VERSION = b"flags:version"            # the raw crash's Version
COL_P_PRODUCT = b"flags:processed_product"  # the processed crash's product, when it has one
COL_P_VERSION = b"flags:processed_version"  # the processed crash's version, when it has one
COL_OS_NAME = b"flags:os_name"            # the processed crash's os_name, when it has one


def _text(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()[:64].encode("utf-8", "surrogatepass")
    return None


# -- what a crash list shows of a processed crash: small cells, so a list skips its JSON --------

COL_REASON = b"flags:reason"    # the processed crash's reason (empty: none)
COL_ADDRESS = b"flags:address"  # its crash address
COL_BUILD = b"flags:build"      # its build id
LISTING_COLUMNS = {"reason": COL_REASON, "address": COL_ADDRESS, "build": COL_BUILD}


def processed_listing_cells(processed_crash):
    """The processed crash's ``reason``, ``address`` and ``build``, each cut to 64 characters:
    every one written (empty where absent), so a row holding ``flags:build`` needs no JSON."""
    return {column: _text(processed_crash.get(name)) or b"" for name, column in LISTING_COLUMNS.items()}


def raw_dimension_cells(raw_crash):
    """``flags:product`` / ``flags:version`` of a raw crash (its ``ProductName``/``Version``)."""
    out = {}
    for column, name in ((COL_PRODUCT, "ProductName"), (COL_VERSION, "Version")):
        value = _text(raw_crash.get(name))
        if value is not None:
            out[column] = value
    return out


def processed_dimension_cells(processed_crash):
    """The processed crash's ``product``, ``version`` and ``os_name``, those it has."""
    out = {}
    for column, name in ((COL_P_PRODUCT, "product"), (COL_P_VERSION, "version"), (COL_OS_NAME, "os_name")):
        value = _text(processed_crash.get(name))
        if value is not None:
            out[column] = value
    return out


def stored_dimensions(cells, processed=True):
    """``{"product", "version", "os"}`` of a crash row's flags (None where unknown).

    Processed counts take the processed crash's value and fall back to the raw crash's
    (``os_name`` has no raw fallback); submitted counts (``processed=False``) take the raw's.
    Rows written before these cells existed (Socorro's) have none: their crashes count as
    unknown (``##unknown##``) in the dimensioned counters, and fully in the plain ones.
    """
    def get(column):
        value = cells.get(column)
        return value.decode("utf-8", "replace") if value else None

    if not processed:
        return {"product": get(COL_PRODUCT), "version": get(COL_VERSION), "os": None}
    return {"product": get(COL_P_PRODUCT) or get(COL_PRODUCT),
            "version": get(COL_P_VERSION) or get(COL_VERSION), "os": get(COL_OS_NAME)}
