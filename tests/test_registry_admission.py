"""The dimension registry holds at most its cap, however many processes admit at once (issue 39):
8 processes saving junk product names used to admit 793 products against a cap of 100, each
trusting its own cached view of the registry row.  An admission now claims one of the row's
slots with a check-and-put; the roll-up still brings in a product with volume."""

import multiprocessing
import random
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, raw_crash

from socorro_store import open_store
from socorro_store.backends.base import RowMutation
from socorro_store.crashstore import admission, dimensions
from socorro_store.jobs import registry, rollup
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K

DAY = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
CAP = dimensions.DIMENSION_CAPS["product"]
#: the kinds 8 processes race on (every kind runs the one-process races below)
KINDS = ["embedded", "gateway-buffered-binary", "gateway-framed-compact"]
PROCESSES = 8
PRODUCT_ROW = DK.registry_row("product")


def _save(store, n, seed, when=DAY, **fields):
    rng = random.Random(seed)
    items = []
    for i in range(n):
        cid = crash_id("0123456789abcdef"[i % 16], when, rng)
        items.append((raw_crash(cid, when + timedelta(seconds=i), **fields), {}, cid))
    store.save_raw_crashes(items)


def _save_junk(url, run, worker, names, barrier):
    """One process: its own store, saving one crash of each of ``names`` junk product names."""
    with open_store(url) as store:
        barrier.wait(120)  # every process past its imports and its first reads: they race
        for i in range(names):
            _save(store, 1, seed=(run * 100 + worker) * 10000 + i, ProductName=f"junk{run}-{worker}-{i:03d}")
        store.flush_counters()


def _run_processes(url, run, names):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    workers = [ctx.Process(target=_save_junk, args=(url, run, w, names, barrier)) for w in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(600)
    assert [w.exitcode for w in workers] == [0] * PROCESSES


def _registry_cells(backend, row=PRODUCT_ROW):
    return backend.get_row(K.SIGNATURES_SEEN, row, columns=[b"seen"])


@pytest.mark.parametrize("backend_kind", KINDS)
def test_eight_processes_saving_junk_products_hold_the_registry_to_its_cap(backend_url):
    with open_store(backend_url) as store:
        store.create_tables()
    _run_processes(backend_url, 1, CAP + 20)  # 960 distinct junk names
    with open_store(backend_url) as store:
        cells = _registry_cells(store.backend)
        assert len(cells) == CAP and len(dimensions.registry(store.backend)["product"]) == CAP
        # Firefox, arriving once the registry is full, counts as ##other## live; rollup admits
        # it by volume, the junk without volume leaves, and the reserve is left to arrivals
        _save(store, 40, seed=7 * 10**7, when=DAY + timedelta(hours=1), ProductName="Firefox")
        store.flush_counters()
        assert store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Firefox") == {}
        rollup.run_rollup(store.backend, until=DAY + timedelta(days=1), grace_s=0)
        admitted = dimensions.registry(store.backend)["product"]
        assert "Firefox" in admitted and len(admitted) == CAP - registry.reserve(CAP)
        assert store.get_metrics(DAY.strftime("%Y-%m-%d"), product="Firefox") == {"submitted_crash_reports": 40}
    # 8 processes racing for the reserve fill it, no more, and push nothing out
    _run_processes(backend_url, 2, 5)
    with open_store(backend_url) as store:
        admitted = dimensions.registry(store.backend)["product"]
        assert len(_registry_cells(store.backend)) == CAP and len(admitted) == CAP and "Firefox" in admitted


def test_views_read_before_each_others_admissions_share_one_cap(backend):
    """Two processes' views of the registry, each read while it was empty: together they admit
    the cap, not a cap each."""
    backend.create_table(_seen_spec())
    caps = {"product": 5, "version": 5, "os": 5}
    first, second = dimensions.Dimensions(caps), dimensions.Dimensions(caps)
    assert first.value(backend, "product", "a-0") == "a-0" and second.value(backend, "product", "b-0") == "b-0"
    counted = [view.value(backend, "product", f"{name}-{i}") for i in range(1, 5)
               for view, name in ((first, "a"), (second, "b"))]
    assert sum(value != DK.OTHER for value in counted) == 3  # the room left after a-0 and b-0
    assert len(_registry_cells(backend)) == 5
    assert set(dimensions.registry(backend)["product"]) == {"a-0", "b-0"} | {v for v in counted if v != DK.OTHER}
    # a value another view admitted is found, not admitted twice
    assert first.value(backend, "product", "b-0") == "b-0" and len(_registry_cells(backend)) == 5


def test_a_rollup_rewrite_racing_live_admissions_keeps_the_cap(backend, monkeypatch):
    """Live processes admit while the roll-up rewrites the registry (after its read, before its
    writes): none of them is overwritten past the cap, and the roll-up's values all get in."""
    backend.create_table(_seen_spec())
    monkeypatch.setitem(dimensions.DIMENSION_CAPS, "product", 4)
    stale = dimensions.Dimensions()
    assert stale.value(backend, "product", "junk-0") == "junk-0"  # read (and admitted into) early
    real_writes = {name: getattr(backend, name) for name in ("check_and_put_many", "mutate_rows")}
    raced = []

    def race_then(name):
        def write(*args, **kwargs):
            if not raced:
                raced.append("racing")  # once, and not again from the live admissions' own writes
                raced.extend(stale.value(backend, "product", f"live-{i}") for i in range(4))
            return real_writes[name](*args, **kwargs)
        return write

    for name in real_writes:
        monkeypatch.setattr(backend, name, race_then(name))
    registry.write_registry(backend, registry.Admission({"A", "B", "C"}, {}, set()))
    assert raced[1:].count(DK.OTHER) == 1  # junk-0 and three live values filled the row
    assert len(_registry_cells(backend)) <= 4
    assert set(dimensions.registry(backend)["product"]) == {"A", "B", "C"}


def test_value_columns_of_the_form_before_slots_count_against_the_cap(embedded_url):
    """A registry written before slots (``seen:<value>`` columns) stays admitted and full; the
    next roll-up moves what it keeps into slots."""
    with open_store(embedded_url) as store:
        backend = store.backend
        store.create_tables()
        old = {DK.registry_column(f"old-{i}"): b"1" for i in range(3)}
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(PRODUCT_ROW, old)])
        dims = dimensions.Dimensions({"product": 4, "version": 4, "os": 4})
        assert dims.value(backend, "product", "old-1") == "old-1"
        assert [dims.value(backend, "product", f"new-{i}") for i in range(3)] == ["new-0", DK.OTHER, DK.OTHER]
        assert len(_registry_cells(backend)) == 4
        admission.rewrite(backend, {PRODUCT_ROW: ({"old-2", "new-0", "X"}, 4)})
        cells = _registry_cells(backend)
        assert all(DK.parse_registry_slot(c) is not None for c in cells)
        assert DK.registry_values(cells) == {"old-2", "new-0", "X"}


def _seen_spec():
    from socorro_store.schema.spec_loader import load_specs  # noqa: PLC0415

    return load_specs()[K.SIGNATURES_SEEN]


def test_bulk_admissions_racing_each_other_keep_the_cap_and_lose_no_value(backend):
    """Two views admitting batches of new values at once (the deriver's admit_many), each from a
    read of the row taken before the other's claims: the row holds the cap, every value either
    admitted or refused by a full row, and a lost claim is retried value by value."""
    backend.create_table(_seen_spec())
    caps = {"product": 6, "version": 6, "os": 6}
    first, second = dimensions.Dimensions(caps), dimensions.Dimensions(caps)
    claims = backend.check_and_put_many
    raced = []

    def racing(table, items):  # the second view's bulk admission lands between the first's read and claims
        if not raced:
            raced.append(True)
            second.admit_many(backend, [("product", f"b-{i}", None) for i in range(4)])
        return claims(table, items)

    backend.check_and_put_many = racing
    try:
        first.admit_many(backend, [("product", f"a-{i}", None) for i in range(4)])
    finally:
        backend.check_and_put_many = claims
    answers = {f"{name}-{i}": view.value(backend, "product", f"{name}-{i}")
               for view, name in ((first, "a"), (second, "b")) for i in range(4)}
    admitted = {value for value, answer in answers.items() if answer != DK.OTHER}
    assert len(admitted) == 6 and len(_registry_cells(backend)) == 6  # the cap, exactly
    assert set(dimensions.registry(backend)["product"]) == admitted
