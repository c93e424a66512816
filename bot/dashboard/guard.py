"""What keeps the dashboard's pages to themselves: security headers, the origin check of its forms, the public URL.

Pure, apart from reading a request: pages.py wires them into the routes.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from bot.settings.config import Settings

#: No script at all (the dashboard has none), styles from the dashboard's own stylesheet only, forms that post
#: back here, and no framing (clickjacking), which `X-Frame-Options` repeats for browsers without CSP 2.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    # Job pages link out to GitHub: the dashboard's URLs (job ids, filters) stay here. Not "no-referrer": under
    # it browsers send `Origin: null` with the dashboard's own forms, and same_origin() would refuse them.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


def add_security_headers(response: web.StreamResponse) -> None:
    """Set the dashboard's security headers on `response` (any status, including 401 and 404 pages)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of an absolute http(s) URL, lowercased as browsers send it; None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises ValueError on a port that is not a number
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets in an origin
    default = {"http": 80, "https": 443}[parts.scheme.lower()]
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port is not None and port != default else "")


def public_origin(settings: Settings) -> str | None:
    """The origin of REPROBOT_PUBLIC_URL, or None when it is unset or not an http(s) URL."""
    return origin_of(settings.public_url) if settings.public_url else None


def callback_url(settings: Settings, path: str) -> str | None:
    """The absolute URL of `path` under REPROBOT_PUBLIC_URL (the OAuth callback), or None when it is not set.

    Never built from the request: its Host header is the client's to choose, and a redirect_uri taken from it
    would send GitHub's code wherever the client says (as far as the OAuth client's callback URL allows).
    """
    if public_origin(settings) is None:
        return None
    assert settings.public_url is not None
    return settings.public_url.strip().rstrip("/") + path


def _request_origin(request: web.Request) -> str:
    """This server's origin as the browser addressed it (used only when no public URL is configured)."""
    scheme = "https" if request.secure or request.headers.get("X-Forwarded-Proto", "") == "https" else "http"
    return origin_of(f"{scheme}://{request.host}") or ""


def same_origin(request: web.Request, settings: Settings) -> bool:
    """True when a state-changing request comes from the dashboard's own pages (CSRF check).

    Browsers send `Origin` with every POST (`Referer` is the fallback for one that does not); a form on another
    site carries that site's origin, which it cannot forge. `Origin: null` (a sandboxed frame, a redirected post)
    and a request with neither header are refused: only a page that hides where it comes from lands there. The
    expected origin is REPROBOT_PUBLIC_URL's; without it, the origin the browser itself addressed (its Host
    header, which a cross-site form cannot choose).
    """
    sent: str | None = request.headers.get("Origin")
    if sent is None:
        sent = request.headers.get("Referer")
    sent = origin_of(sent) if sent else None
    if sent is None:
        return False
    return sent == (public_origin(settings) or _request_origin(request))
