"""The dimension registry admits by volume (rollup), not by arrival; operators keep products;
old versions age out (issue 32, defect 5)."""

import json
import random
from datetime import timedelta

import pytest
from cli_helpers import fails, ok, run
from store_helpers import BASE_TIME, crash_id, raw_crash

from socorro_store import open_store
from socorro_store.crashstore import dimensions
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import registry, rollup
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K

DAY = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
CAP = dimensions.DIMENSION_CAPS["product"]


@pytest.fixture
def store(embedded_url):
    with open_store(embedded_url, background_counters=False) as opened:
        opened.create_tables()
        yield opened


def _save(store, day, n, seed, **fields):
    rng = random.Random(seed)
    items = []
    for i in range(n):
        cid = crash_id("0123456789abcdef"[i % 16], day, rng)
        items.append((raw_crash(cid, day + timedelta(seconds=i), **fields), {}, cid))
    store.save_raw_crashes(items)


def test_junk_products_first_do_not_push_the_real_one_out_for_good(store):
    """100 junk product names fill the registry by arrival; Firefox, arriving later with more
    crashes, counts as ##other## live, and rollup admits it by volume and recounts its day."""
    for i in range(CAP):
        _save(store, DAY, 1, seed=i, ProductName=f"junk-{i:03d}")
    _save(store, DAY, 30, seed=1000, ProductName="Firefox")
    assert store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Firefox") == {}  # over the cap: ##other##
    rollup.run_rollup(store.backend, until=DAY + timedelta(days=1), grace_s=0)
    assert store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Firefox") == {"submitted_crash_reports": 30}
    admitted = dimensions.registry(store.backend)["product"]
    assert "Firefox" in admitted and len(admitted) == CAP - registry.reserve(CAP)
    # live, the registry now has room (its reserve): a new product is admitted by arrival
    store.live_counters.dimensions.forget()
    _save(store, DAY + timedelta(hours=2), 1, seed=2000, ProductName="Thunderbird")
    assert store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Thunderbird") == {"submitted_crash_reports": 1}


def test_versions_no_crash_used_in_the_window_age_out(store):
    _save(store, DAY, 3, seed=1, Version="1.0")
    later = DAY + timedelta(days=registry.WINDOW_DAYS + 5)
    _save(store, later, 3, seed=2, Version="2.0")
    rollup.run_rollup(store.backend, until=later + timedelta(days=1), grace_s=0)
    assert dimensions.registry(store.backend)["versions"]["Firefox"] == ["2.0"]
    # the old day keeps counting its version: it was admitted in that day's window
    old = store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Firefox", version="1.0")
    assert old == {"submitted_crash_reports": 3}


def test_kept_products_stay_whatever_their_volume(store):
    for i in range(CAP):
        _save(store, DAY, 2, seed=i, ProductName=f"busy-{i:03d}")
    _save(store, DAY, 1, seed=999, ProductName="Rare")
    assert dimensions.keep_products(store.backend, ["Rare"]) == ["Rare"]
    rollup.run_rollup(store.backend, until=DAY + timedelta(days=1), grace_s=0)
    assert "Rare" in dimensions.registry(store.backend)["product"]
    assert store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Rare") == {"submitted_crash_reports": 1}
    assert dimensions.unkeep_products(store.backend, ["Rare"]) == []
    rollup.run_rollup(store.backend, until=DAY + timedelta(days=1), grace_s=0, since=DAY)
    assert "Rare" not in dimensions.registry(store.backend)["product"]  # by volume only now


def test_a_bad_product_name_is_refused_and_nothing_is_written(store):
    before = dict(store.backend.scan(K.SIGNATURES_SEEN))
    for bad in ["", "   ", DK.OTHER, 3]:
        with pytest.raises(InvalidArgument):
            dimensions.keep_products(store.backend, ["Firefox", bad])
    assert dict(store.backend.scan(K.SIGNATURES_SEEN)) == before


def test_cli_keeps_products_by_name_and_by_file(embedded_url, tmp_path):
    ok(run(embedded_url, "tables", "create"))
    assert ok(run(embedded_url, "dimensions", "keep", "Firefox", "Fennec")).strip() == "kept: Fennec, Firefox"
    listed = tmp_path / "products.txt"
    listed.write_text("# the products we ship\nFirefox\nThunderbird  # mail\n\n")
    kept = json.loads(ok(run(embedded_url, "dimensions", "keep", "--file", str(listed), "--json")))
    assert kept == {"kept": ["Firefox", "Thunderbird"]}  # the file replaces the list
    shown = ok(run(embedded_url, "dimensions", "show"))
    # Fennec stays admitted until a rollup finds it has no volume
    assert "kept: Firefox, Thunderbird" in shown and "products (3/100): Fennec, Firefox, Thunderbird" in shown
    assert ok(run(embedded_url, "dimensions", "unkeep", "Firefox")).strip() == "kept: Thunderbird"
    assert "not a product name" in fails(run(embedded_url, "dimensions", "keep", "##other##"), 2)
    assert "name at least one product" in fails(run(embedded_url, "dimensions", "keep"), 2)
