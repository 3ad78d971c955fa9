"""The README's promises that a reader acts on: its library example runs, its links resolve."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_library_example_runs_as_written(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    section = text.split("## The library", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "embedded://./socorro-data" in example
    monkeypatch.chdir(tmp_path)  # the example's relative store directory lands here
    namespace = {}
    exec(compile(example.replace("time.sleep(1)", "time.sleep(0)"), "README.md", "exec"), namespace)
    store_dir = tmp_path / "socorro-data"
    assert (store_dir / "catalog.sqlite").exists()
    from socorro_store import open_store

    with open_store(f"embedded://{store_dir}") as store:
        crash_id = namespace["crash_id"]
        assert store.get_processed(crash_id)["signature"] == "js::GC::Mark"
        assert "url" not in store.get_processed(crash_id)
        assert store.get_processing_state(crash_id)["processed"] is True


def test_every_relative_link_resolves_inside_the_repo():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+://", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if not (page.parent / path).resolve().exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 350


def test_every_tools_path_the_pages_name_exists():
    missing = sorted({f"{page.relative_to(ROOT)}: {path}" for page in PAGES
                      for path in re.findall(r"\btools/[\w/]+\.py\b", page.read_text())
                      if not (ROOT / path).exists()})
    assert missing == []


def test_the_readme_names_no_issue_or_work_period():
    text = (ROOT / "README.md").read_text()
    assert re.findall(r"\b(?:issues?|sessions?|rounds?|parts?)\s+#?\d+", text, re.I) == []


def test_the_performance_table_has_one_row_per_benchmark_with_its_command():
    section = (ROOT / "README.md").read_text().split("\n## Performance\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| benchmark |")]
    assert rows and all(len(row) == 3 for row in rows), rows
    names, commands = [row[0] for row in rows], [row[1] for row in rows]
    assert len(set(names)) == len(names) and len(set(commands)) == len(commands)
    assert all(command.startswith("`") and "…" not in command.split()[0] for command in commands), commands
    assert [row for row in rows if re.search(r"\bbefore\b|\bthe same, ", " ".join(row))] == []
