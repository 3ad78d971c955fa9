"""Opening the bigtable backend: URLs, the app-profile option, credentials, emulator discovery."""

import os
import stat

import fixtures_bigtable
import pytest
from conftest import isolated_url

from socorro_store.backends import open_backend
from socorro_store.backends.base import RowMutation
from socorro_store.errors import ConfigError
from socorro_store.schema.specs import FamilySpec, TableSpec

pytest.importorskip("google.cloud.bigtable.data",
                    reason="bigtable extra not installed (pip install 'socorro-store[bigtable]')")


@pytest.mark.parametrize("url", [
    "bigtable://proj",                 # no instance
    "bigtable://proj/",                # empty instance
    "bigtable:///inst",                # no project
    "bigtable://proj/inst/extra",      # a path deeper than the instance
    "bigtable://proj/inst?profile=x",  # unknown option
])
def test_bad_urls_are_config_errors(url):
    with pytest.raises(ConfigError):
        open_backend(url)


def test_url_parts_reach_the_backend(bigtable_emulator_url):
    with open_backend("bigtable://my-project/my-instance?app_profile=batch-jobs") as backend:
        assert (backend.project, backend.instance_id, backend.app_profile) == \
            ("my-project", "my-instance", "batch-jobs")
        assert backend.emulator_host == os.environ["BIGTABLE_EMULATOR_HOST"]


def test_app_profile_is_sent_with_data_calls(bigtable_emulator_url, tmp_path):
    url = isolated_url("bigtable-emulator", bigtable_emulator_url, tmp_path) + "?app_profile=batch-jobs"
    with open_backend(url) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        backend.mutate_rows("t", [RowMutation(b"r", {b"cf:q": b"v"})])
        assert backend.get_row("t", b"r") == {b"cf:q": b"v"}
        # the data-API table carries the profile into every request it builds
        assert backend._table("t").app_profile_id == "batch-jobs"
    with open_backend(url.split("?")[0]) as plain:
        assert plain.app_profile is None
        assert plain._table("t").app_profile_id is None


def test_no_emulator_and_no_credentials_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.delenv("BIGTABLE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="BIGTABLE_EMULATOR_HOST"):
        open_backend("bigtable://proj/inst")


# -- the fixture's discovery of cbtemulator (no emulator needed) -------------------------------------

def test_cbtemulator_env_wins_and_must_be_executable(monkeypatch, tmp_path):
    fake = tmp_path / "cbtemulator"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("CBTEMULATOR", str(fake))
    assert fixtures_bigtable.find_emulator() is None  # not executable
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert fixtures_bigtable.find_emulator() == str(fake)


def test_cbtemulator_found_beside_gcloud(monkeypatch, tmp_path):
    sdk = tmp_path / "sdk"
    (sdk / "bin").mkdir(parents=True)
    binary = sdk / "platform" / "bigtable-emulator" / "cbtemulator"
    binary.parent.mkdir(parents=True)
    for path in (sdk / "bin" / "gcloud", binary):
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    monkeypatch.delenv("CBTEMULATOR", raising=False)
    monkeypatch.delenv("CLOUDSDK_ROOT_DIR", raising=False)
    monkeypatch.setenv("PATH", str(sdk / "bin"))
    monkeypatch.setattr(fixtures_bigtable, "SDK_ROOTS", [])
    assert fixtures_bigtable.find_emulator() == str(binary)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert fixtures_bigtable.find_emulator() is None
