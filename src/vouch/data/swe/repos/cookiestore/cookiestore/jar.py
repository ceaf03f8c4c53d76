"""The store: which cookies a response may set, and which a request carries."""

from typing import Any

from cookiestore.domain import domain_match, normalise_host
from cookiestore.parse import parse_set_cookie
from cookiestore.urls import split_url


def accept(host: str, header: str) -> dict[str, Any] | None:
    """The cookie a response from ``host`` sets with ``header``, or None if it must be ignored."""
    record = parse_set_cookie(header)
    record["domain"] = normalise_host(host)
    record["host_only"] = True
    return record


def import_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cookies from plain records (name, value, domain, path), e.g. read from a file."""
    cookies = []
    for record in records:
        cookies.append(
            {
                "name": record["name"],
                "value": record["value"],
                "domain": record["domain"].lstrip(".").lower(),
                "path": record.get("path", "/"),
                "host_only": False,
            }
        )
    return cookies


def _path_match(request_path: str, cookie_path: str) -> bool:
    if request_path == cookie_path:
        return True
    prefix = cookie_path if cookie_path.endswith("/") else cookie_path + "/"
    return request_path.startswith(prefix)


def cookie_header(cookies: list[dict[str, Any]], url: str) -> str:
    """The Cookie header value for a request to ``url``: matching cookies, longest path first."""
    parts = split_url(url)
    chosen = []
    for cookie in cookies:
        if cookie.get("host_only"):
            if parts.host != cookie["domain"]:
                continue
        elif not domain_match(parts.host, cookie["domain"]):
            continue
        if not _path_match(parts.path, cookie.get("path", "/")):
            continue
        chosen.append(cookie)
    chosen.sort(key=lambda c: -len(c.get("path", "/")))
    return "; ".join(f"{c['name']}={c['value']}" for c in chosen)
