"""``socorro-store tables …``: create, list, describe, verify, ddl, drop.

``--codec-map FROM=TO`` (repeatable, or ``$SOCORRO_STORE_CODEC_MAP``: pairs separated by commas
or spaces) on create, verify and ddl: the codec a cluster uses in place of one it lacks.
"""

import sys

import click

from ..backends import open_backend
from ..schema import table_admin as admin
from ..schema.spec_loader import load_specs, parse_codec_map
from .common import SummaryGroup, echo_json, emit_list, list_format_options, open_existing, url_of

#: The environment variable ``--codec-map`` falls back to.
CODEC_MAP_ENV = "SOCORRO_STORE_CODEC_MAP"

_specs_option = click.option("--specs", "spec_dir", type=click.Path(file_okay=False), default=None,
                             help="Directory of table spec files (default: the shipped table_specs/).")
_codec_map_option = click.option(
    "--codec-map", "codec_map", multiple=True, envvar=CODEC_MAP_ENV, metavar="FROM=TO",
    help=f"Use codec TO where a spec says FROM, on a cluster that lacks FROM (e.g. LZO=GZ). "
         f"Repeatable; default ${CODEC_MAP_ENV}.")


def _codec_line(codec_map, mapped):
    """One line naming the map and how many families it changed."""
    count = sum(len(fams) for fams in mapped.values())
    pairs = ", ".join(f"{src}->{dst}" for src, dst in codec_map.items())
    return f"codec map: {pairs} (applies to {count} famil{'y' if count == 1 else 'ies'} in {len(mapped)} table(s))"


def _presplit_line(report, prefix):
    """One line: which salted tables were created unsplit, and the command that prints the HBase
    shell statements that create them pre-split."""
    names = report.not_presplit["tables"]
    command = ["socorro-store tables ddl"]
    if prefix:
        command.append(f"--table-prefix {prefix}")
    command += [f"--codec-map {src}={dst}" for src, dst in report.codec_map.items()] + names
    return (f"not pre-split: {report.not_presplit['reason']} ({len(names)} salted table(s)); for 16 salt "
            f"regions, drop them while empty and run in the HBase shell what `{' '.join(command)}` prints")


@click.group(cls=SummaryGroup)
def tables():
    """Create and check the tables from the declarative specs."""


@tables.command()
@_specs_option
@_codec_map_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def create(ctx, spec_dir, codec_map, as_json):
    """Create every table that does not exist yet (idempotent).  Exit 1 on a mismatch, on a spec
    value the backend cannot set, or on a codec the cluster refuses (nothing is created then)."""
    specs = load_specs(spec_dir)
    codecs = parse_codec_map(codec_map)
    with open_backend(url_of(ctx)) as backend:
        report = admin.create_tables(backend, specs, codec_map=codecs)
        prefix = getattr(backend, "table_prefix", None)
    if as_json:
        echo_json(report.to_dict())
    else:
        if report.codec_map:
            click.echo(_codec_line(report.codec_map, report.mapped))
        for name in report.created:
            click.echo(f"created {name}")
        for name in report.existing:
            click.echo(f"exists  {name}")
        for name, diffs in report.mismatched.items():
            for diff in diffs:
                click.echo(f"MISMATCH {diff}")
        for problems in report.unset.values():
            for problem in problems:
                click.echo(f"UNSET {problem}")
        if report.not_presplit:
            click.echo(_presplit_line(report, prefix))
    sys.exit(1 if report.mismatched or report.unset else 0)


@tables.command("list")
@list_format_options
@click.pass_context
def list_(ctx, fmt):
    """Print one table name per line (--json: an array of names; --nl, --csv, --table: {name})."""
    with open_existing(ctx) as backend:
        names = backend.list_tables()
    if fmt == "json":  # a list of plain values stays a JSON array of them
        echo_json(names)
    else:
        emit_list([{"name": name} for name in names], fmt, ["name"], lambda item: item["name"])


@tables.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def describe(ctx, name, as_json):
    """Show a live table's families and their attributes (None: the backend cannot read it); on
    HBase its regions and the region server holding each, and, for a URL naming several Thrift
    servers, which of them answer."""
    with open_existing(ctx) as backend:
        info = admin.describe_table(backend, name)
    if as_json:
        echo_json(info)
        return
    click.echo(info["name"])
    for fam, attrs in info["families"].items():
        click.echo(f"  {fam}: " + ", ".join(f"{k}={v}" for k, v in attrs.items() if v is not None))
    if info.get("not_applicable"):
        click.echo("  not applicable on this backend: " + ", ".join(info["not_applicable"]))
    if info.get("unreadable"):
        click.echo("  not readable through this backend (ask the server, e.g. the HBase shell's describe): "
                   + ", ".join(info["unreadable"]))
    if "regions" in info:
        spread = ", ".join(f"{server} {count}" for server, count in info["region_servers"].items())
        click.echo(f"  regions: {len(info['regions'])} on {len(info['region_servers'])} region server(s) ({spread})")
        for region in info["regions"]:
            click.echo(f"    [{region['start']!r}, {region['end']!r}) on {region['server']}")
    for item in info.get("servers", ()):
        click.echo(f"  thrift server {item['server']}: " + ("answers" if item["ok"] else f"DOWN ({item['error']})"))


@tables.command()
@_specs_option
@_codec_map_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def verify(ctx, spec_dir, codec_map, as_json):
    """Compare live tables with the specs; print every difference; exit 1 on drift.

    Under --codec-map a family with the mapped codec (or the spec's own) matches."""
    specs = load_specs(spec_dir)
    codecs = parse_codec_map(codec_map)
    with open_existing(ctx) as backend:
        drift = admin.verify_tables(backend, specs, codec_map=codecs)
        na, unreachable = admin.attribute_limits(backend)
    unchecked = sorted(unreachable)
    if as_json:
        out = {"ok": not drift, "drift": drift, "not_applicable": na, "unchecked": unchecked}
        if codecs:
            out["codec_map"] = codecs
        echo_json(out)
    else:
        if codecs:
            click.echo("codec map: " + ", ".join(f"{src}->{dst}" for src, dst in codecs.items()))
        for diffs in drift.values():
            for diff in diffs:
                click.echo(diff)
        if na:
            click.echo("not applicable on this backend (not drift): " + ", ".join(na))
        if unchecked:
            click.echo("unchecked (the backend can neither set nor read them; check in the HBase shell): "
                       + ", ".join(unchecked))
        click.echo("OK: every table matches its spec" if not drift
                   else f"DRIFT in {len(drift)} table(s)")
    sys.exit(1 if drift else 0)


@tables.command()
@click.argument("names", nargs=-1)
@_specs_option
@_codec_map_option
@click.option("--table-prefix", default="", help="Prefix each table name (as the hbase URL's table_prefix does, with '_').")
@click.option("--json", "as_json", is_flag=True, help="Print the statements as a JSON list.")
def ddl(names, spec_dir, codec_map, table_prefix, as_json):
    """Print HBase shell create statements for every table (or the NAMES given), SPLITS on the
    16 salt boundaries for salted tables."""
    prefix = f"{table_prefix}_" if table_prefix else ""
    statements = admin.ddl_statements(load_specs(spec_dir), prefix, codec_map=parse_codec_map(codec_map),
                                      only=list(names) or None)
    if as_json:
        echo_json(statements)
        return
    for statement in statements:
        click.echo(statement)


@tables.command()
@click.argument("names", nargs=-1)
@click.option("--yes", is_flag=True, help="Really drop (required).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def drop(ctx, names, yes, as_json):
    """Drop the named tables (default: every table in the specs).  Needs --yes."""
    if not yes:
        raise click.UsageError("refusing to drop tables without --yes")
    with open_existing(ctx) as backend:
        dropped = admin.drop_tables(backend, list(names) or None)
    if as_json:
        echo_json({"dropped": dropped})
    else:
        for name in dropped:
            click.echo(f"dropped {name}")


@tables.command()
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def compact(ctx, names, as_json):
    """Major-compact tables (default: every table in the specs): purge delete markers, expired
    cells and old versions."""
    with open_existing(ctx) as backend:
        done = admin.compact_tables(backend, list(names) or None)
    if as_json:
        echo_json({"compacted": done})
    else:
        for name in done:
            click.echo(f"compacted {name}")


COMMANDS = [tables]
