"""Super Search in the web view: the API's answers and the data of the ``/search/`` page.

The API (``/api/SuperSearch/``) passes the query's parameters to
:meth:`~socorro_store.crashstore.store.CrashStore.super_search` untouched and answers its dict;
its errors are answers too, never a 500 (:func:`api`): a refused parameter 400
``{"error", "parameter"}``, a protected field 403 ``{"error", "field"}``, no search configured 501,
the engine unreachable 503.

The page's URL holds the same parameters as the API (``FIELD=OPVALUE`` repeated, ``_columns``,
``_facets``, ``_sort``, ``_results_offset``, …), so a page and its JSON twin share one query and
a URL can be shared.  Its form cannot write ``FIELD=OPVALUE`` itself without a script (the site
runs none), so it submits each filter row as ``f`` (field), ``op`` (operator) and ``v`` (value),
and the range as ``date_from`` / ``date_to``; :func:`canonical` joins them into the API's
parameters and the page redirects there.  The rows shown are read back from the URL's filters,
plus one empty row to add another.

Every function here takes the query's parameters as ``(name, value)`` pairs in URL order and
builds no URL paths but ``/search/`` query strings; the templates link the rest.
"""

import threading
import time
from urllib.parse import urlencode

from ..errors import (ProtectedField, SearchNotConfigured, SearchParameterError, SearchUnavailable,
                      SocorroStoreError)
from ..search import contract
from ..search.fields import DEFAULT_COLUMNS, FIELDS
from ..search.query import parse_search

#: the parameters of the page's form only (joined into the API's by :func:`canonical`)
FORM_PARAMETERS = ("f", "op", "v", "date_from", "date_to")
#: the operators the form offers, with their words; the prefix the value gets in ``FIELD=OPVALUE``
OPERATOR_CHOICES = (
    ("", "matches"), ("!", "does not match"), ("=", "is"), ("!=", "is not"),
    ("~", "contains"), ("!~", "does not contain"), ("^", "starts with"), ("!^", "does not start with"),
    ("$", "ends with"), ("!$", "does not end with"), ("@", "matches regex"), ("!@", "does not match regex"),
    (">", ">"), (">=", ">="), ("<", "<"), ("<=", "<="),
    ("!__null__", "exists"), ("__null__", "is missing"), ("__true__", "is true"), ("!__true__", "is not true"))
#: operators that take no value (the row's value is ignored)
_VALUELESS = ("__null__", "__true__")
# longest first: ">=" before ">"
_PREFIXES = (">=", "<=", ">", "<", "=", "~", "^", "$", "@")
#: seconds the footer's search figures are reused for (:class:`StatusCache`)
STATUS_SECONDS = 10
#: filter rows the form shows at most (the others are kept as hidden fields)
MAX_FORM_ROWS = 50
#: facet terms link the search narrowed to them only under this length of query string (each
#: link repeats the query: a query of 1,000 values would make every link ~20 KB)
MAX_NARROWING_QUERY = 2000
NOT_CONFIGURED = "This store has no search configured (give it a search URL: --search-url or SOCORRO_SEARCH_URL)."


def error_answer(exc):
    """``(JSON dict, status)`` of a search error (see the module docstring); None for others."""
    if isinstance(exc, SearchParameterError):
        return {"error": str(exc), "parameter": exc.parameter}, 400
    if isinstance(exc, ProtectedField):
        answer = {"error": str(exc), "field": exc.field}
        if exc.parameter:
            answer["parameter"] = exc.parameter
        return answer, 403
    if isinstance(exc, SearchNotConfigured):
        # 501, not 503: nothing will change by retrying; the operator has to configure it
        return {"error": " ".join(str(exc).split()) or NOT_CONFIGURED}, 501
    if isinstance(exc, SearchUnavailable):
        return {"error": str(exc)}, 503
    return None


def api(store, params, unredacted, now):
    """``(JSON dict, status)`` of ``/api/SuperSearch/``: the store's answer, or its error's."""
    try:
        return store.super_search(params, unredacted=unredacted, now=now), 200
    except (SearchParameterError, ProtectedField, SearchNotConfigured, SearchUnavailable) as exc:
        return error_answer(exc)


def fields_api(store, unredacted):
    """``(JSON, status)`` of ``/api/SuperSearchFields/``: the fields a caller may use."""
    try:
        return store.search_fields(unredacted=unredacted), 200
    except (SearchNotConfigured, SearchUnavailable) as exc:
        return error_answer(exc)


def search_status(store):
    """The search figures the pages show (:meth:`~socorro_store.crashstore.store.CrashStore.search_status`),
    or None when search is not configured or its figures cannot be read: a page never fails on them."""
    try:
        found = store.search_status()
    except SocorroStoreError:
        return None
    return found if found.get("configured") else None


def derivation_status(store):
    """The deriver's figures the home page shows (records waiting, lag), or None on a store
    whose counters are incremented live, or when they cannot be read."""
    try:
        found = store.derivation_status()
    except SocorroStoreError:
        return None
    return found if found.get("cut_over") else None


class StatusCache:
    """:func:`search_status` (or ``read``: :func:`derivation_status`), read at most once every
    ``seconds`` for all requests: the figures count the change records waiting (a scan of up to
    10,000 rows) and the index's documents, too dear for every view of the home page."""

    def __init__(self, store, seconds=STATUS_SECONDS, clock=time.monotonic, read=None):
        self.store, self.seconds, self.clock = store, seconds, clock
        self.read = read or search_status
        self._lock = threading.Lock()
        self._read_at = self._value = None

    def get(self):
        with self._lock:  # one reader refreshes; the others wait for its figures
            if self._read_at is None or self.clock() - self._read_at >= self.seconds:
                self._value, self._read_at = self.read(self.store), self.clock()
            return self._value


def split_value(raw):
    """``(operator, value)`` of one ``FIELD=OPVALUE`` value, as the form shows it: the operator is
    the value's leading ``!`` and operator characters; ``operator + value == raw`` always."""
    negated = "!" if raw.startswith("!") else ""
    rest = raw[len(negated):]
    if rest in _VALUELESS:
        return negated + rest, ""
    for prefix in _PREFIXES:
        if rest.startswith(prefix):
            return negated + prefix, rest[len(prefix):]
    return negated, rest


def is_form_submission(pairs):
    return any(name in FORM_PARAMETERS for name, _value in pairs)


def canonical(pairs):
    """The API's parameters of a form submission: each row's ``f``/``op``/``v`` joined as
    ``FIELD=OPVALUE`` (a row with no field and no value is skipped, as is a row whose operator
    needs a value and has none), ``date_from``/``date_to`` as ``date=>=FROM`` / ``date=<TO``,
    then every other parameter but ``_results_offset`` (a new search starts at its first page).

    A row with a value and no field is :class:`SearchParameterError` (``f``).
    """
    fields = [value for name, value in pairs if name == "f"]
    operators = [value for name, value in pairs if name == "op"]
    values = [value for name, value in pairs if name == "v"]
    if not len(fields) == len(operators) == len(values):
        raise SearchParameterError("f", "each filter row needs f (field), op (operator) and v (value)")
    out = []
    for field, operator, value in zip(fields, operators, values):
        field, value = field.strip(), value.strip()
        valueless = operator.lstrip("!") in _VALUELESS
        if not field:
            if value:
                raise SearchParameterError("f", f"choose a field for the value {value!r}")
            continue
        if valueless:
            out.append((field, operator))
        elif value:
            out.append((field, operator + value))
    for name, prefix in (("date_from", ">="), ("date_to", "<")):
        for value in (v.strip() for n, v in pairs if n == name):
            if value:
                out.append(("date", prefix + value))
    out.extend((name, value) for name, value in pairs
               if name not in FORM_PARAMETERS and name != "_results_offset" and value != "")
    return out


def query_string(pairs, **replace):
    """``pairs`` url-encoded, each parameter of ``replace`` given its one new value (None: removed)."""
    kept = [(name, value) for name, value in pairs if name not in replace]
    kept.extend((name, str(value)) for name, value in replace.items() if value is not None)
    return urlencode(kept)


def _number(pairs, name, default):
    """A control's whole number, once the search took it (so it is well formed), else ``default``."""
    values = [value for key, value in pairs if key == name]
    return int(values[-1]) if values and values[-1].strip().isdigit() else default


def _form(pairs, unredacted, query):
    """The form's state: filter rows, date range, chosen columns and facets, hidden controls."""
    dates = [value for name, value in pairs if name == "date"]
    date_from = date_to = ""
    rows, filters = [], []
    if len(dates) <= 2 and all(split_value(d)[0] in (">=", "<") for d in dates) \
            and len({split_value(d)[0] for d in dates}) == len(dates):
        for value in dates:
            operator, when = split_value(value)
            date_from, date_to = (when, date_to) if operator == ">=" else (date_from, when)
    else:  # any other date filter is shown as rows, as written
        filters.extend(("date", value) for value in dates)
    if not dates and query is not None:  # the default range, shown so that a submission keeps it
        date_from, date_to = _iso(query.start), _iso(query.end)
    filters.extend((name, value) for name, value in pairs
                   if not (name == "date" or name.startswith("_") or name in FORM_PARAMETERS))
    # a query may hold 1,000 filter values (10,000 refused): rows past the first ones ride along
    # as hidden fields, so that the page stays small and a submission keeps them
    shown = MAX_FORM_ROWS
    for name, value in filters[:shown]:
        operator, value = split_value(value)
        rows.append({"field": name, "op": operator, "value": value})
    rows.append({"field": "", "op": "", "value": ""})
    columns = [value for name, value in pairs if name == "_columns"] or list(DEFAULT_COLUMNS)
    facets = [value for name, value in pairs if name == "_facets"] or ["signature"]
    hidden = [(name, value) for name, value in pairs
              if name.startswith("_") and name not in ("_columns", "_facets", "_results_offset")]
    return {"fields": [name for name, field in FIELDS.items() if unredacted or field.public],
            "operators": OPERATOR_CHOICES, "rows": rows, "date_from": date_from, "date_to": date_to,
            "columns": columns, "facets": facets, "hidden": hidden + filters[shown:],
            "rows_not_shown": len(filters[shown:])}


def _iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S") if moment.tzinfo is None or moment.utcoffset().total_seconds() == 0 \
        else moment.isoformat()


def _tabs(pairs, facets, total):
    """The facet tabs, signature first, then the others in the answer's order."""
    keys = sorted(facets, key=lambda key: key != "signature")
    base = query_string(pairs)
    tabs = []
    for key in keys:
        value = facets[key]
        if isinstance(value, dict):  # cardinality_FIELD: {"value": n}
            tabs.append({"key": key, "kind": "cardinality", "value": value.get("value")})
            continue
        histogram = key.startswith("histogram_")
        field = key[len("histogram_"):] if histogram else key
        rows = []
        for rank, bucket in enumerate(value, 1):
            rows.append({"rank": rank, "term": bucket["term"], "count": bucket["count"],
                         "share": bucket["count"] * 100 / total if total else 0.0,
                         # a term of another field: the same search narrowed to it
                         "narrow": None if histogram or field == "signature" or field not in FIELDS
                         or len(base) > MAX_NARROWING_QUERY else
                         query_string(pairs + [(field, _narrowing(FIELDS[field], bucket["term"]))],
                                      _results_offset=None),
                         "sub": [{"key": sub_key, "terms": sub if isinstance(sub, list) else None,
                                  "value": sub.get("value") if isinstance(sub, dict) else None}
                                 for sub_key, sub in (bucket.get("facets") or {}).items()]})
        tabs.append({"key": key, "kind": "histogram" if histogram else "terms", "field": field, "rows": rows})
    return tabs


def _narrowing(field, term):
    """The ``FIELD=`` value finding a facet term's crashes."""
    if field.type == "boolean":
        return "__true__" if term else "!__true__"
    return "=" + str(term)


def refused(pairs, unredacted, exc):
    """``(data, status)`` of a page whose form submission :func:`canonical` refused."""
    answer, status = error_answer(exc)
    return {"error": answer["error"], "parameter": answer.get("parameter"), "not_configured": None,
            "result": None, "search_status": None, "form": _form(pairs, unredacted, None)}, status


def page(store, pairs, unredacted, now, figures=None):
    """``(data, status)`` of ``/search/``: the form's state and, unless the search was refused,
    the answer laid out (facet tabs, the hit columns, paging links' query strings).  ``figures``:
    a callable giving the footer's search figures (default :func:`search_status`)."""
    data = {"error": None, "parameter": None, "not_configured": None, "result": None,
            "api_query": query_string(pairs), "search_status": None}
    status = 200
    try:
        data["result"] = store.super_search(pairs, unredacted=unredacted, now=now)
    except (SearchParameterError, ProtectedField, SearchNotConfigured, SearchUnavailable) as exc:
        answer, status = error_answer(exc)
        if isinstance(exc, SearchNotConfigured):
            data["not_configured"] = answer["error"]
        else:
            data["error"] = answer["error"]
            data["parameter"] = answer.get("parameter") or answer.get("field")
    query = None
    if status != 400 and status != 403:
        try:  # the parser's reading of the query (its defaults): the form and paging show it
            query = parse_search(pairs, now=now, unredacted=unredacted)
        except SocorroStoreError:
            query = None
    data["form"] = _form(pairs, unredacted, query)
    result = data["result"]
    if result is not None:
        total = result["total"]
        number = query.results_number if query else _number(pairs, "_results_number", contract.DEFAULT_RESULTS_NUMBER)
        offset = query.results_offset if query else _number(pairs, "_results_offset", 0)
        columns = (list(query.columns) if query else
                   list(result["hits"][0]) if result["hits"] else data["form"]["columns"])
        after = offset + number
        data.update({
            "total": total, "columns": columns, "hits": result["hits"], "offset": offset, "number": number,
            "shown_to": min(after, total), "tabs": _tabs(pairs, result.get("facets") or {}, total),
            "previous": query_string(pairs, _results_offset=max(offset - number, 0) or None)
            if number and offset > 0 else None,
            "next": query_string(pairs, _results_offset=after)
            if number and after < total and after + number <= contract.MAX_RESULTS_WINDOW else None,
            "beyond_window": number and after < total and after + number > contract.MAX_RESULTS_WINDOW,
            "errors": result.get("errors") or []})
    if data["not_configured"] is None:
        data["search_status"] = figures() if figures is not None else search_status(store)
    return data, status
