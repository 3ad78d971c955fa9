"""tools/ (kept out of the installed package): folders by purpose, small modules, no import circle,
and every tool still runs from its documented path."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
MODULES = sorted(p for p in TOOLS.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path):
    """``servers.local_hbase`` for tools/servers/local_hbase.py (tools/ is the import root)."""
    return ".".join(path.relative_to(TOOLS).with_suffix("").parts).removesuffix(".__init__")


def _imported(path, names):
    """The tools modules ``path`` imports, at module level or inside a function (a lazy import
    still makes a circle): by package (``servers.x``, ``from faults import y``) or by a bare name
    of its own folder (what ``python tools/F/x.py`` makes importable)."""
    folder = _name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            candidates = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for candidate in candidates:
            for name in (candidate, f"{folder}.{candidate}" if folder else candidate):
                if name in names and name != _name(path):
                    found.add(name)
    return found


def test_no_loose_tools_only_folders_by_purpose():
    assert [p.name for p in TOOLS.glob("*.py")] == []
    assert {"servers", "bench", "faults"} <= {p.name for p in TOOLS.iterdir() if p.is_dir()}


def test_tools_modules_stay_under_600_lines():
    sizes = {_name(p): len(p.read_text().splitlines()) for p in MODULES}
    assert {name: n for name, n in sizes.items() if n > 600} == {}


def test_tools_imports_have_no_circle():
    names = {_name(p) for p in MODULES}
    graph = {_name(p): _imported(p, names) for p in MODULES}
    circles = []

    def visit(node, stack):
        if node in stack:
            circles.append(stack[stack.index(node):] + [node])
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, stack + [node])

    for start in sorted(graph):
        visit(start, [])
    assert circles == []


def _runnable():
    return [p for p in MODULES if 'if __name__ == "__main__":' in p.read_text()]


@pytest.mark.parametrize("path", _runnable(), ids=lambda p: str(p.relative_to(TOOLS)))
def test_each_tool_runs_from_its_path(path, tmp_path):
    """``python tools/FOLDER/TOOL.py --help`` from elsewhere: its own imports resolve."""
    done = subprocess.run([sys.executable, str(path), "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()


@pytest.mark.parametrize("args", [[], ["--region-servers", "1"]], ids=["standalone", "cluster"])
def test_local_hbase_without_java_says_so_in_one_line(args, tmp_path):
    """The cluster's errors are the command's own class: when the command was a module the cluster
    imported back, ``python local_hbase.py`` ran as a second copy, its ``except HBaseUnavailable``
    missed the cluster's, and a missing Java ended in a traceback."""
    done = subprocess.run([sys.executable, str(TOOLS / "servers" / "local_hbase.py"), str(tmp_path / "hb"), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": str(tmp_path / "no-java-here")})
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith("local_hbase: "), done.stderr
    assert "java" in done.stderr
