"""Session fixture: Google's Bigtable emulator on a free loopback port."""

import pytest


@pytest.fixture(scope="session")
def bigtable_emulator_url():
    pytest.skip("bigtable backend not built yet (issue 6)")
