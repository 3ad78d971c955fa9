"""The fields Super Search knows: their names, types, where each comes from, and who may see it.

Names are Socorro's Super Search names (``platform`` is the processed crash's ``os_name``).  Each
field has one type, which fixes the operators it takes and how it matches:

* ``keyword``: matched whole and case-sensitive (``=``, no operator, ``~ ^ $ @``);
* ``text``: like ``keyword`` for ``= ~ ^ $ @`` (the whole value, case-sensitive), but a value
  with no operator is *analyzed*: see :func:`analyze`;
* ``integer``: whole numbers, ``=``/no operator and ``> >= < <=``;
* ``date``: an instant, ``> >= < <=`` only;
* ``boolean``: ``__true__`` only.

Every type takes ``__null__`` (the field is missing), and ``!`` negates any operator.

``public`` comes from Socorro's schema permissions, as the pages' allowlist
(``web/public_fields.json``, built from Socorro's schemas by ``tools/schemas/build_public_fields.py``)
records them: a field is public when its processed-crash key is listed there.  A protected field
can be searched, faceted, sorted and returned only by trusted callers (``web --unredacted``, the
library); anywhere else it is refused (:class:`~socorro_store.errors.ProtectedField`).
"""

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InvalidArgument

TYPES = ("keyword", "text", "integer", "date", "boolean")

#: Socorro's processed-crash permissions, as the web view's allowlist keeps them (data, not code:
#: read by path so that this layer does not import the web view).
_PUBLIC_FIELDS_FILE = Path(__file__).resolve().parent.parent / "web" / "public_fields.json"


@dataclass(frozen=True)
class Field:
    """One searchable field.

    ``source``: the processed crash's key the value is read from.  ``public``: whether anyone
    may search or see it (see the module docstring).  ``description``: one line for the field
    list (``search fields``, ``/api/SuperSearchFields/``).
    """

    name: str
    type: str
    source: str
    public: bool
    description: str

    @property
    def is_range(self):
        """Whether ``> >= < <=`` apply (numbers and dates)."""
        return self.type in ("integer", "date")

    @property
    def is_string(self):
        return self.type in ("keyword", "text")


def _public_sources():
    with open(_PUBLIC_FIELDS_FILE, encoding="utf-8") as f:
        return set(json.load(f)["processed_crash"])


# (name, type, processed-crash key, description)
_FIELDS = (
    ("uuid", "keyword", "uuid", "The crash id."),
    ("date", "date", "date_processed", "When the crash was submitted (the collector's time)."),
    ("signature", "text", "signature", "The crash's signature."),
    ("product", "keyword", "product", "The product name (Firefox, Fenix, ...)."),
    ("version", "keyword", "version", "The product version."),
    ("release_channel", "keyword", "release_channel", "The release channel (release, beta, nightly, ...)."),
    ("platform", "keyword", "os_name", "The operating system's name."),
    ("platform_version", "keyword", "os_version", "The operating system's version."),
    ("process_type", "keyword", "process_type", "The crashing process's type (parent, content, gpu, ...)."),
    ("build_id", "integer", "build", "The product's build id (YYYYMMDDhhmmss)."),
    ("cpu_arch", "keyword", "cpu_arch", "The CPU architecture (x86, amd64, arm64, ...)."),
    ("reason", "keyword", "reason", "The crash reason (the exception or signal)."),
    ("address", "keyword", "address", "The crashing address."),
    ("moz_crash_reason", "text", "moz_crash_reason", "The MOZ_CRASH reason."),
    ("uptime", "integer", "uptime", "Seconds the process ran before crashing."),
    ("install_age", "integer", "install_age", "Seconds since the build was installed."),
    ("startup_crash", "boolean", "startup_crash", "Whether the crash happened during startup."),
    ("plugin_filename", "keyword", "plugin_filename", "The file name of the crashing plugin."),
    ("hang_type", "integer", "hang_type", "1: a hang, -1: a hang's other side, 0: a crash."),
    ("app_notes", "text", "app_notes", "The application's notes (graphics adapter, ...)."),
    ("email", "keyword", "email", "The reporter's email address."),
    ("url", "keyword", "url", "The URL the reporter was visiting."),
    ("user_comments", "text", "user_comments", "The reporter's comments."),
)


def _build():
    public = _public_sources()
    return {name: Field(name, type_, source, source in public, description)
            for name, type_, source, description in _FIELDS}


#: every field by name, in the order of the field list
FIELDS = _build()

#: the ``_columns`` of a search that names none (Socorro's default)
DEFAULT_COLUMNS = ("uuid", "date", "signature", "product", "version")

_TOKEN = re.compile(r"[^\W_]+")


def analyze(text):
    """The tokens a ``text`` field's value (or a no-operator query value on one) is split into.

    Maximal runs of Unicode letters and digits, lowercased: ``"OOM | small"`` gives
    ``["oom", "small"]``, ``"js::RunScript"`` gives ``["js", "runscript"]``.  A no-operator
    filter on a text field matches a crash whose value shares *at least one* token with the
    filter's value (Elasticsearch's ``match`` query, whose default operator is OR); a filter
    value with no token matches nothing.  An engine speaking Elasticsearch's DSL gets the same
    tokens from a pattern tokenizer on ``[^\\p{L}\\p{N}]+`` with a lowercase filter.

    Lowercasing is per code point, as Lucene's filter does (Java's ``Character.toLowerCase``):
    ``"ΣΑΣ"`` gives ``"σασ"`` (no final-sigma rule) and ``"İ"`` gives ``"i"`` (not ``"i̇"``).
    """
    return ["".join(_lower(char) for char in token) for token in _TOKEN.findall(text)]


def _lower(char):
    # str.lower() is Unicode's full mapping; Lucene's is the simple one, which differs only for
    # U+0130 (full: "i" + U+0307), whose simple mapping is the full one's first character
    return char.lower()[:1] or char


def document_of(processed_crash):
    """The search document of a processed crash: ``{field name: value}``, missing fields left out.

    Values are checked against their field's type; a value of the wrong type (a processor's
    bug, or Socorro's older documents) is left out rather than indexed wrongly: a string field
    keeps strings, an integer field integers (a numeric string such as a ``build`` of
    ``"20261120093000"`` is converted), a boolean field booleans (Socorro's ``"1"``/``"0"`` and
    1/0 too), a date field an ISO 8601 string with a time zone (naive times are UTC), kept as
    that string's UTC form ``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00``.

    Values every engine can hold alike, and nothing else (an engine must never drop a value
    another keeps): strings of valid Unicode (no lone surrogates) up to :data:`MAX_STRING_CHARS`
    characters (Lucene's term limit is 32,766 bytes of UTF-8), integers within
    ±:data:`MAX_INTEGER` (doubles hold them exactly: Elasticsearch's histogram keys are doubles),
    and dates from 1970 to 2262-04-11 (Elasticsearch's ``date_nanos``).  Socorro's own fields
    stay far inside these: a comment is at most 500 characters, a build id 14 digits.
    """
    doc = {}
    for field in FIELDS.values():
        value = _typed(field, processed_crash.get(field.source))
        if value is not None:
            doc[field.name] = value
    return doc


#: the longest string value a document keeps (Lucene's 32,766-byte term limit / 4 bytes a character)
MAX_STRING_CHARS = 8191
#: the largest integer magnitude a document keeps (2**53: exact in a double)
MAX_INTEGER = 2 ** 53
#: the dates a document keeps: [DATE_MIN, DATE_MAX) (Elasticsearch's date_nanos range)
DATE_MIN = "1970-01-01T00:00:00+00:00"
DATE_MAX = "2262-04-11T00:00:00+00:00"


def _encodable(text):
    """Whether ``text`` is valid Unicode (JSON's ``\\ud800`` escapes decode to lone surrogates,
    which no engine can store)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_DATE_RANGE = tuple(datetime.fromisoformat(d) for d in (DATE_MIN, DATE_MAX))


def _typed(field, value):
    if value is None:
        return None
    if field.is_string:
        return value if isinstance(value, str) and len(value) <= MAX_STRING_CHARS and _encodable(value) else None
    if field.type == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, str) and value.isascii() and value.lstrip("-").isdigit() and len(value) <= 20:
            value = int(value)
        return value if isinstance(value, int) and -MAX_INTEGER <= value <= MAX_INTEGER else None
    if field.type == "boolean":
        if isinstance(value, bool):
            return value
        if not isinstance(value, (str, int)):
            return None
        return {"1": True, "0": False, 1: True, 0: False, "true": True, "false": False}.get(value)
    if field.type == "date":
        if not isinstance(value, str):
            return None
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        try:
            when = when.astimezone(timezone.utc)
        except OverflowError:  # a time zone moves it past year 1 or 9999
            return None
        return when.isoformat() if _DATE_RANGE[0] <= when < _DATE_RANGE[1] else None
    return None


def check_document(doc):
    """``doc`` without its None values, if it is a document an engine can hold: a dict with a
    string ``uuid`` and only known fields, each value of its field's type (strings of valid
    Unicode, 64-bit integers, booleans, ISO 8601 dates with a time zone).  Else InvalidArgument
    naming the problem.  Every engine's ``index`` checks its batch with it before writing any.
    (:func:`document_of` makes documents well inside this: engines hold somewhat more.)"""
    if not isinstance(doc, dict) or not isinstance(doc.get("uuid"), str):
        raise InvalidArgument(f"a search document needs a string uuid: {doc!r:.200}")
    out = {}
    for name, value in doc.items():
        field = FIELDS.get(name)
        if field is None:
            raise InvalidArgument(f"search document {doc['uuid']}: no field {name!r}")
        if value is None:
            continue
        if not _holds(field, value):
            raise InvalidArgument(f"search document {doc['uuid']}: {name}={value!r:.100} is not a {field.type}")
        out[name] = value
    return out


def _holds(field, value):
    if field.is_string:
        return isinstance(value, str) and _encodable(value)
    if field.type == "integer":
        return not isinstance(value, bool) and isinstance(value, int) and -(2 ** 63) <= value < 2 ** 63
    if field.type == "boolean":
        return isinstance(value, bool)
    try:  # a date: in UTC it must stay within years 1 to 9999
        return isinstance(value, str) and datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(
            timezone.utc) is not None
    except (ValueError, OverflowError):
        return False
