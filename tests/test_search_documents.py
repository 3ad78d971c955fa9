"""What a search document holds: fields.document_of keeps only values every engine holds alike."""

from socorro_store.search.fields import MAX_INTEGER, MAX_STRING_CHARS, document_of


def test_strings_up_to_lucenes_term_limit_are_kept_longer_ones_left_out():
    assert document_of({"signature": "x" * MAX_STRING_CHARS})["signature"] == "x" * MAX_STRING_CHARS
    assert "signature" not in document_of({"signature": "x" * (MAX_STRING_CHARS + 1)})
    assert "signature" not in document_of({"signature": "a\ud800b"})  # a lone surrogate


def test_integers_within_2_to_the_53_are_kept_bigger_ones_left_out():
    assert document_of({"uptime": MAX_INTEGER, "install_age": -MAX_INTEGER}) == {"uptime": MAX_INTEGER,
                                                                                 "install_age": -MAX_INTEGER}
    assert document_of({"uptime": MAX_INTEGER + 1, "install_age": 2 ** 63}) == {}
    assert document_of({"build": "20261120093000"}) == {"build_id": 20261120093000}


def test_dates_from_1970_to_2262_are_kept_others_left_out():
    assert document_of({"date_processed": "1970-01-01T00:00:00Z"})["date"] == "1970-01-01T00:00:00+00:00"
    assert document_of({"date_processed": "2262-04-10T23:59:59+00:00"})["date"] == "2262-04-10T23:59:59+00:00"
    for outside in ("1969-12-31T23:59:59Z", "2262-04-11T00:00:00Z", "2300-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00"):
        assert "date" not in document_of({"date_processed": outside}), outside
    assert document_of({"date_processed": "2026-11-20T10:00:00"})["date"] == "2026-11-20T10:00:00+00:00"  # naive: UTC
