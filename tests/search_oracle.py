"""A brute-force Super Search engine: contract.py's semantics, in plain Python, over a list of documents.

``answer(documents, query)`` is what every :class:`~socorro_store.search.contract.SearchEngine`
must answer for a :class:`~socorro_store.search.contract.Query` over the same documents
(:func:`~socorro_store.search.fields.document_of` dicts).  It is written to be read against the
contract module's docstring, one rule per function, not to be fast: every query looks at every
document, and every facet regroups its crashes from scratch.

Choices where the contract leaves room (the differential test's report names them):

* ``facets_size`` bounds every terms facet, sub-aggregations included (Socorro passes the same
  size to its second-level aggregations);
* a terms facet with no ``sub`` has no ``"facets"`` key in its terms (as for histograms);
* a hit's date is the document's own string (``document_of``'s UTC ISO form);
* a terms facet on a date field is not defined by the contract (terms are "strings, ints,
  booleans"): the oracle refuses it rather than guess (the parser refuses ``_facets=date`` too);
* an integer bucket's term is exact, even where it falls outside 64 bits (``-2**63`` by 60 is in
  the bucket starting at ``-9223372036854775860``);
* ``errors`` is always empty: the oracle never estimates.
"""

import re
from datetime import datetime, timedelta, timezone

from socorro_store.search.contract import Cardinality, Histogram, Terms, facet_key
from socorro_store.search.fields import FIELDS, analyze

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def answer(documents, query):
    """The response every engine must give to ``query`` over ``documents`` (a list of dicts)."""
    matched = [doc for doc in documents if matches(query, doc)]
    ordered = sort_documents(matched, query.sort)
    page = ordered[query.results_offset:query.results_offset + query.results_number]
    return {
        "hits": [{column: doc.get(column) for column in query.columns} for doc in page],
        "total": len(matched),
        "facets": aggregate(query.facets, matched, query.facets_size),
        "errors": [],
    }


# -- matching ---------------------------------------------------------------------------------

def parse_date(text):
    """A document's date string as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def typed_value(doc, field):
    """The document's value of ``field`` in a form that compares by the field's order (dates
    parsed), or None when the document has no value."""
    value = doc.get(field)
    if value is None:
        return None
    if FIELDS[field].type == "date":
        return parse_date(value)
    return value


def matches(query, doc):
    """Every field filter holds (filters are AND-ed)."""
    return all(field_matches(field_filter, doc) for field_filter in query.filters)


def field_matches(field_filter, doc):
    """Every range condition holds and, if there are other conditions, at least one of them."""
    for condition in field_filter.conditions:
        assert condition.field == field_filter.field, (condition, field_filter)
    ranges = [c for c in field_filter.conditions if c.is_range]
    others = [c for c in field_filter.conditions if not c.is_range]
    if not all(condition_holds(c, doc) for c in ranges):
        return False
    return not others or any(condition_holds(c, doc) for c in others)


def condition_holds(condition, doc):
    """One condition, negation applied: on a missing field only ``__null__`` is true."""
    value = typed_value(doc, condition.field)
    if condition.operator == "__null__":
        result = value is None
    elif value is None:
        result = False
    else:
        result = operator_holds(condition, value)
    return result != condition.negated


def operator_holds(condition, value):
    """The operator on a present value (negation not applied)."""
    op, wanted = condition.operator, condition.value
    field_type = FIELDS[condition.field].type
    if op == "match":
        if field_type == "text":
            return bool(set(analyze(wanted)) & set(analyze(value)))
        return value == wanted
    if op == "=":
        return value == wanted
    if op == "~":
        return wanted in value
    if op == "^":
        return value.startswith(wanted)
    if op == "$":
        return value.endswith(wanted)
    if op == "@":
        return re.fullmatch(condition.pattern, value, re.DOTALL) is not None
    if op == ">":
        return value > wanted
    if op == ">=":
        return value >= wanted
    if op == "<":
        return value < wanted
    if op == "<=":
        return value <= wanted
    if op == "__true__":
        return value is True
    raise ValueError(f"unknown operator {op!r}")


# -- hits -------------------------------------------------------------------------------------

def sort_documents(docs, sort):
    """``docs`` by the sort keys (missing values last in both directions), then ``uuid``
    ascending unless ``uuid`` is a sort key.

    Stable sorts from the least significant key to the most significant one: each pass keeps
    the order of the previous passes among equal values (``reverse=True`` keeps it too).
    """
    keys = list(sort)
    if "uuid" not in [name for name, _descending in keys]:
        keys.append(("uuid", False))
    result = list(docs)
    for name, descending in reversed(keys):
        present = [doc for doc in result if typed_value(doc, name) is not None]
        missing = [doc for doc in result if typed_value(doc, name) is None]
        present.sort(key=lambda doc: typed_value(doc, name), reverse=descending)
        result = present + missing
    return result


# -- facets -----------------------------------------------------------------------------------

def aggregate(aggs, docs, size):
    """``{facet_key(agg): result}`` for each aggregation in order; a later one with the same key
    replaces the earlier one."""
    facets = {}
    for agg in aggs:
        facets[facet_key(agg)] = aggregation(agg, docs, size)
    return facets


def aggregation(agg, docs, size):
    if isinstance(agg, Cardinality):
        return {"value": len({typed_value(doc, agg.field) for doc in docs} - {None})}
    if isinstance(agg, Histogram):
        return histogram(agg, docs, size)
    if isinstance(agg, Terms):
        return terms(agg, docs, size)
    raise TypeError(f"not an aggregation: {agg!r}")


def terms(agg, docs, size):
    """The ``size`` most frequent values, count descending then value ascending (False before
    True, strings by code point); crashes missing the field are not counted."""
    if FIELDS[agg.field].type == "date":
        raise ValueError("the contract does not define a terms facet on a date field")
    groups = {}
    for doc in docs:
        value = doc.get(agg.field)
        if value is not None:
            groups.setdefault(value, []).append(doc)
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))[:size]
    return [bucket(value, members, agg.sub, size) for value, members in ranked]


def histogram(agg, docs, size):
    """Buckets ``interval`` wide aligned on 0 (the epoch for dates), ascending, empty ones left
    out; a date bucket's term is its start as ``YYYY-MM-DDTHH:MM:SSZ``."""
    field_type = FIELDS[agg.field].type
    groups = {}
    for doc in docs:
        value = typed_value(doc, agg.field)
        if value is None:
            continue
        if field_type == "date":
            start = EPOCH + ((value - EPOCH) // timedelta(seconds=agg.interval)) * timedelta(seconds=agg.interval)
        elif field_type == "integer":
            start = (value // agg.interval) * agg.interval
        else:
            raise ValueError(f"no histogram of a {field_type} field")
        groups.setdefault(start, []).append(doc)
    result = []
    for start in sorted(groups):
        term = start.strftime("%Y-%m-%dT%H:%M:%SZ") if field_type == "date" else start
        result.append(bucket(term, groups[start], agg.sub, size))
    return result


def bucket(term, members, sub, size):
    """One term or histogram bucket; ``"facets"`` only when there are sub-aggregations."""
    result = {"term": term, "count": len(members)}
    if sub:
        result["facets"] = aggregate(sub, members, size)
    return result
