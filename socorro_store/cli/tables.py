"""``socorro-store tables …``: create, list, describe, verify, ddl, drop."""

import sys

import click

from ..backends import open_backend
from ..schema import table_admin as admin
from ..schema.spec_loader import load_specs
from .common import echo_json, open_existing, url_of

_specs_option = click.option("--specs", "spec_dir", type=click.Path(file_okay=False), default=None,
                             help="Directory of table spec files (default: the shipped table_specs/).")


@click.group()
def tables():
    """Create and check the tables from the declarative specs."""


@tables.command()
@_specs_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def create(ctx, spec_dir, as_json):
    """Create every table that does not exist yet (idempotent).  Exit 1 on a mismatch."""
    specs = load_specs(spec_dir)
    with open_backend(url_of(ctx)) as backend:
        report = admin.create_tables(backend, specs)
    if as_json:
        echo_json(report.to_dict())
    else:
        for name in report.created:
            click.echo(f"created {name}")
        for name in report.existing:
            click.echo(f"exists  {name}")
        for name, diffs in report.mismatched.items():
            for diff in diffs:
                click.echo(f"MISMATCH {diff}")
    sys.exit(1 if report.mismatched else 0)


@tables.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def list_(ctx, as_json):
    """Print one table name per line."""
    with open_existing(ctx) as backend:
        names = backend.list_tables()
    if as_json:
        echo_json(names)
    else:
        for name in names:
            click.echo(name)


@tables.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def describe(ctx, name, as_json):
    """Show a live table's families and their attributes."""
    with open_existing(ctx) as backend:
        info = admin.describe_table(backend, name)
    if as_json:
        echo_json(info)
        return
    click.echo(info["name"])
    for fam, attrs in info["families"].items():
        click.echo(f"  {fam}: " + ", ".join(f"{k}={v}" for k, v in attrs.items()))
    if info.get("not_applicable"):
        click.echo("  not applicable on this backend: " + ", ".join(info["not_applicable"]))


@tables.command()
@_specs_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def verify(ctx, spec_dir, as_json):
    """Compare live tables with the specs; print every difference; exit 1 on drift."""
    specs = load_specs(spec_dir)
    with open_existing(ctx) as backend:
        drift = admin.verify_tables(backend, specs)
        na = list(backend.not_applicable_attributes)
    if as_json:
        echo_json({"ok": not drift, "drift": drift, "not_applicable": na})
    else:
        for diffs in drift.values():
            for diff in diffs:
                click.echo(diff)
        if na:
            click.echo("not applicable on this backend (not drift): " + ", ".join(na))
        click.echo("OK: every table matches its spec" if not drift
                   else f"DRIFT in {len(drift)} table(s)")
    sys.exit(1 if drift else 0)


@tables.command()
@_specs_option
@click.option("--table-prefix", default="", help="Prefix each table name (as the hbase URL's table_prefix does, with '_').")
@click.option("--json", "as_json", is_flag=True, help="Print the statements as a JSON list.")
def ddl(spec_dir, table_prefix, as_json):
    """Print HBase shell create statements (SPLITS on the 16 salt boundaries for salted tables)."""
    prefix = f"{table_prefix}_" if table_prefix else ""
    statements = admin.ddl_statements(load_specs(spec_dir), prefix)
    if as_json:
        echo_json(statements)
        return
    for statement in statements:
        click.echo(statement)


@tables.command()
@click.argument("names", nargs=-1)
@click.option("--yes", is_flag=True, help="Really drop (required).")
@click.option("--json", "as_json", is_flag=True)
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
@click.option("--json", "as_json", is_flag=True)
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
