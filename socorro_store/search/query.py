"""Super Search's parameters parsed into a checked :class:`~.contract.Query`, and the field list.

:func:`parse_search` takes the parameters as Socorro's ``/api/SuperSearch/`` takes them and either
returns a :class:`~.contract.Query` an engine can run without further checks, or raises
:class:`~socorro_store.errors.SearchParameterError` naming the parameter at fault (or
:class:`~socorro_store.errors.ProtectedField` in public mode).  Nothing is searched before the
whole query has been accepted.  docs/search.md ("Fields and operators") is the user's version.

**Filters** ``FIELD=[!]OPERATORVALUE``.  ``!`` negates; the operator is the longest of
``__null__ __true__ >= <= > < = ~ ^ $ @`` the value starts with, none meaning "match".  Each field
type takes (see :mod:`.fields`): strings match ``= ~ ^ $ @``; integers match ``= > >= < <=``;
dates ``> >= < <=`` only; booleans ``__true__`` only; every type ``__null__``, which takes no
value.  Anything else is refused rather than read as a literal value: ``product=>x`` is an error;
``product==>x`` matches the product ``>x``.  Integers are ASCII digits with an optional minus
sign, 64-bit; dates are ISO 8601 dates or date-times, naive ones UTC (``2026-11-20`` is that
day's midnight UTC).  ``@`` values are Lucene regexps (:mod:`.regex` lists what is accepted).  An
empty value (``product=``, as an empty form field sends it) is ignored.  As Socorro does, a
``version`` value with no operator ending in ``b`` (``120.0b``) matches every version starting
with it (the betas).

**Date range.**  Without an upper bound (``<``, ``<=``, or a negated ``>``/``>=``), ``date < now``
is added; without a lower bound, ``date >= (the lowest upper bound) - 7 days``.
``Query.start``/``end`` are the tightest bounds the date conditions give.

**Controls.**  ``_columns`` (default :data:`~.fields.DEFAULT_COLUMNS`; ``_columns=`` alone means
none), ``_sort`` (``-`` prefix for descending), ``_results_number`` (0 to 1,000, default 100),
``_results_offset`` (``offset + number`` at most 10,000), ``_facets`` (default ``signature``;
``_facets=`` alone means none), ``_facets_size`` (0 to 10,000, default 50; 0 means no facets,
histograms or cardinalities at all, as in Socorro), ``_aggs.F[.G[.H]]=SUB`` (terms of F, with
terms of G per F term and so on, then SUB per innermost term), ``_histogram.F=SUB`` (F a date or
integer field; an empty value asks for the histogram alone), ``_histogram_interval.F`` (dates:
``N`` + ``m``/``h``/``d``/``w``, or ``minute``/``hour``/``day``, default ``1d``; integers: a
positive integer, default 1).  Facet and sub-aggregation values are field names,
``_cardinality.F`` or ``_histogram.F``.  A date histogram may have at most 10,000 buckets over
the query's date range.  A terms facet on a date field is refused (a histogram is the way).
Single-valued controls take one value.  Any other name starting with ``_`` is unknown.

**Limits.**  At most 1,000 filter values in a query, 1,000 values per control, 10,000 values in
all, and 10,000 characters per value.
"""

import copy
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

from ..errors import ProtectedField, SearchParameterError
from . import fields as fields_module
from .contract import (
    DEFAULT_FACETS_SIZE, DEFAULT_RESULTS_NUMBER, MAX_FACETS_SIZE, MAX_RESULTS_NUMBER,
    MAX_RESULTS_WINDOW, Cardinality, Condition, FieldFilter, Histogram, Query, Terms, facet_key,
)
from .fields import DEFAULT_COLUMNS, FIELDS
from .regex import RegexError, translate

MAX_FILTER_VALUES = 1000
MAX_CONTROL_VALUES = 1000
#: every value of every parameter, filters and controls together
MAX_VALUES = 10_000
MAX_VALUE_LENGTH = 10_000
MAX_HISTOGRAM_BUCKETS = 10_000
#: the deepest ``_aggs.F.G.H`` (Socorro's deepest allowed nesting)
MAX_AGGS_DEPTH = 3
DEFAULT_DATE_RANGE = timedelta(days=7)
DEFAULT_FACETS = ("signature",)

#: operators in the order they are tried on a value (longest first, so ``>=`` wins over ``>``)
_PREFIXES = ("__null__", "__true__", ">=", "<=", ">", "<", "=", "~", "^", "$", "@")
_TYPE_OPERATORS = {
    "keyword": ("match", "=", "~", "^", "$", "@", "__null__"),
    "text": ("match", "=", "~", "^", "$", "@", "__null__"),
    "integer": ("match", "=", ">", ">=", "<", "<=", "__null__"),
    "date": (">", ">=", "<", "<=", "__null__"),
    "boolean": ("__true__", "__null__"),
}
_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_INTEGER = re.compile(r"-?[0-9]{1,19}")
_CONTROLS = ("_columns", "_sort", "_results_number", "_results_offset", "_facets", "_facets_size")
_CONTROL_PREFIXES = ("_aggs.", "_histogram.", "_histogram_interval.")
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_NAMED_INTERVALS = {"minute": 60, "hour": 3600, "day": 86400}
_DATE_INTERVAL = re.compile(r"([0-9]{1,9})([mhdw])")
#: the opposite bound a negated range condition gives (``!>=X`` is ``<X``)
_NEGATED_RANGE = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}
_MICROSECOND = timedelta(microseconds=1)


def _shown(name):
    """A parameter name as errors show it: hostile names are cut short."""
    return name if len(name) <= 100 else name[:100] + "..."


def _pairs(params):
    """``(name, value)`` for every value of ``params``, in order (see :func:`parse_search`)."""
    if hasattr(params, "lists") and callable(params.lists):
        params = params.lists()
    elif isinstance(params, Mapping):
        params = params.items()
    for item in params:
        try:
            name, values = item
        except (TypeError, ValueError):
            raise SearchParameterError("params", "expected (name, value) pairs") from None
        if not isinstance(name, str):
            raise SearchParameterError(_shown(str(name)), "parameter names are strings")
        if not isinstance(values, (list, tuple)):
            values = (values,)
        for value in values:
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                raise SearchParameterError(_shown(name), "values are strings")
            yield name, value


def _gather(params):
    """``{name: [values]}`` in order of first appearance, with the size limits applied as the
    values arrive (so a hostile query is refused before it is all read)."""
    gathered, filter_values, total_values = {}, 0, 0
    for name, value in _pairs(params):
        if len(value) > MAX_VALUE_LENGTH:
            raise SearchParameterError(_shown(name), f"a value is longer than {MAX_VALUE_LENGTH:,} characters")
        values = gathered.get(name)
        if values is None:
            if name.startswith("_") and name not in _CONTROLS and not name.startswith(_CONTROL_PREFIXES):
                raise SearchParameterError(_shown(name), "unknown parameter")
            values = gathered[name] = []
        values.append(value)
        total_values += 1
        if total_values > MAX_VALUES:
            raise SearchParameterError(_shown(name), f"more than {MAX_VALUES:,} values in one query")
        if name.startswith("_"):
            if len(values) > MAX_CONTROL_VALUES:
                raise SearchParameterError(_shown(name), f"more than {MAX_CONTROL_VALUES:,} values")
        else:
            filter_values += 1
            if filter_values > MAX_FILTER_VALUES:
                raise SearchParameterError(_shown(name), f"more than {MAX_FILTER_VALUES:,} filter values in one query")
    return gathered


def _field(name, parameter, unredacted, *, what="field"):
    field = FIELDS.get(name)
    if field is None:
        raise SearchParameterError(_shown(parameter), f"unknown {what} {_shown(name)!r}")
    if not unredacted and not field.public:
        raise ProtectedField(name, _shown(parameter))
    return field


def _integer(text, parameter):
    if not _INTEGER.fullmatch(text) or not _INT64[0] <= int(text) <= _INT64[1]:
        raise SearchParameterError(parameter, f"{_shown(text)!r} is not a whole number")
    return int(text)


def _date(text, parameter):
    try:
        if not text.isascii() or len(text) > 64:
            raise ValueError(text)
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        raise SearchParameterError(parameter, f"{_shown(text)!r} is not an ISO 8601 date or date-time") from None


def _condition(field, raw):
    """The :class:`Condition` of one filter value."""
    name, value, negated = field.name, raw, raw.startswith("!")
    if negated:
        value = value[1:]
    operator = next((p for p in _PREFIXES if value.startswith(p)), "match")
    if operator != "match":
        value = value[len(operator):]
    allowed = _TYPE_OPERATORS[field.type]
    if operator not in allowed:
        shown = "no operator" if operator == "match" else f"operator {operator!r}"
        raise SearchParameterError(name, f"{shown} does not apply to the {field.type} field {name} "
                                   f"(it takes {', '.join('no operator' if a == 'match' else a for a in allowed)})")
    if operator in ("__null__", "__true__"):
        if value:
            raise SearchParameterError(name, f"{operator} takes no value (got {_shown(value)!r})")
        return Condition(name, operator, None, negated)
    if field.type == "integer":
        return Condition(name, operator, _integer(value, name), negated)
    if field.type == "date":
        return Condition(name, operator, _date(value, name), negated)
    if operator == "@":
        try:
            pattern = translate(value)
        except RegexError as exc:
            raise SearchParameterError(name, f"regular expression {_shown(value)!r}: {exc}") from None
        return Condition(name, operator, value, negated, pattern)
    if name == "version" and operator == "match" and value.endswith("b"):
        operator = "^"
    return Condition(name, operator, value, negated)


def _filters(gathered, unredacted):
    filters = {}
    for name, values in gathered.items():
        if name.startswith("_"):
            continue
        field = _field(name, name, unredacted)
        conditions = [_condition(field, value) for value in values if value != ""]
        if conditions:
            filters[name] = conditions
    return filters


def _date_range(conditions, now):
    """Add the default bounds to the date conditions; return ``(start, end)``."""
    lowers, uppers = [], []
    for c in conditions:
        if not c.is_range:
            continue
        operator = _NEGATED_RANGE[c.operator] if c.negated else c.operator
        if operator == ">":
            lowers.append(c.value + _MICROSECOND)
        elif operator == ">=":
            lowers.append(c.value)
        elif operator == "<":
            uppers.append((c.value, c.value))
        else:
            uppers.append((c.value, c.value + _MICROSECOND))
    if uppers:
        upper_value = min(value for value, _end in uppers)
        end = min(end for _value, end in uppers)
    else:
        upper_value = end = now
        conditions.append(Condition("date", "<", now))
    if lowers:
        start = max(lowers)
    else:
        start = upper_value - DEFAULT_DATE_RANGE
        conditions.append(Condition("date", ">=", start))
    return min(start, end), end


def _one(gathered, name):
    values = gathered.get(name, [])
    if len(values) > 1:
        raise SearchParameterError(name, "takes one value")
    return values[0] if values else ""


def _bounded(gathered, name, default, low, high, message=None):
    text = _one(gathered, name)
    if text == "":
        return default
    number = _integer(text, name)
    if not low <= number <= high:
        raise SearchParameterError(name, message or f"must be between {low:,} and {high:,}")
    return number


def _not_histogram(field):
    return f"{field.name} is a {field.type} field: histograms are of date or integer fields"


def _intervals(gathered, unredacted):
    """``{field: interval}`` of the ``_histogram_interval.*`` parameters."""
    intervals = {}
    for name in gathered:
        if not name.startswith("_histogram_interval."):
            continue
        field = _field(name[len("_histogram_interval."):], name, unredacted)
        text = _one(gathered, name)
        if field.type == "date":
            found = _DATE_INTERVAL.fullmatch(text)
            if text in _NAMED_INTERVALS:
                intervals[field.name] = _NAMED_INTERVALS[text]
            elif found and int(found.group(1)) > 0:
                intervals[field.name] = int(found.group(1)) * _UNITS[found.group(2)]
            else:
                raise SearchParameterError(name, f"{_shown(text)!r} is not an interval: a positive "
                                           "number followed by m, h, d or w (1d, 6h), or minute, hour, day")
        elif field.type == "integer":
            number = _integer(text, name)
            if number <= 0:
                raise SearchParameterError(name, "must be a positive whole number")
            intervals[field.name] = number
        else:
            raise SearchParameterError(name, _not_histogram(field))
    return intervals


class _Aggregations:
    """Builds the aggregations of facet-like parameters, checking each name it meets."""

    def __init__(self, intervals, start, end, unredacted):
        self.intervals, self.start, self.end, self.unredacted = intervals, start, end, unredacted

    def terms_field(self, name, parameter):
        field = _field(name, parameter, self.unredacted)
        if field.type == "date":
            raise SearchParameterError(parameter, f"{name} is a date field: use _histogram.{name} rather than terms")
        return field.name

    def histogram(self, name, parameter, sub=()):
        field = _field(name, parameter, self.unredacted)
        if field.type not in ("date", "integer"):
            raise SearchParameterError(parameter, _not_histogram(field))
        if field.type == "date":
            interval = self.intervals.get(name, 86400)
            step = interval * 1_000_000
            epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
            start_us = (self.start - epoch) // _MICROSECOND
            end_us = (self.end - epoch) // _MICROSECOND
            buckets = (end_us - 1) // step - start_us // step + 1 if end_us > start_us else 0
            if buckets > MAX_HISTOGRAM_BUCKETS:
                raise SearchParameterError(f"_histogram_interval.{name}",
                                           f"{buckets:,} buckets over the date range: at most {MAX_HISTOGRAM_BUCKETS:,}")
        else:
            interval = self.intervals.get(name, 1)
        return Histogram(name, interval, tuple(sub))

    def value(self, text, parameter):
        """The aggregation a facet or sub-aggregation value names (None for an empty one)."""
        if text == "":
            return None
        if text.startswith("_cardinality."):
            return Cardinality(_field(text[len("_cardinality."):], parameter, self.unredacted).name)
        if text.startswith("_histogram."):
            return self.histogram(text[len("_histogram."):], parameter)
        return Terms(self.terms_field(text, parameter))

    def values(self, texts, parameter):
        aggs = {}
        for text in texts:
            agg = self.value(text, parameter)
            if agg is not None:
                aggs[facet_key(agg)] = agg
        return tuple(aggs.values())


def _facets(gathered, intervals, start, end, unredacted):
    build = _Aggregations(intervals, start, end, unredacted)
    facets = {}
    for agg in build.values(gathered.get("_facets", DEFAULT_FACETS), "_facets"):
        facets[facet_key(agg)] = agg
    for name, values in gathered.items():
        if name.startswith("_aggs."):
            path = name[len("_aggs."):].split(".")
            if len(path) > MAX_AGGS_DEPTH:
                raise SearchParameterError(_shown(name), f"at most {MAX_AGGS_DEPTH} levels of _aggs")
            names = [build.terms_field(part, name) for part in path]
            agg = Terms(names[-1], build.values(values, name))
            for outer in reversed(names[:-1]):
                agg = Terms(outer, (agg,))
            facets[facet_key(agg)] = agg
    for name, values in gathered.items():
        if name.startswith("_histogram."):
            agg = build.histogram(name[len("_histogram."):], name, build.values(values, name))
            facets[facet_key(agg)] = agg
    return tuple(facets.values())


def _columns(gathered, unredacted):
    if "_columns" not in gathered:
        return DEFAULT_COLUMNS
    columns = []
    for name in gathered["_columns"]:
        if name and name not in columns:
            columns.append(_field(name, "_columns", unredacted).name)
    return tuple(columns)


def _sort(gathered, unredacted):
    keys, seen = [], set()
    for text in gathered.get("_sort", ()):
        if not text:
            continue
        descending = text.startswith("-")
        name = text[1:] if descending else text
        field = _field(name, "_sort", unredacted)
        if field.name not in seen:
            seen.add(field.name)
            keys.append((field.name, descending))
    return tuple(keys)


def parse_search(params, now=None, unredacted=False):
    """The :class:`~.contract.Query` of Super Search parameters (the module docstring has the rules).

    ``params``: a mapping of name -> str or list of str, or an iterable of ``(name, value)`` pairs
    whose value may also be a list (``MultiDict.lists()``), or a werkzeug ``MultiDict``; repeated
    names accumulate.  ``now``: the instant the default date range ends at (default: the wall
    clock; naive means UTC).  ``unredacted``: whether protected fields may be named; when False,
    naming one anywhere raises :class:`~socorro_store.errors.ProtectedField`.

    Raises :class:`~socorro_store.errors.SearchParameterError` naming the parameter at fault.
    """
    if now is None:
        now = datetime.now(timezone.utc)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    else:
        now = now.astimezone(timezone.utc)
    gathered = _gather(params)
    filters = _filters(gathered, unredacted)
    date_conditions = filters.setdefault("date", [])
    start, end = _date_range(date_conditions, now)

    columns = _columns(gathered, unredacted)
    sort = _sort(gathered, unredacted)
    results_number = _bounded(gathered, "_results_number", DEFAULT_RESULTS_NUMBER, 0, MAX_RESULTS_NUMBER,
                              f"must be between 0 and {MAX_RESULTS_NUMBER:,}")
    results_offset = _bounded(gathered, "_results_offset", 0, 0, MAX_RESULTS_WINDOW,
                              f"must be between 0 and {MAX_RESULTS_WINDOW:,}")
    if results_offset + results_number > MAX_RESULTS_WINDOW:
        raise SearchParameterError("_results_offset",
                                   f"_results_offset + _results_number cannot be greater than {MAX_RESULTS_WINDOW:,}")
    facets_size = _bounded(gathered, "_facets_size", DEFAULT_FACETS_SIZE, 0, MAX_FACETS_SIZE)
    intervals = _intervals(gathered, unredacted)
    facets = _facets(gathered, intervals, start, end, unredacted)
    if facets_size == 0:
        facets = ()

    return Query(
        filters=tuple(FieldFilter(name, tuple(conditions)) for name, conditions in filters.items()),
        start=start, end=end, columns=columns, sort=sort,
        results_number=results_number, results_offset=results_offset,
        facets=facets, facets_size=facets_size, unredacted=unredacted,
    )


# Socorro's names for what each field is, by our type, and the fields it lists as enums.
_QUERY_TYPES = {"keyword": "string", "text": "string", "integer": "integer", "date": "date", "boolean": "bool"}
_VALIDATION_TYPES = {"string": "str", "enum": "enum", "integer": "int", "date": "datetime", "bool": "bool"}
_ENUM_FIELDS = frozenset({"uuid", "product", "version", "release_channel", "platform", "cpu_arch", "plugin_filename"})
_STORAGE = {
    "keyword": {"type": "keyword"},
    "text": {"type": "text", "fields": {"full": {"type": "keyword"}}},
    "integer": {"type": "long"},
    "date": {"type": "date", "format": "yyyy-MM-dd'T'HH:mm:ssZZZZZ||yyyy-MM-dd'T'HH:mm:ss.SSSSSSZZZZZ"},
    "boolean": {"type": "boolean"},
}
PII_PERMISSION = "crashstats.view_pii"


def fields_document(unredacted=True):
    """The field list in Socorro's ``/api/SuperSearchFields/`` shape: ``{name: {...}}``.

    Each entry has Socorro's keys (``name``, ``query_type``, ``description``, ``is_exposed``,
    ``is_returned``, ``permissions_needed``, ``namespace``, ``in_database_name``,
    ``data_validation_type``, ``form_field_choices``, ``has_full_version``,
    ``storage_mapping``); protected fields need ``crashstats.view_pii`` and are listed only when
    ``unredacted``.
    """
    document = {}
    for field in fields_module.FIELDS.values():
        if not unredacted and not field.public:
            continue
        query_type = "enum" if field.name in _ENUM_FIELDS else _QUERY_TYPES[field.type]
        storage = _STORAGE[field.type]
        document[field.name] = {
            "name": field.name,
            "query_type": query_type,
            "description": field.description,
            "is_exposed": True,
            "is_returned": True,
            "permissions_needed": [] if field.public else [PII_PERMISSION],
            "namespace": "processed_crash",
            "in_database_name": field.source,
            "data_validation_type": _VALIDATION_TYPES[query_type],
            "form_field_choices": [],
            "has_full_version": field.type == "text",
            "storage_mapping": copy.deepcopy(storage),
        }
    return document
