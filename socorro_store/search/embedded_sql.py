"""The embedded search engine's SQL: its schema, and a query's filters and facets as SQL.

The file holds one table of documents, ``docs``, with one column per field (``c_<field>``):

* string fields other than ``uuid`` are *interned*: the column holds the id of the value in the
  field's dictionary table ``v_<field>(id, value UNIQUE)``.  Documents repeat a few thousand
  values (40 k signatures over a million crashes), so rows stay small, and a ``~ ^ $ @`` or a
  negated condition is evaluated once per distinct value instead of once per crash;
* a ``text`` field's dictionary values also have their tokens (:func:`~.fields.analyze`, exactly)
  in ``k_<field>(token, vid)``, so a no-operator match is an index lookup.  Not FTS5: its
  ``unicode61`` tokenizer folds case and diacritics and splits on other characters than
  ``analyze`` does, so it would not give the contract's tokens;
* a date is microseconds since the epoch (``c_<field>``), with the document's string kept in
  ``t_<field>`` only when it is not the canonical form that :func:`canonical_date` rebuilds;
* integers are integers, booleans 0/1.

Dictionary values are never deleted (a value nobody holds any more costs its row only), so an id
once given means that value for good; a writer may cache them.

A query runs in a read transaction: the ids of the matching documents go into a temporary table
``m`` once (the filters, some of them Python functions, are evaluated once), then the total, the
page of hits and every facet read the documents ``WHERE d.id IN temp.m`` (a join written as a
join lets SQLite build a Bloom filter over all of ``docs`` first: 5x slower at a million).  Facets are SQL ``GROUP BY`` s; a
facet's sub-aggregations are one more ``GROUP BY`` over (parent keys, own key) each, not one query
per term.
"""

import hashlib
import inspect
import json
import re
from datetime import datetime, timedelta, timezone

from ..errors import SearchParameterError
from . import embedded_regex
from .contract import Cardinality, Histogram, Terms, facet_key
from .fields import FIELDS, analyze

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1

#: (field, date) indexes: the fields Super Search filters on most, each beside the date range
#: every query has.  Each costs about 15-20 bytes a document.
INDEXED_FIELDS = ("signature", "product", "version", "platform")


def col(name):
    return "c_" + name


def interned(field):
    return field.is_string and field.name != "uuid"


def schema_sql(fields=None):
    """The statements creating every table and index (idempotent)."""
    fields = list((fields or FIELDS).values())
    columns = []
    for field in fields:
        if field.name == "uuid":
            continue
        columns.append(f"{col(field.name)} INTEGER")
        if field.type == "date":
            columns.append(f"t_{field.name} TEXT")
    statements = [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, "
        + ", ".join(columns) + ")",
        "CREATE INDEX IF NOT EXISTS ix_date ON docs (c_date)",
    ]
    statements += [f"CREATE INDEX IF NOT EXISTS ix_{name} ON docs ({col(name)}, c_date)" for name in INDEXED_FIELDS]
    statements += dictionary_sql(fields)
    return statements


def dictionary_sql(fields):
    statements = []
    for field in fields:
        if interned(field):
            statements.append(f"CREATE TABLE IF NOT EXISTS v_{field.name} "
                              "(id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE)")
        if field.type == "text":
            statements.append(f"CREATE TABLE IF NOT EXISTS k_{field.name} (token TEXT NOT NULL, "
                              "vid INTEGER NOT NULL, PRIMARY KEY (token, vid)) WITHOUT ROWID")
    return statements


#: strings whose tokens change when :func:`~.fields.analyze` changes in any way known to matter
#: (case mapping, what a letter or digit is, separators)
_ANALYZER_PROBE = ("OOM | small js::RunScript_x İ ΣΑΣ ß Ǆ ½ ² ٣ 𝔘 e\u0301 ﬁ ＡＢ x-y.z@w "
                   "\u00a0a\u2028b 0x7ff8 Ⅻ ǅ ΐ ᾼ")


def analyzer_fingerprint():
    """What the token tables were built with: :func:`~.fields.analyze`'s tokens of a probe and,
    where available, its source.  Tokens are computed once per dictionary value, so a changed
    analyzer means rebuilding them (:func:`rebuild_tokens`)."""
    try:
        source = inspect.getsource(analyze)
    except (OSError, TypeError):
        source = ""
    text = json.dumps(analyze(_ANALYZER_PROBE)) + source
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def rebuild_tokens(conn, fields=None):
    """Recompute every text field's token table from its dictionary (inside a write transaction)."""
    for field in (fields or FIELDS).values():
        if field.type != "text":
            continue
        conn.execute(f"DELETE FROM k_{field.name}")
        rows = conn.execute(f"SELECT id, value FROM v_{field.name}").fetchall()
        conn.executemany(f"INSERT OR IGNORE INTO k_{field.name} (token, vid) VALUES (?, ?)",
                         [(token, vid) for vid, value in rows for token in set(analyze(value))])


def micros(when):
    """Microseconds since the epoch of an aware datetime (naive ones are UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (when - EPOCH) // timedelta(microseconds=1)


def canonical_date(us):
    """The string :func:`~.fields.document_of` gives for that instant."""
    return (EPOCH + timedelta(microseconds=us)).isoformat()


def bucket_term(us):
    return (EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Budget(Exception):
    """Raised inside a SQL function when the query's time budget is spent."""


class Context:
    """One query's Python predicates, called from SQL as ``spred(key, value)``."""

    def __init__(self, deadline_check):
        self.predicates = []
        self.check = deadline_check
        self.calls = 0
        #: (field, compiled regex, set to fill with the values it matches): see resolve_regexes
        self.regexes = []

    def add(self, predicate):
        self.predicates.append(predicate)
        return len(self.predicates) - 1

    def call(self, key, value):
        self.calls += 1
        if self.calls & 63 == 0 and self.check():
            raise Budget()
        return 1 if value is not None and self.predicates[key](value) else 0


# --- filters ---------------------------------------------------------------------------------

def where_sql(filters, ctx):
    """``(sql, params)``: the conjunction of ``filters`` over ``docs d``."""
    parts, params = [], []
    for field_filter in filters:
        field = FIELDS.get(field_filter.field)
        if field is None:
            raise SearchParameterError(field_filter.field, "no such field")
        sql, more = _field_sql(field, field_filter.conditions, ctx)
        parts.append(f"({sql})")
        params += more
    return (" AND ".join(parts) or "1"), params


def _field_sql(field, conditions, ctx):
    column = "d.uuid" if field.name == "uuid" else f"d.{col(field.name)}"
    ranges, others, params = [], [], []
    for cond in conditions:
        if cond.field != field.name:
            raise SearchParameterError(field.name, f"a condition on {cond.field} filed under {field.name}")
        if cond.is_range:
            if not field.is_range:
                raise SearchParameterError(field.name, f"{cond.operator} applies to numbers and dates only")
            sql, more = _range_sql(field, column, cond)
            ranges.append(sql)
            params += more
    rest = [c for c in conditions if not c.is_range]
    if rest:
        sql, more = (_string_others if field.is_string else _scalar_others)(field, column, rest, ctx)
        others.append(sql)
        params += more
    return " AND ".join(ranges + others), params


def _range_sql(field, column, cond):
    value = micros(cond.value) if field.type == "date" else cond.value
    if field.type == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        raise SearchParameterError(field.name, f"{cond.operator} takes a whole number")
    if value > INT64_MAX or value < INT64_MIN:
        # Beyond every stored value: the comparison is the same for every value held.
        above = value > INT64_MAX
        constant = "1" if (cond.operator in ("<", "<=")) == above else "0"
        sql, params = f"({column} IS NOT NULL AND {constant})", []
    else:
        sql, params = f"({column} IS NOT NULL AND {column} {cond.operator} ?)", [value]
    if cond.negated:
        sql = f"NOT {sql}"
    return sql, params


def _missing_matches(conditions):
    """Whether a crash missing the field matches at least one of these (non-range) conditions."""
    return any((c.operator == "__null__") != c.negated for c in conditions)


def _scalar_others(field, column, conditions, ctx):
    """The OR of integer / boolean / date conditions other than ranges."""
    pieces, params, equal, not_equal = [], [], set(), set()
    for cond in conditions:
        op = cond.operator
        if op == "__null__":
            if cond.negated:
                pieces.append(f"{column} IS NOT NULL")
            continue
        if op == "__true__":
            if field.type != "boolean":
                raise SearchParameterError(field.name, "__true__ applies to booleans only")
            value = 1
        elif op in ("match", "="):
            value = _scalar_value(field, cond.value)
        else:
            raise SearchParameterError(field.name, f"{op} does not apply to a {field.type} field")
        (not_equal if cond.negated else equal).add(value)
    equal.discard(None)  # a value no document can hold matches nothing
    if equal:
        pieces.append(f"{column} IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(equal)))
    if not_equal:
        if len(not_equal) > 1 or None in not_equal:
            pieces.append(f"{column} IS NOT NULL")  # every held value differs from one of them
        else:
            pieces.append(f"{column} != ?")
            params.append(next(iter(not_equal)))
    if _missing_matches(conditions):
        pieces.append(f"{column} IS NULL")
    return "(" + (" OR ".join(pieces) or "0") + ")", params


def _scalar_value(field, value):
    if field.type == "date":
        return micros(value) if isinstance(value, datetime) else _bad(field, value)
    if field.type == "boolean":
        return int(value) if isinstance(value, bool) else _bad(field, value)
    if isinstance(value, bool) or not isinstance(value, int):
        _bad(field, value)
    return value if INT64_MIN <= value <= INT64_MAX else None


def _bad(field, value):
    raise SearchParameterError(field.name, f"{value!r} is not a {field.type} value")


def _string_others(field, column, conditions, ctx):
    """The OR of a string field's conditions: equality and token matches through the indexes,
    everything else (``~ ^ $ @`` and negations) as one Python predicate per distinct value."""
    pieces, params, equal, tokens, python = [], [], set(), set(), []
    for cond in conditions:
        op = cond.operator
        if op == "__null__":
            if cond.negated:
                pieces.append(f"{column} IS NOT NULL")
            continue
        if op == "__true__":
            raise SearchParameterError(field.name, "__true__ applies to booleans only")
        if not isinstance(cond.value, str):
            _bad(field, cond.value)
        test = _string_test(field, cond, ctx)
        if cond.negated:
            python.append(lambda v, test=test: not test(v))
        elif op == "match" and field.type == "text":
            tokens.update(analyze(cond.value))
        elif op in ("match", "=") and _plain(cond.value):
            equal.add(cond.value)
        else:
            python.append(test)
    if equal:
        pieces.append(_values_in(field, column, "{v} IN (SELECT value FROM json_each(?))"))
        params.append(json.dumps(sorted(equal)))
    if tokens:
        pieces.append(f"{column} IN (SELECT vid FROM k_{field.name} "
                      "WHERE token IN (SELECT value FROM json_each(?)))")
        params.append(json.dumps(sorted(tokens)))
    if python:
        key = ctx.add(python[0] if len(python) == 1 else lambda v: any(test(v) for test in python))
        pieces.append(_values_in(field, column, f"spred({key}, {{v}})"))
    if _missing_matches(conditions):
        pieces.append(f"{column} IS NULL")
    return "(" + (" OR ".join(pieces) or "0") + ")", params


def _plain(text):
    """Whether SQLite's JSON functions give ``text`` back unchanged: they cut a string at a NUL
    (``"a\\u0000b"`` comes back ``"a"``, which would then match ``"a"``), and a lone surrogate
    cannot be encoded.  Other strings go through the Python predicate."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _values_in(field, column, predicate):
    """``column`` holds a value satisfying ``predicate`` (SQL over the value ``{v}``)."""
    if field.name == "uuid":
        return "(" + predicate.format(v="d.uuid") + ")"
    return f"{column} IN (SELECT id FROM v_{field.name} WHERE {predicate.format(v='value')})"


def _string_test(field, cond, ctx):
    """A Python test of one string value against ``cond`` (not negated).  An ``@`` test reads a
    set that :func:`resolve_regexes` fills before the query runs."""
    op, value = cond.operator, cond.value
    if op == "match" and field.type == "text":
        wanted = set(analyze(value))
        return lambda v: not wanted.isdisjoint(analyze(v))
    if op in ("match", "="):
        return lambda v: v == value
    if op == "~":
        return lambda v: value in v
    if op == "^":
        return lambda v: v.startswith(value)
    if op == "$":
        return lambda v: v.endswith(value)
    if op == "@":
        try:
            regex = re.compile(cond.pattern if cond.pattern is not None else value, re.DOTALL)
        except (re.error, RecursionError, OverflowError) as exc:
            raise SearchParameterError(field.name, f"bad regular expression: {exc}") from None
        matched = set()
        ctx.regexes.append((field, regex, matched))
        return matched.__contains__
    raise SearchParameterError(field.name, f"{op} does not apply to a {field.type} field")


def resolve_regexes(conn, ctx, deadline):
    """Apply each ``@`` pattern of the query to its field's distinct values (in a child process
    that the deadline kills: :mod:`.embedded_regex`); call inside the query's read transaction,
    so every value a document holds is seen."""
    for field, regex, matched in ctx.regexes:
        if field.name == "uuid":
            values = [row[0] for row in conn.execute("SELECT uuid FROM docs")]
        else:
            values = [row[0] for row in conn.execute(f"SELECT value FROM v_{field.name}")]
        try:
            matched.update(values[i] for i in embedded_regex.matching(regex, values, deadline))
        except embedded_regex.Expired:
            raise Budget() from None


# --- facets ----------------------------------------------------------------------------------

class Aggregator:
    """Computes a query's facets over the matched ids in ``temp.m`` (see the module docstring)."""

    def __init__(self, conn, size):
        self.conn, self.size = conn, size

    def run(self, aggs):
        return self._level(_last_wins(aggs), [], [], [()])[()]

    def _level(self, aggs, parents, restrict, parent_keys):
        """``{parent key tuple: {facet key: result}}`` for every tuple of ``parent_keys``."""
        out = {key: {} for key in parent_keys}
        for name, agg in aggs.items():
            field = FIELDS.get(agg.field)
            if field is None:
                raise SearchParameterError(name, "no such field")
            if isinstance(agg, Cardinality):
                found = self._cardinality(field, parents, restrict)
                for key in parent_keys:
                    out[key][name] = {"value": found.get(key, 0)}
                continue
            if isinstance(agg, Histogram):
                own, terms = self._histogram_key(field, agg.interval)
            elif isinstance(agg, Terms):
                own, terms = self._terms_key(field)
            else:
                raise SearchParameterError(name, f"unknown aggregation {agg!r}")
            groups = self._groups(own, parents, restrict)
            chosen = {key: self._choose(groups.get(key, []), terms, isinstance(agg, Terms)) for key in parent_keys}
            sub = {}
            if agg.sub:
                keys = [key + (value,) for key in parent_keys for value, _n in chosen[key]]
                values = sorted({value for key in parent_keys for value, _n in chosen[key]})
                sub = self._level(_last_wins(agg.sub), parents + [own], restrict + [(own, values)], keys)
            for key in parent_keys:
                buckets = []
                for value, count in chosen[key]:
                    bucket = {"term": terms(value), "count": count}
                    if agg.sub:
                        bucket["facets"] = sub[key + (value,)]
                    buckets.append(bucket)
                out[key][name] = buckets
        return out

    def _scope(self, parents, restrict, own=None):
        where, params = [], []
        if own is not None:
            where.append(f"{own} IS NOT NULL")
        for expr, values in restrict:
            if any(isinstance(value, str) for value in values):
                continue  # uuid terms: only a narrowing, and JSON could not carry every string (_plain)
            where.append(f"{expr} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(values))
        return " AND ".join(where) or "1", params

    def _groups(self, own, parents, restrict):
        where, params = self._scope(parents, restrict, own)
        keys = ", ".join(parents + [own])
        sql = f"SELECT {keys}, count(*) FROM docs d WHERE d.id IN temp.m AND {where} GROUP BY {keys}"
        groups = {}
        for row in self.conn.execute(sql, params):
            groups.setdefault(tuple(row[:-2]), []).append((row[-2], row[-1]))
        return groups

    def _cardinality(self, field, parents, restrict):
        own = "d.uuid" if field.name == "uuid" else f"d.{col(field.name)}"
        where, params = self._scope(parents, restrict)
        select = ", ".join(parents + [f"count(DISTINCT {own})"])
        group = f" GROUP BY {', '.join(parents)}" if parents else ""
        sql = f"SELECT {select} FROM docs d WHERE d.id IN temp.m AND {where}{group}"
        return {tuple(row[:-1]): row[-1] for row in self.conn.execute(sql, params)}

    def _terms_key(self, field):
        if field.name == "uuid":
            return "d.uuid", lambda v: v
        own = f"d.{col(field.name)}"
        if interned(field):
            return own, _Names(self.conn, f"v_{field.name}").__getitem__
        if field.type == "boolean":
            return own, bool
        if field.type == "date":
            return own, canonical_date
        return own, int

    def _histogram_key(self, field, interval):
        if not field.is_range:
            raise SearchParameterError(f"_histogram.{field.name}", "histograms apply to dates and numbers only")
        if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
            raise SearchParameterError(f"_histogram_interval.{field.name}", "the interval must be a positive whole number")
        width = interval * 1_000_000 if field.type == "date" else interval
        column = f"d.{col(field.name)}"
        # A bucket is the floor of value / width (SQL's / and % truncate toward zero), computed
        # as that index, so no step overflows 64 bits; the term is index * interval in Python.
        if width > INT64_MAX:
            own = f"(CASE WHEN {column} < 0 THEN -1 ELSE 0 END)"
        else:
            own = f"({column} / {width} - (CASE WHEN {column} % {width} < 0 THEN 1 ELSE 0 END))"
        if field.type == "date":
            def term(index):
                try:
                    return bucket_term(index * width)
                except OverflowError:
                    raise SearchParameterError(f"_histogram_interval.{field.name}",
                                               "a bucket starts out of the range of dates") from None
            return own, term
        return own, lambda index: index * interval

    def _choose(self, groups, terms, top):
        """A facet's buckets as (key, count): Terms' top ``size`` by count desc then term asc,
        a histogram's buckets by key ascending."""
        if not top:
            return sorted(groups)
        groups = sorted(groups, key=lambda g: -g[1])
        if len(groups) > self.size:
            floor = groups[self.size - 1][1] if self.size else None
            groups = [g for g in groups if floor is not None and g[1] >= floor]
        names = getattr(terms, "__self__", None)
        if isinstance(names, _Names):
            names.load([g[0] for g in groups])
        groups.sort(key=lambda g: (-g[1], terms(g[0])))
        return groups[:self.size]


class _Names(dict):
    """A lazy id -> value map of one dictionary table: only the ids asked for are read."""

    def __init__(self, conn, table):
        super().__init__()
        self.conn, self.table = conn, table

    def __missing__(self, key):
        row = self.conn.execute(f"SELECT value FROM {self.table} WHERE id = ?", (key,)).fetchone()
        self[key] = row[0] if row else None
        return self[key]

    def load(self, ids):
        wanted = [i for i in ids if i not in self]
        for start in range(0, len(wanted), 5000):
            chunk = json.dumps(wanted[start:start + 5000])
            self.update(self.conn.execute(f"SELECT id, value FROM {self.table} "
                                          "WHERE id IN (SELECT value FROM json_each(?))", (chunk,)))


def _last_wins(aggs):
    chosen = {}
    for agg in aggs:
        chosen[facet_key(agg)] = agg
    return chosen
