"""``socorro-store search``: Super Search from the command line, and its index's upkeep.

``search FIELD=VALUE …`` takes Super Search's parameters exactly as the API does, and prints
the answer of one library call (:meth:`~socorro_store.crashstore.store.CrashStore.super_search`).
The command line is an operator's tool with the store's own access (as ``crash raw`` and
``export`` are): protected fields can be searched, faceted and shown, as the library allows.
``search fields``, ``search reindex``, ``search verify`` and ``search status`` are subcommands; a query parameter
always holds ``=``, so it is never taken for one.
"""

import sys

import click

from ..crashstore import search_verify
from ..schema.labels import label
from ..search.engines import ENV_VAR as SEARCH_ENV_VAR
from ..search.fields import DEFAULT_COLUMNS, FIELDS
from .common import AsciiInt, SummaryGroup, echo_json, emit_list, open_existing_store

#: the name the query form is registered under (hidden; ``search PARAM…`` resolves to it)
QUERY = "query"

#: shorthand option -> the Super Search parameter it adds, one per value given, after the
#: FIELD=VALUE arguments
SHORTHANDS = {"facet": "_facets", "column": "_columns", "sort": "_sort", "number": "_results_number",
              "offset": "_results_offset"}


class SearchGroup(SummaryGroup):
    """A group whose first argument is a subcommand only when it is one's exact name; anything
    else (a ``FIELD=VALUE``, an option such as ``--facet``, nothing at all) goes to the query
    command.  ``--help`` shows the query form, its options and the subcommands."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = [QUERY, *args]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx):
        return ["[OPTIONS] [FIELD=VALUE]...", "|", "COMMAND [ARGS]..."]

    def format_options(self, ctx, formatter):
        query = self.commands[QUERY]
        rows = [param.get_help_record(ctx) for param in query.get_params(ctx) if isinstance(param, click.Option)]
        if rows:
            with formatter.section("Options"):
                formatter.write_dl(rows)
        self.format_commands(ctx, formatter)


def search_url_option(command):
    """``--search-url`` (else ``$SOCORRO_SEARCH_URL``, else an embedded store's own directory)."""
    return click.option("--search-url", default=None, metavar="URL",
                        help=f"Search URL (default: ${SEARCH_ENV_VAR}, else an embedded store's own; none: no search)."
                        )(command)


def _pairs(params, shorthands):
    """``[(name, value)]`` of the ``FIELD=VALUE`` arguments, then of the shorthand options
    (``{option: [values]}``).  The value is everything after the first ``=`` (``date=>=X``)."""
    pairs = []
    for param in params:
        name, sep, value = param.partition("=")
        if not sep or not name:
            hint = " (or a command: fields, reindex, verify, status)" if not sep else ""
            raise click.UsageError(f"not a search parameter: {param!r}: give FIELD=VALUE{hint}")
        pairs.append((name, value))
    for option, parameter in SHORTHANDS.items():
        pairs.extend((parameter, str(value)) for value in shorthands[option])
    return pairs


def _columns(pairs, hits):
    """The hit columns in the order asked (``_columns``, else Socorro's default; ``_columns=``
    alone: none); the hits' own keys when they differ (a parser that spells columns otherwise)."""
    given = [value for name, value in pairs if name == "_columns"]
    asked = list(dict.fromkeys(value for value in given if value)) if given else list(DEFAULT_COLUMNS)
    if hits and set(hits[0]) != set(asked):
        return list(hits[0])
    return asked


def _facet_cell(value):
    """A sub-facet in one cell: ``term count, term count…`` or a cardinality's value."""
    if isinstance(value, dict) and "value" in value:
        return str(value["value"])
    if isinstance(value, list):
        return ", ".join(f"{label(bucket.get('term'))} {bucket.get('count')}" for bucket in value)
    return str(value)


def _print_facet(key, value):
    if isinstance(value, dict) and "value" in value:  # cardinality_FIELD
        click.echo(f"{key}: {value['value']}")
        return
    click.echo(f"{key}:")
    subs = list(dict.fromkeys(sub for bucket in value for sub in bucket.get("facets", {})))
    rows = [{"term": bucket.get("term"), "count": bucket.get("count"),
             **{sub: _facet_cell(bucket.get("facets", {}).get(sub, [])) for sub in subs}} for bucket in value]
    if rows:
        emit_list(rows, "table", ["term", "count", *subs], str)
    else:
        click.echo("(no terms)")


def _print_table(response, columns, offset):
    hits = response["hits"]
    if hits and columns:
        emit_list(hits, "table", columns, str)
    for key, value in response.get("facets", {}).items():
        click.echo()
        _print_facet(key, value)
    click.echo()
    shown = f"hits {offset + 1}-{offset + len(hits)}" if hits else "no hits shown"
    click.echo(f"total {response['total']} ({shown})")
    for error in response.get("errors", []):
        click.echo(f"note: {error}")


def _offset(pairs):
    values = [value for name, value in pairs if name == "_results_offset"]
    try:
        return int(values[-1]) if values else 0
    except ValueError:  # the library has accepted it: print counting from the first hit
        return 0


@click.group("search", cls=SearchGroup)
def search_group():
    """Super Search: crashes by their processed fields, with facets, as crash-stats' API.

    \b
    socorro-store search product=Firefox 'signature=~OOM' 'date=>=2026-11-20' \\
        --facet version --column uuid --column build_id --sort -date

    Each FIELD=VALUE is one Super Search parameter, as /api/SuperSearch/ takes it: filters
    (operators = ~ ^ $ @ > >= < <=, __null__, __true__, a leading ! negates) and the
    controls (_columns, _sort, _results_number, _results_offset, _facets, _facets_size,
    _histogram.date, _histogram_interval.date, _aggs.signature, _cardinality.FIELD).
    The date defaults to the last 7 days.  Protected fields (email, url, ...) are allowed: the
    command line has the store's own access.  Prints the hits, each facet and the total
    (--table), the API's JSON (--json) or the hits as CSV (--csv).  A bad parameter exits 2,
    a store with no search configured exits 1.
    """


@search_group.command(QUERY, hidden=True)
@click.argument("params", nargs=-1, metavar="[FIELD=VALUE]...")
@click.option("--facet", multiple=True, metavar="F", help="A facet (_facets=F); repeat for more.")
@click.option("--column", multiple=True, metavar="C", help="A hit column (_columns=C); repeat for more.")
@click.option("--sort", multiple=True, metavar="S", help="A sort key, -S descending (_sort=S); repeat for more.")
@click.option("--number", type=AsciiInt(0), default=None, metavar="N",
              help="How many hits (_results_number=N; default 100, at most 1000).")
@click.option("--offset", type=AsciiInt(0), default=None, metavar="N", help="Hits skipped (_results_offset=N).")
@click.option("--table", "fmt", flag_value="table", default=True,
              help="Hits as a table, then each facet, then the total (the default).")
@click.option("--json", "fmt", flag_value="json", help="The API's JSON response.")
@click.option("--csv", "fmt", flag_value="csv", help="The hits only, as CSV with a header row.")
@search_url_option
@click.pass_context
def query_command(ctx, search_url, params, facet, column, sort, number, offset, fmt):
    """Search crashes with Super Search's parameters (see `socorro-store search --help`)."""
    pairs = _pairs(params, {"facet": facet, "column": column, "sort": sort,
                            "number": [] if number is None else [number], "offset": [] if offset is None else [offset]})
    with open_existing_store(ctx, search_url=search_url) as store:
        response = store.super_search(pairs, unredacted=True)
    if fmt == "json":
        echo_json(response)
    elif fmt == "csv":
        emit_list(response["hits"], "csv", _columns(pairs, response["hits"]), str)
    else:
        _print_table(response, _columns(pairs, response["hits"]), _offset(pairs))


def _field_rows(fields):
    """``{name, type, access, description}`` per field of Socorro's SuperSearchFields shape
    (``{name: {...}}``); the type is the store's own (keyword, text, ...: what decides the
    operators and how a value matches), Socorro's ``query_type`` for a field it does not know."""
    rows = []
    for name, item in fields.items():
        known = FIELDS.get(name)
        rows.append({"name": name, "type": known.type if known else item.get("query_type"),
                     "access": "protected" if item.get("permissions_needed") else "public",
                     "description": item.get("description") or ""})
    return rows


@search_group.command("fields")
@click.option("--json", "as_json", is_flag=True, help="Print the field list as JSON (/api/SuperSearchFields/).")
@search_url_option
@click.pass_context
def fields_command(ctx, search_url, as_json):
    """The searchable fields: name, type, public or protected, description."""
    with open_existing_store(ctx, search_url=search_url) as store:
        fields = store.search_fields(unredacted=True)
    if as_json:
        echo_json(fields)
        return
    emit_list(_field_rows(fields), "table", ["name", "type", "access", "description"], str)


def _counter(as_json, label):
    """``(progress(n), close)`` counting crashes on stderr as pages of ``n`` are done (the total is
    not known beforehand); nothing with ``--json`` or when stderr is not a terminal."""
    if as_json or not sys.stderr.isatty():
        return None, lambda: None
    state = {"bar": None}

    def progress(n):
        if state["bar"] is None:
            # an iterable of no known length: click draws a bar of unknown length, with the count
            state["bar"] = click.progressbar((_ for _ in ()), label=label, file=sys.stderr, show_pos=True)
        state["bar"].update(n)

    def close():
        if state["bar"] is not None:
            state["bar"].render_finish()

    return progress, close


@search_group.command("reindex")
@click.option("--since", default=None, metavar="D", help="Only crashes submitted from D on (YYYY-MM-DD, UTC).")
@click.option("--until", default=None, metavar="D", help="Only crashes submitted before D (YYYY-MM-DD, UTC).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@search_url_option
@click.pass_context
def reindex_command(ctx, search_url, since, until, as_json):
    """Rebuild the search index from the crash rows (idempotent), with a progress bar on stderr."""
    progress, close = _counter(as_json, "reindex")
    with open_existing_store(ctx, search_url=search_url) as store:
        try:
            report = store.reindex_search(since=since, until=until, progress=progress)
        finally:
            close()
    if as_json:
        echo_json(report)
        return
    days = f"{report['days']} day(s)" if since is not None else "every day"
    click.echo(f"indexed {report['indexed']} crash(es), removed {report['removed']} document(s); {days} read")


@search_group.command("verify")
@click.option("--since", default=None, metavar="D", help="Only crashes submitted from D on (YYYY-MM-DD, UTC).")
@click.option("--until", default=None, metavar="D", help="Only crashes submitted before D (YYYY-MM-DD, UTC).")
@click.option("--repair", is_flag=True, help="Index what is missing or stale; remove orphaned documents.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@search_url_option
@click.pass_context
def verify_command(ctx, search_url, since, until, repair, as_json):
    """Compare the search index with the crash rows; --repair sets right what differs.

    Each crash is MISSING (processed, no document), STALE (its document differs from its row),
    ORPHANED (a document whose crash has no row) or PENDING (the feed has yet to index it: not a
    problem).  Exit 0: nothing differs, or --repair set everything right; exit 1: differences
    found (a check), or some left (a repair: a document the engine refused stays dead-lettered).
    """
    progress, close = _counter(as_json, "verify")
    with open_existing_store(ctx, search_url=search_url) as store:
        try:
            report = store.verify_search(since=since, until=until, repair=repair, progress=progress)
        finally:
            close()
    if as_json:
        echo_json(report)
    else:
        days = f"{report['days']} day(s)" if report["days"] is not None else "every day"
        click.echo(f"checked {report['checked']} crash row(s), {report['documents']} document(s); {days} read")
        for kind in ("missing", "stale", "orphaned", "pending"):
            examples = report["examples"].get(kind, [])
            more = " …" if report[kind] > len(examples) else ""
            click.echo(f"{kind:<9} {report[kind]}" + (f"  ({', '.join(examples)}{more})" if examples else ""))
        if repair:
            click.echo(f"repaired  {report['repaired']}" +
                       (f"; {report['dead_lettered']} refused (dead-lettered)" if report["dead_lettered"] else ""))
    if search_verify.problems_left(report, repair):
        ctx.exit(1)


@search_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@search_url_option
@click.pass_context
def status_command(ctx, search_url, as_json):
    """The search engine: configured or not, its URL, documents held, changes pending, lag."""
    with open_existing_store(ctx, search_url=search_url) as store:
        status = store.search_status()
    if as_json:
        echo_json(status)
        return
    if not status["configured"]:
        click.echo(f"search: not configured (give the store a search URL: --search-url or ${SEARCH_ENV_VAR})")
        return
    lag = status["lag_seconds"]
    click.echo(f"search     {status['url']}")
    click.echo(f"documents  {status['documents'] if status['documents'] is not None else '-'}")
    click.echo(f"pending    {status['pending']}")
    click.echo(f"lag        {f'{lag:.1f}s' if lag is not None else '-'}")
    if status.get("last_error"):
        click.echo(f"last error {status['last_error']}")


COMMANDS = [search_group]
