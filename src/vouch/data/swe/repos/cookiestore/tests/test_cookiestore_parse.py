import pytest

from cookiestore import parse_set_cookie, split_url


def test_parse_attributes() -> None:
    record = parse_set_cookie("sid=abc; Path=/app; Secure; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
    assert record == {
        "name": "sid",
        "value": "abc",
        "domain": None,
        "path": "/app",
        "secure": True,
        "expires": "Wed, 21 Oct 2026 07:28:00 GMT",
    }


def test_parse_needs_a_name() -> None:
    with pytest.raises(ValueError):
        parse_set_cookie("=abc")


def test_split_url() -> None:
    assert split_url("https://user@Example.org:8443/a/b") == ("https", "example.org", "/a/b")
    assert split_url("http://example.org") == ("http", "example.org", "/")
