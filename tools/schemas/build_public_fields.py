"""Build ``socorro_store/web/public_fields.json`` from Socorro's schemas, and measure the report.

    # a clone (or bare mirror) of mozilla-services/socorro: the schemas at REV, and REV's commit
    PYTHONPATH=. python tools/schemas/build_public_fields.py build --socorro PATH [--rev HEAD]
    # or a plain copy of the two files, with the commit they came from
    PYTHONPATH=. python tools/schemas/build_public_fields.py build --schemas DIR --commit SHA

    PYTHONPATH=. python tools/schemas/build_public_fields.py measure [--public-fields FILE]

``build`` writes two files, both naming the schemas' commit: the allowlist the web view loads
(``--out``, default the package's ``public_fields.json``) and the schemas' skeleton (``--skeleton``,
default ``tests/data/socorro_schema_fields.json``: field names, types and permissions, no
descriptions), which the tests and ``measure`` use offline.  ``measure`` saves a crash filling
every field of the skeleton and compares ``/api/report`` with what crash-stats shows publicly
(:mod:`report_coverage`); it exits 1 below ``--target`` (0.95) or when any protected value shows.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import socorro_schemas as schemas
import yaml_subset

ROOT = Path(__file__).resolve().parents[2]
FILES = {"raw_crash": "socorro/schemas/raw_crash.schema.yaml",
         "processed_crash": "socorro/schemas/processed_crash.schema.yaml"}
REPOSITORY = "https://github.com/mozilla-services/socorro"
OUT = ROOT / "socorro_store" / "web" / "public_fields.json"
SKELETON = ROOT / "tests" / "data" / "socorro_schema_fields.json"
ABOUT = ("The fields `socorro-store web` shows without --unredacted: an allowlist built by "
         "tools/schemas/build_public_fields.py from the public permissions of Socorro's raw_crash and "
         "processed_crash schemas (source: the commit below), as crash-stats applies them: a field is listed "
         "when it and every object above it are public. A name not listed here is shown only with "
         "--unredacted. A dotted path allows one key inside an object (lists are stepped through: "
         "json_dump.threads.frames.function); * stands for any key (the schemas' ^.+$ pattern). "
         "Replace this file with `web --public-fields FILE`.")


def _git(socorro, *args):
    done = subprocess.run(["git", "-C", str(socorro), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout


def read_schemas(args):
    """``({kind: parsed schema}, commit)`` from ``--socorro`` (git) or ``--schemas`` (files)."""
    if args.socorro:
        commit = _git(args.socorro, "rev-parse", f"{args.rev}^{{commit}}").strip()
        texts = {kind: _git(args.socorro, "show", f"{commit}:{path}") for kind, path in FILES.items()}
    else:
        if not args.commit:
            raise SystemExit("--schemas needs --commit: the Socorro commit the files come from")
        commit = args.commit
        texts = {kind: (Path(args.schemas) / Path(path).name).read_text(encoding="utf-8")
                 for kind, path in FILES.items()}
    return {kind: yaml_subset.loads(text, FILES[kind]) for kind, text in texts.items()}, commit


def source(commit):
    return {"repository": REPOSITORY, "commit": commit, "files": list(FILES.values())}


def allowlist(skeletons, commit):
    """The ``public_fields.json`` document of the two skeletons."""
    return {"about": ABOUT, "source": source(commit),
            **{kind: schemas.public_paths(skeletons[kind]) for kind in FILES}}


def _dumps(value, indent=0):
    """JSON with one line per schema field: a node without fields inside it stays on its line."""
    if isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()):
        pad = " " * (indent + 1)
        items = [f"{pad}{json.dumps(k)}: {_dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return json.dumps(value, ensure_ascii=False)


def _write(path, document, compact=False):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    text = _dumps(document) if compact else json.dumps(document, indent=1, ensure_ascii=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def build(args):
    parsed, commit = read_schemas(args)
    skeletons = {kind: schemas.skeleton(schema) for kind, schema in parsed.items()}
    _write(args.skeleton, {"about": "Socorro's crash schemas reduced to field names, types and permissions "
                                    "(tools/schemas/build_public_fields.py); the descriptions stay in Socorro.",
                           "source": source(commit), **skeletons}, compact=True)
    document = allowlist(skeletons, commit)
    _write(args.out, document)
    print(f"{args.out}: {len(document['raw_crash'])} raw_crash and {len(document['processed_crash'])} "
          f"processed_crash paths from {REPOSITORY} at {commit}")


def measure(args):
    import report_coverage

    skeletons = json.loads(Path(args.skeleton).read_text(encoding="utf-8"))
    result = report_coverage.measure(skeletons, public_fields=args.public_fields)
    print(f"shown {result['shown']} of {result['public']} public values ({result['coverage']:.1%}), "
          f"{result['protected']} protected values shown")
    for path in result["protected_paths"]:
        print(f"  protected: {path}")
    for path in result["missing"]:
        print(f"  missing: {path}")
    return 0 if result["coverage"] >= args.target and not result["protected"] else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="write public_fields.json and the schema skeleton")
    where = make.add_mutually_exclusive_group(required=True)
    where.add_argument("--socorro", help="a clone or bare mirror of mozilla-services/socorro")
    where.add_argument("--schemas", help="a directory holding the two schema files")
    make.add_argument("--rev", default="HEAD", help="with --socorro: the revision to read (default HEAD)")
    make.add_argument("--commit", help="with --schemas: the Socorro commit the files come from")
    make.add_argument("--out", default=str(OUT))
    make.add_argument("--skeleton", default=str(SKELETON))
    check = commands.add_parser("measure", help="compare /api/report with crash-stats' public view")
    check.add_argument("--skeleton", default=str(SKELETON))
    check.add_argument("--public-fields", default=None, help="the allowlist to measure (default: the package's)")
    check.add_argument("--target", type=float, default=0.95)
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args)
        return 0
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
