"""Dates at the edges of the calendar on every web route and JSON API route that takes one
(issue 32, defect 13): ``/topcrashers/?day=9999-12-31`` and ``?day=0001-01-01`` answered 500
(the day's end, or the period before it, is not a datetime).  They answer 400 with the app's
error page / JSON error, as any other bad input does; the first and last days that have an
interval still answer 200.

``day`` is the only date a route takes (``/signature/`` and the reports read the clock); the
day is parsed in one place, :func:`socorro_store.schema.timeparse.parse_day`.
"""

from datetime import datetime, timezone

import pytest

from socorro_store import open_store

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import create_app  # noqa: E402

NOW = datetime(2016, 9, 18, 3, tzinfo=timezone.utc)
ROUTES = ["/topcrashers/?day={}", "/api/topcrashers?day={}"]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_store(f"embedded://{tmp_path_factory.mktemp('dates') / 'store'}") as store:
        store.create_tables()
        yield create_app(store, now=lambda: NOW).test_client()


def _error_of(response, route):
    """The message of the app's own error answer: the JSON ``error``, or the error page's."""
    if route.startswith("/api/"):
        assert response.mimetype == "application/json"
        return response.get_json()["error"]
    html = response.get_data(as_text=True)
    assert response.mimetype == "text/html" and '<h1 class="error">400</h1>' in html
    return html


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("day, words", [
    ("9999-12-31", "must be from 1000-01-01 to 9999-12-30"),  # its end, 10000-01-01, is no datetime
    ("0001-01-01", "must be from 1000-01-01 to 9999-12-30"),  # the period before it is no datetime
    ("0001-01-02", "must be from 1000-01-01 to 9999-12-30"),  # before the store's first time key
    ("0999-12-31", "must be from 1000-01-01 to 9999-12-30"),
    ("0000-01-01", "not a valid date"),
    ("2026-02-30", "not a valid date"),
    ("2026-13-01", "month must be in 1..12"),
    ("10000-01-01", "YYYY-MM-DD"),
    ("2016-09-18T01:00", "YYYY-MM-DD"),
])
def test_an_extreme_or_impossible_day_answers_400_with_the_reason(client, route, day, words):
    response = client.get(route.format(day))
    assert response.status_code == 400
    assert words in _error_of(response, route)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("day", ["1000-01-01", "9999-12-30", "2016-09-18"])  # timeparse.FIRST_DAY, LAST_DAY
def test_the_first_and_last_days_with_an_interval_answer_200(client, route, day):
    response = client.get(route.format(day))
    assert response.status_code == 200, response.get_data(as_text=True)[-500:]
    if route.startswith("/api/"):
        assert response.get_json()["period"] == day and response.get_json()["total"] == 0


def test_no_other_route_takes_a_date(client):
    """The routes that take no day answer as usual whatever day they are given (it is ignored)."""
    for path in ("/?day=9999-12-31", "/signature/?signature=x&day=9999-12-31",
                 "/api/signature?signature=x&day=0001-01-01", "/api/queue?day=9999-12-31"):
        assert client.get(path).status_code == 200, path
