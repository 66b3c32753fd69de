"""Exposition: the whole store, summed over all processes, then the
registry's custom collectors, run in this process, as prometheus_client's
helpers serve them. The store's part is rendered natively, releasing the
GIL; usually the ``shmetrics serve`` exporter serves the store instead, so
no worker renders at all."""

from __future__ import annotations

import base64
import functools
import gzip
import os
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler
from socketserver import ThreadingMixIn
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import parse_qs, quote_plus, urlparse
from urllib.request import HTTPHandler, HTTPRedirectHandler, HTTPSHandler, Request, build_opener
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from . import _native
from .registry import REGISTRY, CollectorRegistry, StoreCollector

CONTENT_TYPE_PLAIN_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"
"""The Content-Type of the Prometheus text format 0.0.4."""

CONTENT_TYPE_PLAIN_1_0_0 = "text/plain; version=1.0.0; charset=utf-8"
"""The Content-Type of the Prometheus text format 1.0.0 (names may be
UTF-8, quoted)."""

CONTENT_TYPE_LATEST = CONTENT_TYPE_PLAIN_1_0_0
"""The newest text format, as prometheus_client 0.26 names it."""

CONTENT_TYPE_OPENMETRICS: str = _native.content_type("openmetrics")
"""The Content-Type of OpenMetrics 1.0 text."""

ALLOWUTF8 = "allow-utf-8"
UNDERSCORES = "underscores"
DOTS = "dots"
VALUES = "values"
_ESCAPINGS = (ALLOWUTF8, UNDERSCORES, DOTS, VALUES)


def _page(registry: Any, openmetrics: bool, escaping: str) -> bytes:
    """The page of ``registry``: every ``Metric`` its ``collect()`` yields,
    written as prometheus_client writes them (a ``Store`` alone: its
    families; ``None``: ``REGISTRY``)."""
    if escaping not in _ESCAPINGS:
        escaping = UNDERSCORES
    if isinstance(registry, _native.Store):
        registry = StoreCollector(registry)
    elif registry is None:
        registry = REGISTRY
    if isinstance(registry, CollectorRegistry) and type(registry).collect is CollectorRegistry.collect:
        parts: Iterable[Any] = registry._parts()
    elif isinstance(registry, StoreCollector) and type(registry).collect is StoreCollector.collect:
        parts = [registry]
    else:
        parts = registry.collect()
    # The store's families are rendered straight from its snapshot; the
    # Metric objects of target_info and custom collectors through the same
    # native writer, in runs.
    chunks: List[bytes] = []
    metrics: List[Any] = []
    for part in parts:
        if isinstance(part, StoreCollector):
            if metrics:
                chunks.append(_native.render_metrics(metrics, openmetrics, escaping))
                metrics = []
            chunks.append(part.render(openmetrics, escaping))
        else:
            metrics.append(part)
    if metrics:
        chunks.append(_native.render_metrics(metrics, openmetrics, escaping))
    if openmetrics:
        chunks.append(b"# EOF\n")
    return b"".join(chunks)


def generate_latest(registry: Any = REGISTRY, escaping: str = UNDERSCORES) -> bytes:
    """The Prometheus text exposition of the registry (the store's metrics,
    all processes summed, and the registry's custom collectors), written
    as prometheus_client writes it. ``escaping`` says how names outside the
    classic character set are written (``allow-utf-8``, ``underscores``,
    ``dots``, ``values``)."""
    return _page(registry, False, escaping)


def generate_openmetrics(registry: Any = REGISTRY, escaping: str = UNDERSCORES,
                         version: str = "1.0.0") -> bytes:
    """The OpenMetrics exposition of the registry."""
    return _page(registry, True, escaping)


def _params(toks: List[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for tok in toks[1:]:
        key, eq, value = tok.strip().partition("=")
        if eq and key not in out:
            out[key] = value
    return out


def _version_at_least_1(version: str) -> bool:
    try:
        return int(version.split(".")[0]) >= 1
    except ValueError:
        return False


def choose_encoder(accept_header: Optional[str]) -> Tuple[Callable[[Any], bytes], str]:
    """The encoder and Content-Type for a scrape's ``Accept`` header, as
    prometheus_client 0.26 negotiates: OpenMetrics when asked for, the text
    format 1.0.0 when asked for by version, else 0.0.4."""
    for accepted in (accept_header or "").split(","):
        toks = accepted.split(";")
        media = toks[0].strip()
        params = _params(toks)
        version = params.get("version", "")
        escaping = params.get("escaping", UNDERSCORES)
        escaping = escaping if escaping in _ESCAPINGS else UNDERSCORES
        if media == "application/openmetrics-text":
            if not version:
                return (functools.partial(generate_openmetrics, escaping=UNDERSCORES),
                        CONTENT_TYPE_OPENMETRICS)
            if _version_at_least_1(version):
                return (functools.partial(generate_openmetrics, escaping=escaping, version=version),
                        f"application/openmetrics-text; version={version}; charset=utf-8; escaping={escaping}")
        elif media == "text/plain" and version and _version_at_least_1(version):
            return (functools.partial(generate_latest, escaping=escaping),
                    f"{CONTENT_TYPE_LATEST}; escaping={escaping}")
    return generate_latest, CONTENT_TYPE_PLAIN_0_0_4


def gzip_accepted(accept_encoding_header: Optional[str]) -> bool:
    """Whether an ``Accept-Encoding`` header takes gzip."""
    return any(part.split(";")[0].strip().lower() == "gzip"
               for part in (accept_encoding_header or "").split(","))


def _restrict(registry: Any, names: Optional[List[str]]) -> Any:
    """``registry``, or its samples of these names (``?name[]=``)."""
    if not names:
        return registry
    if isinstance(registry, _native.Store):
        view = CollectorRegistry()
        view._show(StoreCollector(registry))
        registry = view
    elif registry is None:
        registry = REGISTRY
    return registry.restricted_registry(names)


def _bake_output(registry: Any, accept_header: Optional[str], accept_encoding_header: Optional[str],
                 params: Dict[str, List[str]], disable_compression: bool) -> Tuple[str, List[Tuple[str, str]], bytes]:
    """Status, headers and body of a scrape, as prometheus_client's."""
    encoder, content_type = choose_encoder(accept_header)
    output = encoder(_restrict(registry, params.get("name[]")))
    headers = [("Content-Type", content_type)]
    if not disable_compression and gzip_accepted(accept_encoding_header):
        output = gzip.compress(output)
        headers.append(("Content-Encoding", "gzip"))
    return "200 OK", headers, output


def make_wsgi_app(registry: Any = REGISTRY, disable_compression: bool = False) -> Callable[..., Iterable[bytes]]:
    """A WSGI app that serves the registry: content negotiation from
    ``Accept``, gzip when the client takes it, only the samples of the
    names given by ``?name[]=`` if any; OPTIONS answered, other methods
    than GET refused with 405."""

    def app(environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "OPTIONS":
            status, headers, output = "200 OK", [("Allow", "OPTIONS,GET")], b""
        elif method != "GET":
            status = "405 Method Not Allowed"
            headers = [("Allow", "OPTIONS,GET")]
            output = f"# HTTP {status}: {method}; use OPTIONS or GET\n".encode()
        elif environ.get("PATH_INFO") == "/favicon.ico":
            status, headers, output = "200 OK", [], b""
        else:
            status, headers, output = _bake_output(
                registry, environ.get("HTTP_ACCEPT"), environ.get("HTTP_ACCEPT_ENCODING"),
                parse_qs(environ.get("QUERY_STRING", "")), disable_compression)
        start_response(status, headers)
        return [output]

    return app


def make_asgi_app(registry: Any = REGISTRY, disable_compression: bool = False) -> Callable[..., Any]:
    """An ASGI app that serves the registry as ``make_wsgi_app`` does (the
    page is rendered in the event loop, as prometheus_client's is: serve a
    large store through the exporter instead)."""

    async def app(scope: dict, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert scope["type"] == "http"
        headers: Dict[str, str] = {}
        for k, v in scope.get("headers", []):
            key = k.decode("latin-1").lower()
            headers[key] = headers[key] + "," + v.decode("latin-1") if key in headers else v.decode("latin-1")
        method = scope.get("method", "GET")
        if method == "OPTIONS":
            status, out, body = 200, [("Allow", "OPTIONS,GET")], b""
        elif method != "GET":
            status, out = 405, [("Allow", "OPTIONS,GET")]
            body = f"# HTTP 405 Method Not Allowed: {method}; use OPTIONS or GET\n".encode()
        else:
            params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            _, out, body = _bake_output(registry, headers.get("accept"), headers.get("accept-encoding"),
                                        params, disable_compression)
            status = 200
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.encode(), v.encode()) for k, v in out]})
        await send({"type": "http.response.body", "body": body})

    return app


class MetricsHandler(BaseHTTPRequestHandler):
    """An ``http.server`` handler that serves ``registry`` (``REGISTRY``
    unless made by ``factory(registry)``)."""

    registry: Any = REGISTRY

    def do_GET(self) -> None:
        status, headers, output = _bake_output(
            self.registry, self.headers.get("Accept"), self.headers.get("Accept-Encoding"),
            parse_qs(urlparse(self.path).query), False)
        self.send_response(int(status.split(" ")[0]))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(output)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @classmethod
    def factory(cls, registry: Any) -> type:
        """A subclass that serves ``registry``."""
        return type(cls.__name__, (cls,), {"registry": registry})


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _SilentHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _ssl_context(certfile: str, keyfile: str, protocol: int, cafile: Optional[str],
                 capath: Optional[str], client_auth_required: bool,
                 tls_min_version: Optional[ssl.TLSVersion],
                 tls_max_version: Optional[ssl.TLSVersion]) -> ssl.SSLContext:
    """The server's TLS context; a file that cannot be loaded raises the
    same ``OSError`` type, naming the file."""
    ctx = ssl.SSLContext(protocol=protocol)
    try:
        if cafile is not None or capath is not None:
            ctx.load_verify_locations(cafile, capath)
        else:
            ctx.load_default_certs(purpose=ssl.Purpose.CLIENT_AUTH)
    except OSError as e:
        raise type(e)(f"Cannot load CA certificate chain from file {cafile!r} or directory {capath!r}: {e}")
    if client_auth_required:
        ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        ctx.load_cert_chain(certfile=certfile, keyfile=keyfile)
    except OSError as e:
        raise type(e)(f"Cannot load server certificate file {certfile!r} or its private key file {keyfile!r}: {e}")
    if tls_min_version is not None:
        ctx.minimum_version = tls_min_version
    if tls_max_version is not None:
        ctx.maximum_version = tls_max_version
    return ctx


def start_http_server(port: int, addr: str = "127.0.0.1", registry: Any = REGISTRY,
                      certfile: Optional[str] = None, keyfile: Optional[str] = None,
                      client_cafile: Optional[str] = None, client_capath: Optional[str] = None,
                      protocol: int = ssl.PROTOCOL_TLS_SERVER, client_auth_required: bool = False,
                      tls_min_version: Optional[ssl.TLSVersion] = None,
                      tls_max_version: Optional[ssl.TLSVersion] = None) -> Tuple[WSGIServer, threading.Thread]:
    """Serves the registry over HTTP (HTTPS given ``certfile`` and
    ``keyfile``; client certificates required with
    ``client_auth_required``) from a daemon thread of this process.

    It binds loopback unless told otherwise (prometheus_client binds all
    interfaces). With several worker processes, prefer the exporter
    (``shmetrics serve``), which renders outside the workers."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    server = type("_Server", (_ThreadingWSGIServer,), {"address_family": family})
    httpd: WSGIServer = make_server(addr, port, make_wsgi_app(registry), server, handler_class=_SilentHandler)
    if certfile and keyfile:
        ctx = _ssl_context(certfile, keyfile, protocol, client_cafile, client_capath,
                           client_auth_required, tls_min_version, tls_max_version)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    t = threading.Thread(target=httpd.serve_forever, name="shmetrics-http", daemon=True)
    t.start()
    return httpd, t


start_wsgi_server = start_http_server


def write_to_textfile(path: str, registry: Any, escaping: str = ALLOWUTF8, tmpdir: Optional[str] = None) -> None:
    """Writes the registry's text page to ``path`` atomically (a file
    beside it, or in ``tmpdir`` on the same filesystem, renamed), for the
    node exporter's textfile collector."""
    where = tmpdir if tmpdir is not None else os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(where, f"{os.path.basename(path)}.{os.getpid()}.{threading.get_ident()}")
    try:
        with open(tmp, "wb") as f:
            f.write(generate_latest(registry, escaping))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


# --- Pushgateway ---------------------------------------------------------

def _send(url: str, method: str, timeout: Optional[float], headers: Sequence[Tuple[str, Any]],
          data: bytes, *handlers: Any) -> Callable[[], None]:
    def run() -> None:
        request = Request(url, data=data, method=method)
        for k, v in headers:
            request.add_header(k, v.decode() if isinstance(v, bytes) else v)
        resp = build_opener(*handlers).open(request, timeout=timeout)
        if resp.code >= 400:
            raise OSError(f"error talking to pushgateway: {resp.code} {resp.msg}")
    return run


def default_handler(url: str, method: str, timeout: Optional[float], headers: List[Tuple[str, str]],
                    data: bytes) -> Callable[[], None]:
    """The request to the Pushgateway, over HTTP or HTTPS."""
    return _send(url, method, timeout, headers, data, HTTPHandler)


class _RedirectKeepingMethod(HTTPRedirectHandler):
    """Follows a redirect with the same method, headers and body."""

    def redirect_request(self, req: Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> Request:
        new = Request(newurl.replace(" ", "%20"), data=req.data, headers=dict(req.header_items()),
                      origin_req_host=req.origin_req_host, unverifiable=True, method=req.get_method())
        return new


def passthrough_redirect_handler(url: str, method: str, timeout: Optional[float],
                                 headers: List[Tuple[str, str]], data: bytes) -> Callable[[], None]:
    """``default_handler``, but a redirect is followed with the same
    method, headers and body: only for gateways you trust."""
    return _send(url, method, timeout, headers, data, _RedirectKeepingMethod)


def basic_auth_handler(url: str, method: str, timeout: Optional[float], headers: List[Tuple[str, str]],
                       data: bytes, username: Optional[str] = None,
                       password: Optional[str] = None) -> Callable[[], None]:
    """``default_handler`` with HTTP basic authentication."""
    def run() -> None:
        if username is not None and password is not None:
            token = base64.b64encode(f"{username}:{password}".encode()).decode()
            headers.append(("Authorization", "Basic " + token))
        default_handler(url, method, timeout, headers, data)()
    return run


def tls_auth_handler(url: str, method: str, timeout: Optional[float], headers: List[Tuple[str, str]],
                     data: bytes, certfile: str, keyfile: str, cafile: Optional[str] = None,
                     protocol: int = ssl.PROTOCOL_TLS_CLIENT,
                     insecure_skip_verify: bool = False) -> Callable[[], None]:
    """HTTPS to the gateway with a client certificate."""
    ctx = ssl.SSLContext(protocol=protocol)
    if cafile is not None:
        ctx.load_verify_locations(cafile)
    else:
        ctx.load_default_certs()
    if insecure_skip_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(certfile=certfile, keyfile=keyfile)
    return _send(url, method, timeout, headers, data, HTTPSHandler(context=ctx))


def _grouping_part(key: str, value: str) -> str:
    """``key/value`` of a Pushgateway URL; a value that is empty, or has a
    ``/`` or a space, goes base64-encoded (``key@base64/...``)."""
    if value == "":
        return f"{key}@base64/="
    if "/" in value or " " in value:
        return f"{key}@base64/" + base64.urlsafe_b64encode(value.encode()).decode()
    return f"{key}/{quote_plus(value)}"


def _compress(data: bytes, compression: Optional[str]) -> Tuple[bytes, List[Tuple[str, str]]]:
    headers = [("Content-Type", CONTENT_TYPE_PLAIN_0_0_4)]
    if compression is None:
        return data, headers
    if compression == "gzip":
        return gzip.compress(data), headers + [("Content-Encoding", "gzip")]
    if compression == "snappy":
        import snappy  # type: ignore[import-untyped,import-not-found,unused-ignore]  # framing format
        return snappy.StreamCompressor().compress(data), headers + [("Content-Encoding", "snappy")]
    raise ValueError(f"Unsupported compression type: {compression!r}; use 'gzip' or 'snappy'")


def _gateway(method: str, gateway: str, job: str, registry: Any, grouping_key: Optional[Dict[str, Any]],
             timeout: Optional[float], handler: Callable[..., Any], compression: Optional[str] = None) -> None:
    if urlparse(gateway).scheme not in ("http", "https"):
        gateway = "http://" + gateway
    url = f"{gateway.rstrip('/')}/metrics/" + _grouping_part("job", job)
    url += "".join("/" + _grouping_part(str(k), str(v)) for k, v in sorted((grouping_key or {}).items()))
    if method == "DELETE":
        if compression is not None:
            raise ValueError("Compression is not supported for DELETE requests.")
        data, headers = b"", [("Content-Type", CONTENT_TYPE_PLAIN_0_0_4)]
    else:
        data, headers = _compress(generate_latest(registry if registry is not None else REGISTRY), compression)
    handler(url=url, method=method, timeout=timeout, headers=headers, data=data)()


def push_to_gateway(gateway: str, job: str, registry: Any, grouping_key: Optional[Dict[str, Any]] = None,
                    timeout: Optional[float] = 30, handler: Callable[..., Any] = default_handler,
                    compression: Optional[str] = None) -> None:
    """Replaces the metrics of this job and grouping key on a Pushgateway
    with the registry's (PUT)."""
    _gateway("PUT", gateway, job, registry, grouping_key, timeout, handler, compression)


def pushadd_to_gateway(gateway: str, job: str, registry: Any, grouping_key: Optional[Dict[str, Any]] = None,
                       timeout: Optional[float] = 30, handler: Callable[..., Any] = default_handler,
                       compression: Optional[str] = None) -> None:
    """Replaces the metrics of the registry's names for this job and
    grouping key on a Pushgateway (POST)."""
    _gateway("POST", gateway, job, registry, grouping_key, timeout, handler, compression)


def delete_from_gateway(gateway: str, job: str, grouping_key: Optional[Dict[str, Any]] = None,
                        timeout: Optional[float] = 30, handler: Callable[..., Any] = default_handler) -> None:
    """Deletes the metrics of this job and grouping key from a Pushgateway."""
    _gateway("DELETE", gateway, job, None, grouping_key, timeout, handler)


def instance_ip_grouping_key() -> Dict[str, Any]:
    """A grouping key with ``instance`` set to this host's IP address."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("localhost", 0))
        return {"instance": s.getsockname()[0]}
