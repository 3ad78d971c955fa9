"""The installed package's shape: layered imports, small modules, no test harness inside."""

import ast
from pathlib import Path

import socorro_store

PACKAGE = Path(socorro_store.__file__).parent
# Rank of each part of the package: a module imports only lower ranks, or its own folder.
RANKS = {"errors": 0, "checks": 0, "files": 0, "config": 1, "schema": 1, "engine": 2, "backends": 3, "gateway": 3, "search": 3,
         "crashstore": 4, "jobs": 5, "web": 5, "demo": 6, "cli": 7, "__init__": 8, "__main__": 9}


def _part(module_parts):
    return module_parts[0] if module_parts else "__init__"


def _imports(path):
    """Parts of socorro_store that the module at ``path`` imports."""
    here = path.relative_to(PACKAGE).with_suffix("").parts
    package = here[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = base + tuple(node.module.split(".")) if node.module else base
                names = [target + (alias.name,) for alias in node.names] if not node.module else [target]
            elif node.module and node.module.split(".")[0] == "socorro_store":
                names = [tuple(node.module.split(".")[1:])]
            else:
                continue
            for name in names:
                yield node.lineno, name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "socorro_store":
                    yield node.lineno, tuple(alias.name.split(".")[1:])


def test_imports_point_down_only():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        here = path.relative_to(PACKAGE).with_suffix("").parts
        mine = _part(here)
        for lineno, target in _imports(path):
            theirs = _part(target)
            if theirs == mine and len(here) > 1:
                continue  # within one folder
            if RANKS[theirs] >= RANKS[mine] and not (mine == theirs == "__init__"):
                wrong.append(f"{path.relative_to(PACKAGE)}:{lineno} imports {'.'.join(target)}")
    assert wrong == []


def test_modules_stay_small_and_few_lie_loose():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 600} == {}
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(loose) <= 8, loose


def test_no_test_harness_in_the_package():
    names = {p.name for p in PACKAGE.rglob("*.py")}
    assert not names & {"chaos.py", "chaos_harness.py", "faultproxy.py"}


def test_the_hbase_backends_are_one_folder_reached_through_the_contract_only():
    """``backends/hbase/`` holds both HBase backends, their pool, admin and IDL; outside it only
    ``backends/__init__.py`` (``open_backend``) imports it, the rest of the package imports the
    contract (``backends``, ``backends.base``), and ``hbase/`` itself only the contract."""
    backends = PACKAGE / "backends"
    assert not sorted(p.name for p in backends.glob("*") if "hbase" in p.name and p.is_file())
    assert {p.name for p in (backends / "hbase").glob("*.thrift")} == {"thrift2.thrift"}
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        here = path.relative_to(PACKAGE).with_suffix("").parts
        for lineno, target in _imports(path):
            if target[:1] != ("backends",) or target[:2] in (("backends",), ("backends", "base")):
                continue
            if here[:2] == ("backends", "hbase"):
                allowed = target[:2] == ("backends", "hbase")
            elif here[:1] == ("backends",):
                allowed = target[:2] != ("backends", "hbase") or here == ("backends", "__init__")
            else:
                allowed = False
            if not allowed:
                wrong.append(f"{path.relative_to(PACKAGE)}:{lineno} imports {'.'.join(target)}")
    assert wrong == []


def test_every_folder_of_the_package_is_installed():
    """pyproject.toml lists the packages by name: a new folder left out imports in an editable
    install and is missing from a real one (``socorro_store.search`` was)."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(("socorro_store",) + p.parent.relative_to(PACKAGE).parts) if p.parent != PACKAGE
               else "socorro_store" for p in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()
