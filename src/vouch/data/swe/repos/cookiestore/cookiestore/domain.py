"""Host names and domain matching (RFC 6265, section 5.1.3)."""


def normalise_host(host: str) -> str:
    """Lower-case a host name; an empty host is an error."""
    host = host.strip().lower()
    if not host:
        raise ValueError("empty host")
    return host


def _is_ip(host: str) -> bool:
    parts = host.split(".")
    return len(parts) == 4 and all(p.isdigit() for p in parts)


def domain_match(host: str, domain: str) -> bool:
    """Whether ``host`` domain-matches ``domain``: equal, or a subdomain of a non-IP host."""
    host = normalise_host(host)
    domain = domain.lower()
    if host == domain:
        return True
    return not _is_ip(host) and host.endswith("." + domain)
