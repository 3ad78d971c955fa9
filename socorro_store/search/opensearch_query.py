"""The OpenSearch engine's index definition and its translation of the search contract into
OpenSearch's query DSL (and of OpenSearch's answers back into the contract's shape).

**Mapping** (:func:`index_body`), one field per search field, ``dynamic: strict``:

* ``keyword`` fields: ``keyword`` (whole values; sorting, terms and ``~ ^ $ @``);
* ``text`` fields: the same ``keyword``, plus a ``FIELD.tokens`` sub-field analyzed by a pattern
  tokenizer on ``[^\\p{L}\\p{N}]+`` and a lowercase filter: :func:`~.fields.analyze`'s tokens;
* ``integer``: ``long``; ``boolean``: ``boolean``;
* ``date``: ``date_nanos``: the contract's dates carry microseconds, which ``date`` (milliseconds)
  would round, so that ranges and sorting would differ from the other engines on the edges.
  ``date_nanos`` holds 1970 to 2262: a document dated outside that keeps its date in ``_source``
  (``date_raw``, returned in hits) but is searched as having none.

String values longer than :data:`MAX_KEYWORD_CHARS` are kept in ``_source`` but not indexed
(Lucene refuses terms over 32,766 bytes): they are searched, sorted and counted as missing.
"""

from datetime import datetime, timezone

from ..errors import SearchParameterError
from .contract import Cardinality, Histogram, Terms, facet_key
from .fields import FIELDS, analyze

#: bumped when the mapping changes: an index made by another version is refused (reindex it)
MAPPING_VERSION = 1
#: OpenSearch's largest ``precision_threshold``: cardinalities are exact up to it
CARDINALITY_EXACT = 40_000
#: 32,766 bytes of UTF-8 at 4 bytes a character, rounded down
MAX_KEYWORD_CHARS = 8191

DATE_MIN = datetime(1970, 1, 1, tzinfo=timezone.utc)
# date_nanos ends at 2262-04-11T23:47:16.854775807Z; microseconds are all a document holds
DATE_MAX = datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=timezone.utc)
TOKENS = ".tokens"
#: ``x_FIELD: true`` marks an integer at a 64-bit extreme: Lucene sorts a missing long as
#: Long.MAX_VALUE ascending (Long.MIN_VALUE descending), so that a crash holding that very value
#: would tie with the crashes missing it; this flag sorts it first among them
EXTREME = "x_"
_LONG_EXTREMES = (2 ** 63 - 1, -(2 ** 63))
#: integers a double holds exactly are below this in magnitude
EXACT_DOUBLE = 2 ** 53


def index_body(shards=1, replicas=0):
    """Settings and mappings of a search index.  One shard by default: terms facets are exact
    only when one shard holds every document they count."""
    properties = {"date_raw": {"type": "keyword", "index": False, "doc_values": False}}
    for field in FIELDS.values():
        if field.type == "keyword":
            properties[field.name] = {"type": "keyword", "ignore_above": MAX_KEYWORD_CHARS}
        elif field.type == "text":
            properties[field.name] = {
                "type": "keyword", "ignore_above": MAX_KEYWORD_CHARS,
                "fields": {"tokens": {"type": "text", "analyzer": "socorro_tokens", "norms": False,
                                      "index_options": "docs"}}}
        elif field.type == "integer":
            properties[field.name] = {"type": "long"}
            properties[EXTREME + field.name] = {"type": "boolean", "index": False}
        elif field.type == "date":
            properties[field.name] = {"type": "date_nanos", "format": "strict_date_optional_time_nanos"}
        else:
            properties[field.name] = {"type": "boolean"}
    return {
        "settings": {
            "index": {"number_of_shards": shards, "number_of_replicas": replicas,
                      "max_regex_length": 1000},
            "analysis": {
                "tokenizer": {"socorro_tokens": {"type": "pattern", "pattern": "[^\\p{L}\\p{N}]+"}},
                "analyzer": {"socorro_tokens": {"type": "custom", "tokenizer": "socorro_tokens",
                                                "filter": ["lowercase"]}},
            },
        },
        "mappings": {"dynamic": "strict", "_meta": {"socorro_search_mapping": MAPPING_VERSION},
                     "properties": properties},
    }


def source_of(doc):
    """The ``_source`` indexed for a document: its date moved to ``date_raw`` when
    ``date_nanos`` cannot hold it."""
    value = doc.get("date")
    if value is not None:
        when = parse_date(value)
        if not DATE_MIN <= when <= DATE_MAX:
            doc = dict(doc)
            doc["date_raw"] = doc.pop("date")
    for name in _INTEGERS:
        if doc.get(name) in _LONG_EXTREMES:
            doc = {**doc, EXTREME + name: True}
    return doc


_INTEGERS = [field.name for field in FIELDS.values() if field.type == "integer"]


def parse_date(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def date_text(when):
    """An aware datetime as ``date_nanos`` reads it (UTC, microseconds)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- filters ----------------------------------------------------------------------------------

def query_dsl(filters):
    """The bool query of a query's field filters (AND-ed); within a field, ranges AND-ed and
    the other conditions OR-ed (the contract's module docstring)."""
    clauses = [_field_dsl(field_filter) for field_filter in filters]
    return {"bool": {"filter": clauses}} if clauses else {"match_all": {}}


def _field_dsl(field_filter):
    """One field's conditions in few clauses: Lucene refuses a query of more than 1,024 clauses
    in all (nested ones counted), and the parser lets a query hold 1,000 values.  Equalities are
    one ``terms`` query, token matches one ``terms`` query on the tokens, and the negated
    conditions of the OR are one clause: ``!a OR !b`` is ``NOT (a AND b)``."""
    ranges = [c for c in field_filter.conditions if c.is_range]
    others = [c for c in field_filter.conditions if not c.is_range]
    clause = {"filter": [_operator_dsl(c) for c in ranges if not c.negated]}
    negated_ranges = [_operator_dsl(c) for c in ranges if c.negated]
    if negated_ranges:
        clause["must_not"] = negated_ranges
    if others:
        should = _positive_dsl(field_filter.field, [c for c in others if not c.negated])
        negated = [c for c in others if c.negated]
        if negated:
            should.append({"bool": {"must_not": [{"bool": {"filter": _all_of_dsl(field_filter.field, negated)}}]}})
        clause["filter"].append({"bool": {"should": should, "minimum_should_match": 1}})
    return {"bool": clause}


def _is_equality(field, condition):
    return condition.operator == "=" or (condition.operator == "match" and field.type != "text")


def _positive_dsl(name, conditions):
    """Clauses any of which matching matches one of ``conditions`` (OR-ed)."""
    field = FIELDS[name]
    equal = [c.value for c in conditions if _is_equality(field, c)]
    tokens = [t for c in conditions if c.operator == "match" and field.type == "text" for t in analyze(c.value)]
    clauses = [_operator_dsl(c) for c in conditions
               if not _is_equality(field, c) and not (c.operator == "match" and field.type == "text")]
    if equal:
        clauses.append({"terms": {name: sorted(set(equal), key=repr)}})
    if any(c.operator == "match" and field.type == "text" for c in conditions):
        # fields.analyze gives the index analyzer's tokens (the tests compare them on a node);
        # no token at all matches nothing, as a match query's would
        clauses.append({"terms": {name + TOKENS: sorted(set(tokens))}})
    return clauses


def _all_of_dsl(name, conditions):
    """Clauses all of which matching matches every one of ``conditions`` (AND-ed, negation
    not applied)."""
    field = FIELDS[name]
    equal = {c.value for c in conditions if _is_equality(field, c)}
    clauses = [_operator_dsl(c) for c in conditions if not _is_equality(field, c)]
    if len(equal) > 1:  # one value cannot equal two
        clauses.append({"match_none": {}})
    elif equal:
        clauses.append({"term": {name: equal.pop()}})
    return clauses


def _operator_dsl(condition):
    name, op, value = condition.field, condition.operator, condition.value
    field = FIELDS[name]
    if op == "__null__":
        return {"bool": {"must_not": [{"exists": {"field": name}}]}}
    if op == "__true__":
        return {"term": {name: True}}
    if op == "match" and field.type == "text":
        return {"terms": {name + TOKENS: sorted(set(analyze(value)))}}
    if op in ("match", "="):
        return {"term": {name: value}}
    if op in ("~", "^", "$"):
        literal = _wildcard_escape(value)
        pattern = {"~": f"*{literal}*", "^": f"{literal}*", "$": f"*{literal}"}[op]
        return {"wildcard": {name: {"value": pattern}}}
    if op == "@":
        # the parser refuses Lucene's optional operators (& ~ <> @ #) unescaped, so the flags
        # change nothing in what it accepts: NONE keeps them literal should one get through
        return {"regexp": {name: {"value": value, "flags": "NONE"}}}
    if op in (">", ">=", "<", "<="):
        return {"range": {name: _range_bound(field, op, value)}}
    raise SearchParameterError(name, f"operator {op!r} is not supported")


def _wildcard_escape(value):
    return value.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")


def _range_bound(field, op, value):
    key = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[op]
    if field.type != "date":
        return {key: value}
    # date_nanos refuses instants it cannot hold: clamp to its span, which keeps the answer
    if value < DATE_MIN:
        return {"gte" if key in ("gt", "gte") else "lt": date_text(DATE_MIN)}
    if value > DATE_MAX:
        return {"lte" if key in ("lt", "lte") else "gt": date_text(DATE_MAX)}
    return {key: date_text(value), "format": "strict_date_optional_time_nanos"}


# -- hits -------------------------------------------------------------------------------------

def sort_dsl(sort):
    keys = []
    for name, descending in sort:
        key = {"order": "desc" if descending else "asc", "missing": "_last"}
        if FIELDS[name].type == "date":
            # a missing date sorts as Long.MIN_VALUE descending, which date_nanos cannot format
            # into the hit's sort values (a 500): sorted as the raw long, the order is the same
            key["numeric_type"] = "long"
        keys.append({name: key})
        if FIELDS[name].type == "integer":
            keys.append({EXTREME + name: {"order": "desc", "missing": "_last"}})
    if "uuid" not in {name for name, _desc in sort}:
        keys.append({"uuid": {"order": "asc"}})
    return keys


def hit_of(columns, source):
    hit = {}
    for name in columns:
        value = source.get(name)
        if value is None and name == "date":
            value = source.get("date_raw")
        hit[name] = value
    return hit


# -- facets -----------------------------------------------------------------------------------

def aggs_dsl(aggs, size):
    """``{"aN": aggregation}`` for the aggregations of ``aggs`` OpenSearch computes (a terms
    facet of size 0 is answered without it)."""
    out = {}
    for i, agg in enumerate(aggs):
        body = _agg_dsl(agg, size)
        if body is not None:
            out[f"a{i}"] = body
        if isinstance(agg, Histogram) and FIELDS[agg.field].type == "integer":
            # OpenSearch computes histogram keys in doubles: the extremes say whether they are exact
            # (keys of values within 2**53 are, and so is -interval, the key of -interval < v < 0)
            out[f"a{i}_min"] = {"min": {"field": agg.field}}
            out[f"a{i}_max"] = {"max": {"field": agg.field}}
    return out


def _agg_dsl(agg, size):
    field = FIELDS[agg.field]
    if isinstance(agg, Cardinality):
        return {"cardinality": {"field": agg.field, "precision_threshold": CARDINALITY_EXACT}}
    if isinstance(agg, Histogram):
        if field.type == "date":
            body = {"date_histogram": {"field": agg.field, "fixed_interval": f"{agg.interval}s", "min_doc_count": 1}}
        else:
            body = {"histogram": {"field": agg.field, "interval": agg.interval, "min_doc_count": 1}}
    elif isinstance(agg, Terms):
        if size == 0:
            return None
        body = {"terms": {"field": agg.field, "size": size, "min_doc_count": 1,
                          "order": [{"_count": "desc"}, {"_key": "asc"}]}}
    else:
        raise TypeError(f"not an aggregation: {agg!r}")
    sub = aggs_dsl(getattr(agg, "sub", ()), size)
    if sub:
        body["aggs"] = sub
    return body


def facets_of(aggs, answer, errors):
    """The contract's ``facets`` from OpenSearch's ``aggregations`` (``answer``), in the order
    asked (a later facet with the same key replaces an earlier one).  Appends to ``errors``
    where a value may be inexact."""
    facets = {}
    for i, agg in enumerate(aggs):
        got = (answer or {}).get(f"a{i}")
        facets[facet_key(agg)] = _facet(agg, got, errors)
        if isinstance(agg, Histogram) and FIELDS[agg.field].type == "integer":
            low = ((answer or {}).get(f"a{i}_min") or {}).get("value")
            high = ((answer or {}).get(f"a{i}_max") or {}).get("value")
            if _histogram_may_round(agg.interval, low, high):
                message = (f"histogram_{agg.field}: buckets may be misplaced and their terms rounded past 2**53 "
                           "(OpenSearch computes histogram keys as doubles)")
                if message not in errors:
                    errors.append(message)
    return facets


def _histogram_may_round(interval, low, high):
    """Whether OpenSearch's double arithmetic may misplace or round an integer histogram's
    buckets, given the field's extremes among the crashes matched (None: no values)."""
    if float(interval) != interval:
        return True
    if high is not None and high >= EXACT_DOUBLE:
        return True
    return low is not None and low <= -interval and low - interval <= -EXACT_DOUBLE


def _facet(agg, got, errors):
    field = FIELDS[agg.field]
    if isinstance(agg, Cardinality):
        value = int(got["value"])
        if value > CARDINALITY_EXACT:
            errors.append(f"cardinality_{agg.field}: an estimate: {value:,} distinct values, more than the "
                          f"{CARDINALITY_EXACT:,} OpenSearch counts exactly")
        return {"value": value}
    if got is None:  # a terms facet of size 0
        return []
    if isinstance(agg, Terms) and got.get("doc_count_error_upper_bound"):
        errors.append(f"{agg.field}: counts may be off by up to {got['doc_count_error_upper_bound']} "
                      "(the index has several shards)")
    buckets = []
    for bucket in got["buckets"]:
        if isinstance(agg, Histogram):
            term = (datetime.fromtimestamp(bucket["key"] / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                    if field.type == "date" else int(bucket["key"]))
        else:
            term = _term(field, bucket["key"])
        item = {"term": term, "count": bucket["doc_count"]}
        if agg.sub:
            item["facets"] = facets_of(agg.sub, bucket, errors)
        buckets.append(item)
    return buckets


def _term(field, key):
    if field.type == "boolean":
        return bool(key)
    if field.type == "integer":
        return int(key)
    return key
