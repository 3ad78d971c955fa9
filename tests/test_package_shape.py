"""The installed package's shape: layered imports, small modules, no test harness inside."""

import ast
from pathlib import Path

import socorro_store

PACKAGE = Path(socorro_store.__file__).parent
# Rank of each part of the package: a module imports only lower ranks, or its own folder.
RANKS = {"errors": 0, "checks": 0, "config": 1, "schema": 1, "engine": 2, "backends": 3, "gateway": 3,
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
