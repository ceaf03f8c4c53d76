"""Just enough URL splitting for cookies: scheme, host and path."""

from typing import NamedTuple


class URLParts(NamedTuple):
    scheme: str
    host: str
    path: str


def split_url(url: str) -> URLParts:
    """Split ``scheme://host[:port]/path``; the path defaults to ``/``."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    netloc, slash, path = rest.partition("/")
    host = netloc.rsplit("@", 1)[-1].split(":", 1)[0].lower()
    if not host:
        raise ValueError(f"URL without a host: {url!r}")
    return URLParts(scheme, host, "/" + path if slash else "/")
