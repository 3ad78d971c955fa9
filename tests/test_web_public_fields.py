"""The public report by Socorro's own rules (issue 39, part 4): ``web/public_fields.json`` is built
from the permissions of Socorro's schemas (tools/schemas/build_public_fields.py), ``/api/report``
shows every path it lists, and for a crash filling every schema field it shows what crash-stats
shows publicly (at least 95 % of the values) and nothing protected.  All offline: the schemas'
skeleton (names, types, permissions) is ``tests/data/socorro_schema_fields.json``.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from socorro_store import open_store

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402
from socorro_store.web.public_fields import DEFAULT_FILE, PublicFields  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "schemas"
sys.path.insert(0, str(TOOL))
import report_coverage  # noqa: E402
import socorro_schemas  # noqa: E402
import yaml_subset  # noqa: E402

SKELETON = json.loads((ROOT / "tests" / "data" / "socorro_schema_fields.json").read_text(encoding="utf-8"))
ALLOWLIST = json.loads(DEFAULT_FILE.read_text(encoding="utf-8"))
KINDS = ("raw_crash", "processed_crash")
CRASH_ID = "de1bb258-cbbf-4589-a673-34f802161118"
NODE_KEYS = {"type", "permissions", "properties", "pattern_properties", "items", "$ref"}


def test_the_file_names_its_source_and_lists_sorted_paths():
    assert set(ALLOWLIST) == {"about", "source", *KINDS}
    source = ALLOWLIST["source"]
    assert source["repository"] == "https://github.com/mozilla-services/socorro"
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert source == SKELETON["source"]  # the allowlist and the fixture come from the same schemas
    for kind in KINDS:
        paths = ALLOWLIST[kind]
        assert paths == sorted(set(paths), key=lambda p: (p.lower(), p))
        assert all(re.fullmatch(r"[^.\s]+(\.[^.\s]+)*", p) for p in paths)
    PublicFields.load()  # the web view reads it


def test_the_skeleton_holds_names_types_and_permissions_only():
    def nodes(node):
        yield node
        for key in ("properties", "pattern_properties"):
            for child in node.get(key, {}).values():
                yield from nodes(child)
        if "items" in node:
            yield from nodes(node["items"])

    for kind in KINDS:
        schema = SKELETON[kind]
        assert set(schema) <= NODE_KEYS | {"default_permissions", "definitions"}
        top_level = {k: v for k, v in schema.items() if k not in ("default_permissions", "definitions")}
        for top in [top_level, *schema.get("definitions", {}).values()]:
            for node in nodes(top):
                assert set(node) <= NODE_KEYS, sorted(set(node) - NODE_KEYS)
                assert all(isinstance(p, str) for p in node.get("permissions", []))


@pytest.mark.parametrize("kind", KINDS)
def test_the_allowlist_is_the_schemas_public_permissions(kind):
    assert ALLOWLIST[kind] == socorro_schemas.public_paths(SKELETON[kind])


def test_the_fields_the_issue_found_missing_are_listed_under_the_schemas_names():
    fields = PublicFields.load()
    for path in ("json_dump.crash_info.instruction", "json_dump.crash_info.memory_accesses.address",
                 "json_dump.crash_info.possible_bit_flips.confidence", "json_dump.crash_info.crash_inconsistencies",
                 "json_dump.threads.frames.unloaded_modules.module", "json_dump.threads.frames.truncated.msg",
                 "json_dump.crashing_thread.threads_index", "java_exception.exception.values.stacktrace.type",
                 "upload_file_minidump_browser.json_dump.modules.filename", "json_dump.unloaded_modules.filename",
                 "json_dump.unloaded_modules.base_addr", "json_dump.unloaded_modules.end_addr",
                 "json_dump.unloaded_modules.cert_subject", "telemetry_environment.addons.activeAddons.x@y.name"):
        assert fields.allows("processed_crash", path), path
    assert fields.allows("raw_crash", "Add-ons")
    for path in ("json_dump.unloaded_modules.module", "json_dump.unloaded_modules.base_addresses",
                 "java_exception.exception.values.stacktrace.value", "json_dump.crash_info.memory_accesses.is_likely_guard_page",
                 "upload_file_minidump_browser.json_dump.threads.frames.registers", "json_dump.mac_boot_args"):
        assert not fields.allows("processed_crash", path), path


def _document(paths, tag):
    """A document holding a distinct value at every listed path (``*`` as a made-up key), and an
    unlisted sibling next to each object's listed keys (where not any key is listed)."""
    document, expected = {}, {}
    any_key = {path.rsplit(".*", 1)[0].replace("*", "anykey") for path in paths if path.endswith(".*")}
    for number, path in enumerate(paths):
        parts = ["anykey" if part == "*" else part for part in path.split(".")]
        here = document
        for depth, part in enumerate(parts[:-1]):
            sibling = {} if ".".join(parts[:depth + 1]) in any_key else {"zz_unlisted": "secret"}
            here = here.setdefault(part, sibling)
            if not isinstance(here, dict):
                break
        else:
            here[parts[-1]] = expected[".".join(parts)] = f"{tag}{number}"
    return document, expected


def _api_report(tmp_path, raw, processed, public_fields=None):
    with open_store(f"embedded://{tmp_path / 'store'}") as store:
        store.create_tables()
        store.save_raw_crash(raw, {}, CRASH_ID)
        store.save_processed(processed)
        return create_app(store, public_fields=public_fields).test_client().get(f"/api/report/{CRASH_ID}").get_json()


def _raw(document, expected):
    """The raw crash the store takes (its id and submission time), and what to expect of it."""
    fixed = {"uuid": CRASH_ID, "submitted_timestamp": "2016-11-18T13:00:05+00:00"}
    expected.update({k: v for k, v in fixed.items() if k in expected})
    return {**document, **fixed}


def _processed(document, expected=None):
    fixed = {"uuid": CRASH_ID, "date_processed": "2016-11-18T13:00:06+00:00", "signature": "sig"}
    if expected is not None:
        expected.update({k: v for k, v in fixed.items() if k in expected})
    return {**document, **fixed, "completeddatetime": "2016-11-18T13:00:08+00:00"}


@pytest.mark.parametrize("which", ["default", "replaced"])
def test_the_report_shows_every_listed_path(tmp_path, which):
    listed = ALLOWLIST
    public_fields = None
    if which == "replaced":  # --public-fields still replaces the whole file, `*` paths included
        listed = {"raw_crash": ["ProductName", "Custom"], "processed_crash": ["a.*.b", "a.fixed.c", "json_dump.pid"]}
        public_fields = tmp_path / "fields.json"
        public_fields.write_text(json.dumps(listed))
    raw, raw_expected = _document(listed["raw_crash"], "r")
    raw = _raw(raw, raw_expected)
    processed, expected = _document(listed["processed_crash"], "p")
    processed = _processed(processed, expected)
    report = _api_report(tmp_path, raw, processed, public_fields and str(public_fields))
    shown_raw = socorro_schemas.leaves(report["raw_crash"])
    shown = socorro_schemas.leaves(report["processed_crash"])
    assert {p: shown_raw.get(p) for p in raw_expected} == raw_expected
    assert {p: shown.get(p) for p in expected} == expected
    assert "secret" not in json.dumps(report)
    if which == "replaced":
        assert set(shown) == set(expected) and report["processed_crash"]["a"] == {"anykey": {"b": "p0"}, "fixed": {"c": "p1"}}


def test_a_crash_filling_every_schema_field_shows_what_crash_stats_shows_publicly(tmp_path):
    result = report_coverage.measure(SKELETON, directory=tmp_path)
    assert result["public"] > 900  # the crash fills both schemas
    assert result["protected_paths"] == []
    assert result["coverage"] >= 0.95, result["missing"]


def test_an_allowlist_of_names_the_schema_lacks_is_measured_short(tmp_path):
    # the measure itself can fail: the allowlist of names the schemas do not have (as before)
    old = dict(ALLOWLIST, processed_crash=[p for p in ALLOWLIST["processed_crash"]
                                           if not p.startswith(("json_dump.unloaded_modules", "upload_file_minidump_browser"))]
               + ["json_dump.unloaded_modules.module", "json_dump.unloaded_modules.base_addresses", "url"])
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    result = report_coverage.measure(SKELETON, public_fields=str(path), directory=tmp_path)
    assert result["coverage"] < 0.95 and "processed_crash.json_dump.unloaded_modules.0.filename" in result["missing"]


def test_the_wildcard_allows_any_key_and_a_named_key_wins():
    fields = PublicFields(["a"], ["env.addons.*.name", "env.addons.special.id", "prefs.*"])
    kept, withheld = fields.public("processed_crash", {
        "env": {"addons": {"x@y": {"name": "X", "secret": 1}, "special": {"name": "S", "id": "i"}}},
        "prefs": {"p1": True, "p2": "v"}, "other": 1})
    assert kept == {"env": {"addons": {"x@y": {"name": "X"}, "special": {"id": "i"}}}, "prefs": {"p1": True, "p2": "v"}}
    assert withheld == 3
    assert fields.allows("processed_crash", "env.addons.anything.name")
    assert not fields.allows("processed_crash", "env.addons.special.name")


def test_a_null_where_an_object_is_listed_is_shown_as_crash_stats_shows_it():
    fields = PublicFields.load()
    kept, withheld = fields.public("processed_crash", {"json_dump": {"crash_info": None, "system_info": "odd"},
                                                       "java_exception": None})
    assert kept == {"json_dump": {"crash_info": None}, "java_exception": None} and withheld == 1


SCHEMA = """\
# a comment
---
$schema: moz://mozilla.org/schemas/socorro/socorro-data/1-0-0
type: object
default_permissions: ["public", "protected"]
definitions:
  frame:
    type: object
    properties:
      function:
        description: >
          Folded text: with a colon,
          over two lines.
        type: ["string", "null"]
        permissions: ["public"]
      registers:
        type: object
        pattern_properties:
          ^.+$:
            type: string
            permissions: ["protected"]
        permissions: ["protected"]
properties:
  ProductName:
    description: |
      Literal
        text # not a comment

    data_reviews:
      - name: review
        url: 'https://example.com/#anchor'
      - plain item
    type: string
    permissions: ["public"]  # trailing comment
  Secret:
    description:
      Plain text on the next line.
    type: string
  dump:
    type: object
    permissions: ["public"]
    properties:
      frames:
        type: array
        permissions: ["public"]
        items:
          $ref: "#/definitions/frame"
          permissions: ["public"]
      nothing_public:
        type: object
        permissions: ["public"]
        properties:
          inner:
            type: integer
            permissions: ["protected"]
      anything:
        type: ["any"]
        permissions: ["public"]
"""


def test_the_yaml_reader_reads_what_the_schemas_use():
    schema = yaml_subset.loads(SCHEMA, "test.yaml")
    product = schema["properties"]["ProductName"]
    assert product["description"] == "Literal\n  text # not a comment\n"
    assert product["data_reviews"] == [{"name": "review", "url": "https://example.com/#anchor"}, "plain item"]
    assert product["permissions"] == ["public"]
    assert schema["properties"]["Secret"]["description"] == "Plain text on the next line."
    assert schema["definitions"]["frame"]["properties"]["function"]["description"] == "Folded text: with a colon, over two lines.\n"
    for bad in ("a: &anchor 1\n", "a: 1\n  b: 2\n", "a: {b: 1}\n", "a: 1\na: 2\n", "a: 1\n---\nb: 2\n"):
        with pytest.raises(ValueError):
            yaml_subset.loads(bad, "bad.yaml")


def test_public_paths_follow_crash_stats_rules():
    schema = socorro_schemas.skeleton(yaml_subset.loads(SCHEMA, "test.yaml"))
    # Secret takes the default (protected); an object with nothing public is not listed at all
    assert socorro_schemas.public_paths(schema) == ["dump.anything", "dump.frames.function", "ProductName"]
    document = socorro_schemas.full_document(schema)
    public = socorro_schemas.reduce_public(dict(document, Unknown="x"), schema)
    assert set(public) == {"ProductName", "dump"} and set(public["dump"]) == {"frames", "anything"}
    assert all(set(frame) == {"function"} for frame in public["dump"]["frames"])


def test_the_tool_builds_both_files_from_a_copy_of_the_schemas(tmp_path):
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "raw_crash.schema.yaml").write_text(SCHEMA)
    (schemas / "processed_crash.schema.yaml").write_text(SCHEMA.replace("ProductName", "product"))
    out, skeleton = tmp_path / "public_fields.json", tmp_path / "skeleton.json"
    command = [sys.executable, str(TOOL / "build_public_fields.py"), "build", "--schemas", str(schemas),
               "--out", str(out), "--skeleton", str(skeleton)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode != 0 and "--commit" in done.stderr  # the source commit is required
    done = subprocess.run(command + ["--commit", "a" * 40], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    built = json.loads(out.read_text())
    assert built["source"]["commit"] == "a" * 40 and built["processed_crash"][-1] == "product"
    assert "Folded" not in skeleton.read_text() and PublicFields.load(out).allows("raw_crash", "ProductName")


def test_the_report_page_shows_the_sections_crash_stats_shows(tmp_path):
    frames = [{"frame": 0, "module": "xul.dll", "function": "f", "file": "a.cpp", "line": 3, "registers": {"rip": "0xdeadbeef"}},
              {"truncated": {"msg": "12 frames truncated"}}]
    processed = _processed({
        "crashing_thread": 0, "possible_bit_flips_max_confidence": 87, "crash_inconsistencies": ["crashing_thread_mismatch"],
        "addons": ["ext@example.com:1.2", "other@example.com:2.0"],
        "telemetry_environment": {"addons": {"activeAddons": {"ext@example.com": {"name": "Ext", "isSystem": False,
                                                                                    "signedState": 2}}}},
        "java_exception": {"exception": {"values": [{"stacktrace": {
            "module": "java.lang", "type": "IllegalStateException", "value": "protected message",
            "frames": [{"module": "org.mozilla.Foo", "function": "bar", "filename": "Foo.java", "lineno": 42, "in_app": True}]}}]}},
        "json_dump": {"crashing_thread": {"threads_index": 3, "thread_name": "Main", "frames": frames},
                      "unloaded_modules": [{"filename": "gone.dll", "code_id": "C0DE", "cert_subject": "Signer Inc.",
                                            "base_addr": "0x10", "end_addr": "0x20"}],
                      "crash_info": {"instruction": "mov eax, [ebx]", "memory_accesses": [{"address": "0x8", "size": 4}]}}})
    with open_store(f"embedded://{tmp_path / 'store'}") as store:
        store.create_tables()
        store.save_raw_crash(_raw({"ProductName": "Fenix", "Add-ons": "ext%40example.com:1.2"}, {}), {}, CRASH_ID)
        store.save_processed(processed)
        client = create_app(store).test_client()
        html = client.get(f"/report/index/{CRASH_ID}").get_data(as_text=True)
        api = client.get(f"/api/report/{CRASH_ID}").get_json()
    assert "<h2>Exception: java.lang.IllegalStateException</h2>" in html and "protected message" not in html
    assert '<td class="function">bar</td><td class="source">Foo.java:42</td><td>yes</td>' in html
    assert "Crashing thread (3, Main)" in html and '<tr class="truncated"><td colspan="4">12 frames truncated</td></tr>' in html
    assert "<td>gone.dll</td><td><code>C0DE</code></td><td>Signer Inc.</td>" in html
    assert "<td>ext@example.com</td><td>Ext</td><td>1.2</td><td>no</td><td>SIGNEDSTATE_SIGNED</td>" in html
    assert "<td>other@example.com</td><td></td><td>2.0</td>" in html
    assert re.search(r"<th>Possible Bit Flips Max Confidence</th><td>87%</td>", html)
    assert "crashing_thread_mismatch" in html and "0xdeadbeef" not in html
    dump = api["processed_crash"]["json_dump"]
    assert dump["crash_info"] == {"instruction": "mov eax, [ebx]", "memory_accesses": [{"address": "0x8", "size": 4}]}
    assert dump["unloaded_modules"][0]["end_addr"] == "0x20" and api["raw_crash"]["Add-ons"] == "ext%40example.com:1.2"
    assert [e["type"] for e in api["java_exception"]] == ["IllegalStateException"]
