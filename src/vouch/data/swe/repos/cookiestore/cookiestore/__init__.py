"""cookiestore: parse Set-Cookie headers, keep cookies, build Cookie headers."""

from cookiestore.domain import domain_match, normalise_host
from cookiestore.jar import accept, cookie_header, import_records
from cookiestore.parse import parse_set_cookie
from cookiestore.urls import split_url

__all__ = [
    "accept",
    "cookie_header",
    "domain_match",
    "import_records",
    "normalise_host",
    "parse_set_cookie",
    "split_url",
]
