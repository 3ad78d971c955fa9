"""``dimensions show|keep|unkeep``: the product, version and OS values counted under their name."""

import click

from ..crashstore import dimensions
from ..errors import InvalidArgument
from .common import SummaryGroup, echo_json, open_existing_store


@click.group("dimensions", cls=SummaryGroup)
def dimensions_group():
    """The values counted under their own name (the rest as ##other##); rollup admits by volume."""


@dimensions_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def show(ctx, as_json):
    """The products, versions and OS names admitted now, and the products kept."""
    with open_existing_store(ctx) as store:
        found = dimensions.registry(store.backend)
    if as_json:
        echo_json(found)
        return
    caps = found["caps"]
    click.echo(f"products ({len(found['product'])}/{caps['product']}): {', '.join(found['product']) or '-'}")
    for product, versions in found["versions"].items():
        click.echo(f"  {product} versions ({len(versions)}/{caps['version']}): {', '.join(versions) or '-'}")
    click.echo(f"os ({len(found['os'])}/{caps['os']}): {', '.join(found['os']) or '-'}")
    click.echo(f"kept: {', '.join(found['kept']) or '-'}")


def _names(names, from_file):
    """The product names given, then those of ``from_file`` (one per line; ``#`` comments)."""
    names = list(names)
    if from_file is not None:
        for line in from_file.read().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    if not names and from_file is None:
        raise InvalidArgument("name at least one product, or --file FILE")
    return names


@dimensions_group.command("keep")
@click.argument("products", nargs=-1)
@click.option("--file", "from_file", type=click.File("r"), default=None,
              help="Products to keep, one per line (# comments): the keep list becomes exactly these.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def keep(ctx, products, from_file, as_json):
    """Always count PRODUCTS under their own name, whatever their volume."""
    names = _names(products, from_file)
    with open_existing_store(ctx) as store:
        kept = dimensions.keep_products(store.backend, names, replace=from_file is not None)
    _echo_kept(kept, as_json)


@dimensions_group.command("unkeep")
@click.argument("products", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def unkeep(ctx, products, as_json):
    """Stop keeping PRODUCTS: from the next rollup they stay by volume only."""
    with open_existing_store(ctx) as store:
        kept = dimensions.unkeep_products(store.backend, list(products))
    _echo_kept(kept, as_json)


def _echo_kept(kept, as_json):
    if as_json:
        echo_json({"kept": kept})
    else:
        click.echo(f"kept: {', '.join(kept) or '-'}")


COMMANDS = [dimensions_group]
