"""The Super Search parameter parser (search/query.py) and the Lucene regexp translation (search/regex.py)."""

import random
import re
import warnings
from datetime import datetime, timedelta, timezone

import pytest

from socorro_store.errors import ProtectedField, SearchParameterError
from socorro_store.search.contract import Cardinality, Condition, Histogram, Terms
from socorro_store.search.fields import DEFAULT_COLUMNS, FIELDS
from socorro_store.search.query import fields_document, parse_search
from socorro_store.search.regex import RegexError, translate

NOW = datetime(2026, 11, 27, 12, 30, tzinfo=timezone.utc)
UTC = timezone.utc
PROTECTED = "email"
PROTECTED_INTEGER = "hang_type"


def parse(params, **kwargs):
    kwargs.setdefault("now", NOW)
    return parse_search(params, **kwargs)


def conditions(query, field):
    return next(f.conditions for f in query.filters if f.field == field)


def refused(params, parameter, **kwargs):
    with pytest.raises(SearchParameterError) as info:
        parse(params, **kwargs)
    assert info.value.parameter == parameter, info.value
    return str(info.value)


def test_the_fields_the_tests_rely_on():
    assert not FIELDS[PROTECTED].public and FIELDS[PROTECTED].type == "keyword"
    assert not FIELDS[PROTECTED_INTEGER].public and FIELDS[PROTECTED_INTEGER].type == "integer"
    assert all(FIELDS[name].public for name in DEFAULT_COLUMNS + ("signature",))


# --- filters: operators per type -------------------------------------------------------------

@pytest.mark.parametrize("value, operator, parsed", [
    ("Firefox", "match", "Firefox"),
    ("=Firefox", "=", "Firefox"),
    ("~fox", "~", "fox"),
    ("^Fire", "^", "Fire"),
    ("$fox", "$", "fox"),
    ("__null__", "__null__", None),
    ("=>x", "=", ">x"),
    ("==x", "=", "=x"),
    ("~*", "~", "*"),
])
def test_string_operators(value, operator, parsed):
    for field in ("product", "signature"):
        (c,) = conditions(parse({field: value}), field)
        assert (c.operator, c.value, c.negated) == (operator, parsed, False)


def test_regex_operator_keeps_the_value_and_its_python_pattern():
    (c,) = conditions(parse({"signature": "@js::.*"}), "signature")
    assert (c.operator, c.value, c.pattern) == ("@", "js::.*", "js::.*")


@pytest.mark.parametrize("value, operator, parsed", [
    ("5", "match", 5), ("=5", "=", 5), (">5", ">", 5), (">=-5", ">=", -5), ("<5", "<", 5),
    ("<=20261120093000", "<=", 20261120093000), ("__null__", "__null__", None),
])
def test_integer_operators(value, operator, parsed):
    (c,) = conditions(parse({"build_id": value}), "build_id")
    assert (c.operator, c.value) == (operator, parsed)
    assert type(c.value) is type(parsed)


@pytest.mark.parametrize("value, operator, parsed", [
    (">2026-11-20", ">", datetime(2026, 11, 20, tzinfo=UTC)),
    (">=2026-11-20T10:00:00", ">=", datetime(2026, 11, 20, 10, tzinfo=UTC)),
    ("<2026-11-20T10:00:00+02:00", "<", datetime(2026, 11, 20, 8, tzinfo=UTC)),
    ("<=2026-11-20T10:00:00Z", "<=", datetime(2026, 11, 20, 10, tzinfo=UTC)),
    ("<=2026-11-20T10:00:00.5+00:00", "<=", datetime(2026, 11, 20, 10, 0, 0, 500000, tzinfo=UTC)),
])
def test_date_operators(value, operator, parsed):
    c = conditions(parse({"date": value}), "date")[0]
    assert (c.operator, c.value) == (operator, parsed)
    assert c.value.tzinfo == UTC


def test_boolean_operators():
    assert conditions(parse({"startup_crash": "__true__"}), "startup_crash") == (
        Condition("startup_crash", "__true__"),)
    assert conditions(parse({"startup_crash": "!__true__"}), "startup_crash") == (
        Condition("startup_crash", "__true__", negated=True),)
    assert conditions(parse({"startup_crash": "__null__"}), "startup_crash")[0].operator == "__null__"


def test_negation_applies_to_every_operator():
    for field, value in [("product", "!Firefox"), ("product", "!=Firefox"), ("product", "!~x"),
                         ("product", "!^x"), ("product", "!$x"), ("product", "!@x"),
                         ("product", "!__null__"), ("uptime", "!>5"), ("uptime", "!5"),
                         ("date", "!<2026-11-20")]:
        (c,) = [c for c in conditions(parse({field: value}), field) if c.negated]
        assert c.negated, (field, value)


@pytest.mark.parametrize("field, value, needle", [
    ("product", ">x", "'>'"), ("product", "<=x", "'<='"), ("product", "__true__", "__true__"),
    ("uptime", "~5", "'~'"), ("uptime", "@5", "'@'"), ("uptime", "^5", "'^'"),
    ("uptime", "__true__", "__true__"), ("date", "2026-11-20", "no operator"),
    ("date", "=2026-11-20", "'='"), ("date", "~2026", "'~'"),
    ("startup_crash", "true", "no operator"), ("startup_crash", "=1", "'='"),
])
def test_operators_that_do_not_fit_the_type_are_refused(field, value, needle):
    assert needle in refused({field: value}, field)


@pytest.mark.parametrize("field, value", [
    ("uptime", "five"), ("uptime", "5.0"), ("uptime", "+5"), ("uptime", ">"), ("uptime", "٥"),
    ("uptime", str(2 ** 63)), ("uptime", "1e3"), ("date", ">yesterday"), ("date", ">2026-13-01"),
    ("date", ">"), ("date", ">２０２６-11-20"), ("product", "__null__x"), ("startup_crash", "__true__1"),
])
def test_bad_values_are_refused_naming_the_field(field, value):
    refused({field: value}, field)


def test_bad_regexes_are_refused_naming_the_field():
    assert "regular expression" in refused({"signature": "@(a+)+"}, "signature")


def test_version_ending_in_b_matches_the_betas_as_socorro_does():
    assert conditions(parse({"version": ["120.0b", "!121.0b", "=122.0b", "120.0"]}), "version") == (
        Condition("version", "^", "120.0b"), Condition("version", "^", "121.0b", negated=True),
        Condition("version", "=", "122.0b"), Condition("version", "match", "120.0"))


def test_empty_filter_values_are_ignored():
    query = parse({"product": ["", "Firefox"], "uptime": ""})
    assert conditions(query, "product") == (Condition("product", "match", "Firefox"),)
    assert "uptime" not in {f.field for f in query.filters}


# --- combination and input shapes ------------------------------------------------------------

def test_values_of_one_field_stay_together_and_fields_are_separate_filters():
    query = parse([("product", "Firefox"), ("uptime", ">5"), ("product", "Fenix"), ("uptime", "<50")])
    assert [c.value for c in conditions(query, "product")] == ["Firefox", "Fenix"]
    assert [(c.operator, c.value) for c in conditions(query, "uptime")] == [(">", 5), ("<", 50)]
    assert [f.field for f in query.filters] == ["product", "uptime", "date"]


def test_input_shapes_give_one_query():
    as_mapping = parse({"product": ["Firefox", "Fenix"], "_facets": "version"})
    as_pairs = parse([("product", "Firefox"), ("product", "Fenix"), ("_facets", "version")])
    as_lists = parse(iter([("product", ["Firefox", "Fenix"]), ("_facets", ["version"])]))

    class MultiDictLike(dict):
        def lists(self):
            return iter([("product", ["Firefox", "Fenix"]), ("_facets", ["version"])])

    as_multidict = parse(MultiDictLike(product="Firefox", _facets="version"))
    assert as_mapping == as_pairs == as_lists == as_multidict
    assert parse({"_results_number": 5}).results_number == 5


@pytest.mark.parametrize("params", [[("product", 5.0)], [("product", None)], [(5, "x")], ["product"]])
def test_values_that_are_not_strings_are_refused(params):
    with pytest.raises(SearchParameterError):
        parse(params)


# --- the date range --------------------------------------------------------------------------

def test_no_date_is_the_last_seven_days_until_now():
    query = parse({})
    assert conditions(query, "date") == (Condition("date", "<", NOW),
                                         Condition("date", ">=", NOW - timedelta(days=7)))
    assert (query.start, query.end) == (NOW - timedelta(days=7), NOW)


def test_a_lower_bound_alone_ends_now():
    query = parse({"date": ">=2026-11-01"})
    assert conditions(query, "date")[1] == Condition("date", "<", NOW)
    assert (query.start, query.end) == (datetime(2026, 11, 1, tzinfo=UTC), NOW)


def test_an_upper_bound_alone_starts_seven_days_before_it():
    query = parse({"date": "<2026-11-10"})
    upper = datetime(2026, 11, 10, tzinfo=UTC)
    assert conditions(query, "date")[1] == Condition("date", ">=", upper - timedelta(days=7))
    assert (query.start, query.end) == (upper - timedelta(days=7), upper)


def test_range_bounds_are_the_tightest_and_exact():
    query = parse({"date": [">2026-11-01", ">=2026-11-02", "<=2026-11-09", "<2026-11-20"]})
    assert query.start == datetime(2026, 11, 2, tzinfo=UTC)
    assert query.end == datetime(2026, 11, 9, tzinfo=UTC) + timedelta(microseconds=1)
    assert len(conditions(query, "date")) == 4
    query = parse({"date": [">2026-11-05", "<2026-11-09"]})
    assert query.start == datetime(2026, 11, 5, tzinfo=UTC) + timedelta(microseconds=1)


def test_a_negated_range_bounds_the_other_side():
    query = parse({"date": "!<2026-11-20"})
    assert (query.start, query.end) == (datetime(2026, 11, 20, tzinfo=UTC), NOW)
    assert len(conditions(query, "date")) == 2


def test_an_empty_range_keeps_start_at_end():
    query = parse({"date": [">=2026-11-20", "<2026-11-10"]})
    assert query.start == query.end == datetime(2026, 11, 10, tzinfo=UTC)


def test_now_naive_is_utc_and_defaults_to_the_wall_clock():
    assert parse({}, now=NOW.replace(tzinfo=None)).end == NOW
    before = datetime.now(UTC)
    assert parse_search({}).end >= before


# --- controls --------------------------------------------------------------------------------

def test_defaults():
    query = parse({})
    assert query.columns == DEFAULT_COLUMNS
    assert (query.sort, query.results_number, query.results_offset, query.facets_size) == ((), 100, 0, 50)
    assert query.facets == (Terms("signature"),)


def test_columns_and_sort():
    query = parse({"_columns": ["build_id", "uuid", "build_id", ""], "_sort": ["-date", "product", "-date", ""]})
    assert query.columns == ("build_id", "uuid")
    assert query.sort == (("date", True), ("product", False))
    assert parse({"_columns": ""}).columns == ()


def test_paging_limits():
    assert parse({"_results_number": "0"}).results_number == 0
    assert parse({"_results_number": "1000", "_results_offset": "9000"}).results_offset == 9000
    assert "1,000" in refused({"_results_number": "1001"}, "_results_number")
    refused({"_results_number": "-1"}, "_results_number")
    refused({"_results_number": "ten"}, "_results_number")
    refused({"_results_number": ["1", "2"]}, "_results_number")
    refused({"_results_offset": "-1"}, "_results_offset")
    assert "10,000" in refused({"_results_offset": "9901"}, "_results_offset")
    refused({"_results_offset": "9990", "_results_number": "11"}, "_results_offset")
    assert parse({"_results_number": ""}).results_number == 100


def test_facets():
    query = parse({"_facets": ["product", "_cardinality.signature", "_histogram.uptime", "product"]})
    assert query.facets == (Terms("product"), Cardinality("signature"), Histogram("uptime", 1))
    assert parse({"_facets": ""}).facets == ()
    assert parse({"_facets_size": "7"}).facets_size == 7
    assert parse({"_facets_size": "0", "_histogram.date": "product"}).facets == ()
    refused({"_facets_size": "10001"}, "_facets_size")
    assert "_histogram.date" in refused({"_facets": "date"}, "_facets")
    refused({"_facets": "nope"}, "_facets")
    refused({"_facets": "_cardinality.nope"}, "_facets")
    refused({"_facets": "_histogram.product"}, "_facets")


def test_aggs_nest_terms_and_replace_the_default_facet():
    query = parse({"_aggs.signature": ["version", "_cardinality.uuid", ""]})
    assert query.facets == (Terms("signature", (Terms("version"), Cardinality("uuid"))),)
    query = parse({"_aggs.product.version": "platform", "_facets": "product"})
    assert query.facets == (Terms("product", (Terms("version", (Terms("platform"),)),)),)
    assert parse({"_aggs.product": ""}).facets == (Terms("signature"), Terms("product"))
    refused({"_aggs.date": "product"}, "_aggs.date")
    refused({"_aggs.nope": "product"}, "_aggs.nope")
    refused({"_aggs.product": "nope"}, "_aggs.product")
    refused({"_aggs.a.b.c.d": "product"}, "_aggs.a.b.c.d")


def test_histograms():
    query = parse({"_histogram.date": ["product", "_cardinality.signature"], "_facets": ""})
    assert query.facets == (Histogram("date", 86400, (Terms("product"), Cardinality("signature"))),)
    assert parse({"_histogram.date": "", "_facets": ""}).facets == (Histogram("date", 86400),)
    for text, seconds in [("1h", 3600), ("6h", 21600), ("30m", 1800), ("2d", 172800), ("1w", 604800),
                          ("day", 86400), ("hour", 3600)]:
        query = parse({"_histogram.date": "", "_histogram_interval.date": text, "_facets": ""})
        assert query.facets == (Histogram("date", seconds),)
    query = parse({"_histogram.build_id": "", "_histogram_interval.build_id": "100", "_facets": ""})
    assert query.facets == (Histogram("build_id", 100),)
    for bad in ("0d", "1M", "1y", "month", "week", "1", "d", "-1d", "1.5d", ""):
        refused({"_histogram.date": "", "_histogram_interval.date": bad}, "_histogram_interval.date")
    for bad in ("0", "-1", "1d", "x"):
        refused({"_histogram.uptime": "", "_histogram_interval.uptime": bad}, "_histogram_interval.uptime")
    refused({"_histogram.product": ""}, "_histogram.product")
    refused({"_histogram_interval.product": "1"}, "_histogram_interval.product")
    refused({"_histogram.nope": ""}, "_histogram.nope")
    refused({"_histogram.date": "nope"}, "_histogram.date")


def test_date_histograms_are_limited_to_ten_thousand_buckets():
    # 7 days of minutes is 10,080 buckets; of 2 minutes, 5,040
    refused({"_histogram.date": "", "_histogram_interval.date": "1m"}, "_histogram_interval.date")
    assert parse({"_histogram.date": "", "_histogram_interval.date": "2m"}).facets[-1].interval == 120
    refused({"_facets": "_histogram.date", "_histogram_interval.date": "1m"}, "_histogram_interval.date")
    refused({"_aggs.product": "_histogram.date", "_histogram_interval.date": "1m"}, "_histogram_interval.date")


@pytest.mark.parametrize("name", ["_return_query", "_nope", "_", "_histogram", "_aggs", "_cardinality.signature",
                                  "_columns_", "_histogram_interval"])
def test_unknown_controls_are_refused(name):
    assert "unknown" in refused({name: "x"}, name)


def test_unknown_fields_are_refused():
    assert "unknown" in refused({"nope": "x"}, "nope")
    assert "nope" in refused({"_columns": "nope"}, "_columns")
    refused({"_sort": "-nope"}, "_sort")
    refused({"_sort": "-"}, "_sort")


# --- protected fields ------------------------------------------------------------------------

@pytest.mark.parametrize("params, parameter", [
    ({PROTECTED: "x"}, PROTECTED),
    ({PROTECTED: "__null__"}, PROTECTED),
    ({"_columns": ["uuid", PROTECTED]}, "_columns"),
    ({"_sort": "-" + PROTECTED}, "_sort"),
    ({"_facets": PROTECTED}, "_facets"),
    ({"_facets": "_cardinality." + PROTECTED}, "_facets"),
    ({"_facets": "_histogram." + PROTECTED_INTEGER}, "_facets"),
    ({"_aggs." + PROTECTED: "product"}, "_aggs." + PROTECTED),
    ({"_aggs.product." + PROTECTED: ""}, "_aggs.product." + PROTECTED),
    ({"_aggs.signature": PROTECTED}, "_aggs.signature"),
    ({"_aggs.signature": "_cardinality." + PROTECTED}, "_aggs.signature"),
    ({"_histogram.date": PROTECTED}, "_histogram.date"),
    ({"_histogram." + PROTECTED_INTEGER: ""}, "_histogram." + PROTECTED_INTEGER),
    ({"_histogram_interval." + PROTECTED_INTEGER: "5"}, "_histogram_interval." + PROTECTED_INTEGER),
])
def test_protected_fields_are_refused_in_public_mode_wherever_named(params, parameter):
    with pytest.raises(ProtectedField) as info:
        parse(params)
    protected = PROTECTED_INTEGER if PROTECTED_INTEGER in str(params) else PROTECTED
    assert (info.value.field, info.value.parameter) == (protected, parameter)
    parse(params, unredacted=True)


def test_a_protected_field_is_refused_before_its_value_is_checked():
    with pytest.raises(ProtectedField):
        parse({PROTECTED_INTEGER: "not a number"})


# --- hostile inputs --------------------------------------------------------------------------

def test_too_many_filter_values():
    assert parse({"product": ["x"] * 1000}).filters
    assert "1,000" in refused({"product": ["x"] * 10_000}, "product")
    refused([("product", "x")] * 600 + [("platform", "y")] * 600, "platform")
    refused({"_columns": ["uuid"] * 1001}, "_columns")


def test_too_many_values_in_all():
    names = [f"_aggs.{a}.{b}" for a in ("product", "version", "platform", "uuid") for b in ("cpu_arch", "reason", "address")]
    refused([(name, "uuid") for name in names for _ in range(1000)][:10_001], names[10])


def test_endless_parameters_are_refused_as_they_arrive():
    import itertools

    refused(itertools.repeat(("product", "x")), "product")
    refused(itertools.repeat(("_columns", "uuid")), "_columns")
    refused(itertools.chain([("_nope", "x")], itertools.repeat(("product", "x"))), "_nope")


def test_values_too_long():
    refused({"signature": "x" * 10_001}, "signature")
    refused({"_facets": "x" * 10_001}, "_facets")
    assert parse({"signature": "x" * 10_000})


def test_huge_regexes_are_refused():
    refused({"signature": "@" + "a" * 100_000}, "signature")
    refused({"signature": "@" + "a" * 1001}, "signature")
    refused({"signature": "@" + "(" * 50 + "a" + ")" * 50}, "signature")


def test_hostile_names_are_cut_short_in_errors():
    with pytest.raises(SearchParameterError) as info:
        parse({"x" * 100_000: "y"})
    assert len(str(info.value)) < 300


# --- the field list --------------------------------------------------------------------------

def test_fields_document_has_socorros_shape():
    document = fields_document()
    assert list(document) == list(FIELDS)
    keys = {"name", "query_type", "description", "is_exposed", "is_returned", "permissions_needed", "namespace",
            "in_database_name", "data_validation_type", "form_field_choices", "has_full_version", "storage_mapping"}
    assert all(set(entry) == keys for entry in document.values())
    assert document["platform"]["in_database_name"] == "os_name"
    assert document["product"]["query_type"] == "enum"
    assert document["signature"]["has_full_version"] is True
    assert document["signature"]["query_type"] == "string"
    assert (document["build_id"]["query_type"], document["build_id"]["data_validation_type"]) == ("integer", "int")
    assert document["date"]["data_validation_type"] == "datetime"
    assert document["startup_crash"]["query_type"] == "bool"
    assert document[PROTECTED]["permissions_needed"] == ["crashstats.view_pii"]
    assert document["product"]["permissions_needed"] == []
    document["signature"]["storage_mapping"]["fields"]["full"]["type"] = "changed"
    assert fields_document()["signature"]["storage_mapping"]["fields"]["full"]["type"] == "keyword"


def test_public_fields_document_lists_only_public_fields():
    public = fields_document(unredacted=False)
    assert set(public) == {name for name, field in FIELDS.items() if field.public}
    assert PROTECTED not in public


# --- the regexp translation ------------------------------------------------------------------

# (Lucene pattern, strings it matches, strings it does not), worked by hand from Lucene's RegExp
# grammar: whole-string matches, ^ and $ literal, a quantifier with nothing before it literal.
LUCENE_EXAMPLES = [
    ("", [""], ["a"]),
    ("abc", ["abc"], ["ab", "abcd", "xabc", "ABC"]),
    ("a.c", ["abc", "a\nc", "a.c"], ["ac", "abbc"]),
    ("ab?c", ["ac", "abc"], ["abbc"]),
    ("ab*c", ["ac", "abc", "abbbc"], ["adc"]),
    ("ab+c", ["abc", "abbc"], ["ac"]),
    ("ab{2}c", ["abbc"], ["abc", "abbbc"]),
    ("ab{2,}c", ["abbc", "abbbbbc"], ["abc"]),
    ("ab{1,2}c", ["abc", "abbc"], ["ac", "abbbc"]),
    ("a{0}", [""], ["a"]),
    ("ab|cd", ["ab", "cd"], ["abcd", "b"]),
    ("a(b|c)d", ["abd", "acd"], ["ad", "abcd"]),
    ("(ab)+", ["ab", "abab"], ["", "aba"]),
    ("a()b", ["ab"], ["a()b"]),
    ("[abc]+", ["a", "cab"], ["", "d"]),
    ("[a-c]x", ["ax", "bx", "cx"], ["dx"]),
    ("[^a-c]", ["d", "\n", "-"], ["a", "", "dd"]),
    ("[]a]", ["]", "a"], ["[", ""]),
    ("[+-]]", ["]", "-", "5", "A", "["], ["a", "]]", "*"]),
    ("[-a]", ["-", "a"], ["b"]),
    ("[.^$*]", [".", "^", "$", "*"], ["a"]),
    ("[~&<#@\"]", ["~", "&", "<", "#", "@", '"'], ["a"]),
    ("[\\]\\\\]", ["]", "\\"], ["a"]),
    ("^a$", ["^a$"], ["a"]),
    ("a\\.b", ["a.b"], ["axb"]),
    ("\\*\\+\\?\\(\\)\\[\\{\\|\\\\", ["*+?()[{|\\"], []),
    ("\\d+", ["0", "2026"], ["d", "a", "٥"]),
    ("\\D", ["a", "d"], ["5"]),
    ("\\s", [" ", "\t", "\n", "\r"], ["s", "\f", "\v", "\u00a0"]),
    ("\\S", ["a", "\f"], [" ", "\t"]),
    ("\\w+", ["a_Z9"], ["é", "-"]),
    ("\\W", ["-", "é", " "], ["a", "_"]),
    ("[\\d.]+", ["1.2"], ["a"]),
    ("[\\s\\w]+", ["a b"], ["-"]),
    ("[^\\d]", ["a"], ["1"]),
    ('"a.b"', ["a.b"], ["axb"]),
    ('x"*+"y', ["x*+y"], ["xy"]),
    ('"a\\b"', ["a\\b"], ["ab"]),
    ('"ab"*', ["", "abab"], ["aba"]),
    ("*a", ["*a"], ["a", "aa"]),
    ("+", ["+"], [""]),
    ("?a?", ["?", "?a"], ["a"]),
    ("|a", ["|a"], ["a", ""]),
    ("a||b", ["a", "|b"], ["b", ""]),
    ("(*)", ["*"], []),
    (")", [")"], []),
    ("{", ["{"], []),
    ("a}", ["a}"], []),
    ("]", ["]"], []),
    ("&a", ["&a"], ["a"]),
    (">", [">"], []),
    ("-", ["-"], []),
    ("\\1", ["1"], []),
    (".*OOM.*", ["OOM | small", "x OOM"], ["oom"]),
    ("js::.*Script", ["js::RunScript"], ["js::Run"]),
    ("OOM \\| .*", ["OOM | large"], ["OOM large"]),
    ("[0-9]{1,4}\\.[0-9]+b[0-9]*", ["120.0b5", "120.0b"], ["120.0"]),
    ("é+ü", ["ééü"], ["eu"]),
    ("\U0001F600.", ["\U0001F600a"], ["\U0001F600"]),
]


@pytest.mark.parametrize("lucene, matches, misses", LUCENE_EXAMPLES)
def test_regex_translation_matches_lucene(lucene, matches, misses):
    pattern = re.compile(translate(lucene), re.DOTALL)
    for text in matches:
        assert pattern.fullmatch(text), (lucene, text)
    for text in misses:
        assert not pattern.fullmatch(text), (lucene, text)


@pytest.mark.parametrize("lucene, why", [
    ("a&b", "intersection"), ("a&&b", "intersection"), ("~a", "complement"), ("a~", "complement"),
    ("<1-10>", "interval"), ("<name>", "interval"), ("a@", "any string"), ("@", "any string"), ("#", "empty language"),
    ("a#b", "empty language"),
    ("(a+)+", "quantifier"), ("(a|aa)*", "quantifier"), ("(a|b)*", "quantifier"), ("(a*b)*", "quantifier"),
    ("(ab?)+", "quantifier"), ("((ab)*)*", "quantifier"), ("a**", "quantifier"), ("a+?", "quantifier"),
    ("a*{2}", "quantifier"), ("(a|b){2}", "quantifier"),
    (".*a.*b.*c.*", "too many"), ("a*a*a*", "too many"), ("a?" * 30 + "a" * 30, "too many"),
    ("(.*a|.*b|.*c).*x.*y", "too many"),
    ("a{1001}", "1000"), ("a{99999999999}", "1000"), ("a{2,1}", "repetition"), ("a{,3}", "integer expected"),
    ("a{x}", "integer expected"), ("a{2", "expected '}'"),
    ("(ab", "expected ')'"), ("ab)", "unexpected"), ("[ab", "expected ']'"), ("[]", "expected ']'"),
    ("[^]", "expected ']'"), ("[z-a]", "bad range"), ("[a-]", "bad range"), ("[a-]]", "bad range"),
    ("[0-]", "expected ']'"), ('"ab', "expected '\"'"),
    ("a|", "end of the pattern"), ("\\", "end of the pattern"), ("a\\", "end of the pattern"),
    ("\\q", "not a known escape"), ("\\A", "not a known escape"), ("[\\x]", "not a known escape"),
    ("[\\.-z]", "escaped character"), ("[\\.-]", "escaped character"),
    ("(" * 11 + "a" + ")" * 11, "nest"), ("a" * 1001, "longer than"),
])
def test_regex_refusals(lucene, why):
    with pytest.raises(RegexError) as info:
        translate(lucene)
    assert why in str(info.value), info.value


def test_regexes_at_the_limits_are_accepted():
    translate("(" * 10 + "a" + ")" * 10)
    translate("a" * 1000)
    translate(".*a.*b.*")
    translate("a{1000}")
    translate("[^" + "a" * 997 + "]")
    translate("\\d{1,4}\\.\\d{1,4}.*")


@pytest.mark.parametrize("lucene", ["x" * 1000, "[0-9]*" + "a" * 990, ".*" + "ab" * 400 + ".*"])
def test_accepted_regexes_run_quickly_on_hostile_values(lucene):
    # not a time assertion: a catastrophic pattern would not finish at all on these values
    pattern = re.compile(translate(lucene), re.DOTALL)
    for text in ("a" * 10_000, "ab" * 5000, "x" * 9999 + "y"):
        pattern.fullmatch(text)


def test_regex_translation_never_fails_otherwise():
    # every pattern is either translated into one Python compiles or refused with RegexError
    rng = random.Random(40)
    alphabet = 'ab.*+?{}[]()|\\^$-,019"&~<>#@dsqé'
    for _ in range(20_000):
        lucene = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        try:
            pattern = translate(lucene)
        except RegexError:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # Python's "possible nested set" and the like: a misread pattern
            re.compile(pattern, re.DOTALL)
