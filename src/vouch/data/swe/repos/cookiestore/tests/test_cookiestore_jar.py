from cookiestore import accept, cookie_header, import_records


def test_host_only_cookie() -> None:
    cookie = accept("www.example.org", "sid=1")
    assert cookie is not None
    assert cookie["domain"] == "www.example.org"
    assert cookie_header([cookie], "https://www.example.org/") == "sid=1"
    assert cookie_header([cookie], "https://api.example.org/") == ""


def test_path_order() -> None:
    cookies = [accept("example.org", "a=1; Path=/"), accept("example.org", "b=2; Path=/docs")]
    assert cookie_header([c for c in cookies if c], "https://example.org/docs/x") == "b=2; a=1"


def test_import_plain_records() -> None:
    cookies = import_records([{"name": "t", "value": "v", "domain": ".Example.org"}])
    assert cookie_header(cookies, "https://www.example.org/") == "t=v"
