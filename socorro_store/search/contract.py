"""The search contract: a parsed Super Search query, and what every search engine must answer.

:func:`socorro_store.search.query.parse_search` turns Super Search's parameters into a
:class:`Query`, checked and typed, so an engine never sees a bad parameter.  An engine
(:class:`SearchEngine`) holds one document per crash (:func:`~.fields.document_of`) and answers a
query with Socorro's response shape::

    {"hits": [{column: value or None, ...}, ...], "total": N, "facets": {...}, "errors": []}

The semantics every engine gives, so that every engine gives one answer (the differential test
runs each against a brute-force oracle):

**Matching.** A query's :class:`FieldFilter` s are AND-ed.  Within one field, its range
conditions (``> >= < <=``, negated or not) are AND-ed, and its other conditions are OR-ed; a
crash matches the field when it matches every range condition and, if there are any others, at
least one of them.  One :class:`Condition` on a crash:

* ``match`` (no operator): on a ``text`` field, the value's tokens (:func:`~.fields.analyze`)
  and the crash's share at least one; on any other type, equality (``=``);
* ``=``: equality of the whole value (strings case-sensitive);
* ``~`` / ``^`` / ``$``: the whole string value contains / starts with / ends with the value,
  case-sensitive, the value taken literally (``*`` and ``?`` are not wildcards);
* ``@``: the whole string value matches the regular expression, anchored at both ends.  The
  value is Lucene's regexp syntax; ``Condition.value`` holds it as given and
  ``Condition.pattern`` holds the equivalent Python pattern (:mod:`.regex`);
* ``> >= < <=``: numeric order for integers, time order for dates;
* ``__null__``: the field is missing; ``__true__``: the boolean field is true.

A condition on a missing field is false (except ``__null__``), so a negated one is true there
(``signature=!=A`` finds crashes with no signature too), as Elasticsearch's ``must_not`` does.

**Hits.** The crashes matched, sorted by ``sort`` (missing values last, ascending or
descending), then by ``uuid`` ascending unless ``uuid`` is already a sort key; the page is
``results_offset`` .. ``results_offset + results_number``.  Each hit has every column of
``columns``, None where the crash has no value.  ``total`` is the exact number matched.

**Facets** (``facets``, a dict; each is computed over every crash matched, not the page):

* :class:`Terms` ``field`` -> ``facets[field] = [{"term": value, "count": n}, ...]``: the
  ``facets_size`` most frequent values, by count descending then value ascending; crashes
  missing the field are not counted.  With ``sub`` aggregations, each term also has
  ``"facets": {...}`` holding them computed over that term's crashes.
* :class:`Cardinality` ``field`` -> ``facets["cardinality_" + field] = {"value": n}``: the
  exact number of distinct values (an engine that can only estimate says so in ``errors``).
* :class:`Histogram` ``field`` -> ``facets["histogram_" + field] = [{"term": start, "count":
  n[, "facets": {...}]}, ...]``: buckets of ``interval`` (seconds for dates, units for
  integers) aligned on 0 (the epoch), ascending, empty buckets left out; a date bucket's term
  is its start as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC), an integer bucket's term is its lower bound.
  ``"facets"`` is there only when the histogram has ``sub`` aggregations.

Terms are of the field's type: strings, ints, booleans (false before true).  Strings order by
code point (UTF-8 byte order).
"""

import abc
from dataclasses import dataclass, field as dataclass_field
from datetime import datetime

from .fields import FIELDS

#: operators whose conditions on one field are AND-ed (the others are OR-ed)
RANGE_OPERATORS = (">", ">=", "<", "<=")
#: every operator a condition may carry; ``match`` is "no operator"
OPERATORS = ("match", "=", "~", "^", "$", "@") + RANGE_OPERATORS + ("__null__", "__true__")

#: Socorro's limits
MAX_RESULTS_NUMBER = 1000
MAX_RESULTS_WINDOW = 10_000
MAX_FACETS_SIZE = 10_000
DEFAULT_RESULTS_NUMBER = 100
DEFAULT_FACETS_SIZE = 50


@dataclass(frozen=True)
class Condition:
    """One ``FIELD=[!]OPERATORVALUE`` of a query.

    ``value``: of the field's type: ``str`` for strings (also for ``@``: the Lucene regexp as
    given), ``int`` for integers, an aware UTC :class:`~datetime.datetime` for dates, None for
    ``__null__``/``__true__``.  ``pattern``: for ``@`` only, the Python ``re`` pattern of the
    same language, to be matched with ``re.fullmatch`` (flags: ``re.DOTALL``).
    """

    field: str
    operator: str
    value: object = None
    negated: bool = False
    pattern: str = None

    @property
    def is_range(self):
        return self.operator in RANGE_OPERATORS


@dataclass(frozen=True)
class FieldFilter:
    """Every condition a query puts on one field (see the module docstring for how they combine)."""

    field: str
    conditions: tuple


@dataclass(frozen=True)
class Terms:
    """A terms facet on ``field``, with optional ``sub`` aggregations per term (``_aggs.*``)."""

    field: str
    sub: tuple = ()


@dataclass(frozen=True)
class Cardinality:
    """The number of distinct values of ``field`` (``_cardinality.FIELD``)."""

    field: str


@dataclass(frozen=True)
class Histogram:
    """Buckets of ``field`` (a date or integer field) ``interval`` wide (seconds for dates),
    each with optional ``sub`` aggregations (``_histogram.FIELD=SUB``)."""

    field: str
    interval: int
    sub: tuple = ()


@dataclass(frozen=True)
class Query:
    """A checked Super Search query.

    ``filters``: :class:`FieldFilter` per field, AND-ed; the date range is among them (the parser
    adds the default range).  ``start``/``end``: the date range the filters bound, ``start <=
    date < end`` at the widest (engines may use it to prune; the filters decide).
    ``columns``: the hit columns.  ``sort``: ``(field, descending)`` pairs.
    ``facets``: :class:`Terms` / :class:`Cardinality` / :class:`Histogram` aggregations, each
    under its response key (:func:`facet_key`), in the order asked; a later one with the same
    key replaces an earlier one (``_aggs.signature`` replaces the default ``signature`` facet).
    """

    filters: tuple
    start: datetime
    end: datetime
    columns: tuple
    sort: tuple = ()
    results_number: int = DEFAULT_RESULTS_NUMBER
    results_offset: int = 0
    facets: tuple = ()
    facets_size: int = DEFAULT_FACETS_SIZE
    unredacted: bool = dataclass_field(default=False, compare=False)

    def fields_used(self):
        """Every field the query names anywhere (filters, columns, sort, facets)."""
        names = {f.field for f in self.filters} | set(self.columns) | {name for name, _desc in self.sort}

        def walk(aggs):
            for agg in aggs:
                names.add(agg.field)
                walk(getattr(agg, "sub", ()))

        walk(self.facets)
        return names


def facet_key(agg):
    """The response key of an aggregation: ``field``, ``cardinality_field`` or ``histogram_field``."""
    if isinstance(agg, Cardinality):
        return "cardinality_" + agg.field
    if isinstance(agg, Histogram):
        return "histogram_" + agg.field
    return agg.field


def empty_response():
    return {"hits": [], "total": 0, "facets": {}, "errors": []}


class SearchEngine(abc.ABC):
    """Where search documents are kept and queries answered.  Thread-safe.

    Documents are :func:`~.fields.document_of` dicts, keyed by their ``uuid``: indexing one
    whose ``uuid`` is held replaces it (a reprocessing).  Every method may raise
    :class:`~socorro_store.errors.SearchUnavailable` when the engine cannot be reached.
    """

    #: the engine's URL, credentials left out
    url = None

    @abc.abstractmethod
    def index(self, documents):
        """Add or replace ``documents`` (an iterable of document dicts); durable on return."""

    @abc.abstractmethod
    def delete(self, crash_ids):
        """Remove the documents of ``crash_ids``; ids not held are ignored.  Durable on return."""

    @abc.abstractmethod
    def search(self, query):
        """Answer a :class:`Query` (see the module docstring for the semantics and shape)."""

    @abc.abstractmethod
    def count(self):
        """How many documents the engine holds."""

    def crash_ids(self, start=None, end=None):
        """Iterate the ids of the documents whose ``date`` is in ``[start, end)`` (aware
        datetimes; None: unbounded), in any order: ``search reindex`` removes those whose crash
        is gone."""
        raise NotImplementedError

    def documents(self, crash_ids):
        """``{crash id: document as held}`` for those of ``crash_ids`` the engine holds, each with
        every field it holds a value of (a field without one is left out, as
        :func:`~.fields.document_of` leaves it out): ``search verify`` compares them with the
        crash rows.  Asked :data:`MAX_RESULTS_NUMBER` ids a query, through :meth:`search`, so
        every engine answers it alike."""
        ids = sorted(set(crash_ids))
        out = {}
        for i in range(0, len(ids), MAX_RESULTS_NUMBER):
            page = ids[i:i + MAX_RESULTS_NUMBER]
            query = Query(filters=(FieldFilter("uuid", tuple(Condition("uuid", "=", cid) for cid in page)),),
                          start=None, end=None, columns=tuple(FIELDS), results_number=len(page), facets_size=0,
                          unredacted=True)
            for hit in self.search(query)["hits"]:
                out[hit["uuid"]] = {name: value for name, value in hit.items() if value is not None}
        return out

    def stats(self):
        """``{"documents": N, "bytes": B}``: what the index holds and its size on disk (None
        where unknown)."""
        return {"documents": self.count(), "bytes": None}

    def close(self):
        """Release the engine's resources."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
