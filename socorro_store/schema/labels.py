"""What a person reads for the store's internal markers.

The store keeps a crash without a signature under ``##null##``, an empty signature under
``##empty##``, a product, version, OS or process type over its cap under ``##other##`` and a
missing one under ``##unknown##``: names no crash reporter sends, so they never collide with a
real value in a row key or a counter column.  People read them in words, as crash-stats shows a
crash with no signature; programs keep the stored value (a link, a filter, a JSON key), since
that is what the store answers to.
"""

from .dimension_keys import OTHER, UNKNOWN
from .keys import EMPTY_SIGNATURE, NULL_SIGNATURE

#: each marker and the words shown for it
MARKER_LABELS = {
    NULL_SIGNATURE: "(no signature)",
    EMPTY_SIGNATURE: "(empty signature)",
    OTHER: "(other)",
    UNKNOWN: "(unknown)",
}


def label(value):
    """The text a person reads for a stored value: a marker in words, any other value as it is
    (a value that is not text, None included, is returned unchanged)."""
    return MARKER_LABELS.get(value, value) if isinstance(value, str) else value


def is_marker(value):
    """True for a stored name that is one of the store's markers, not a value a client sent."""
    return isinstance(value, str) and value in MARKER_LABELS
