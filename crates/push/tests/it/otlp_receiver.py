"""An OTLP/HTTP metrics receiver for the tests, on a loopback port.

It decodes every POSTed body with the official OpenTelemetry protobuf
definitions (PyPI's opentelemetry-proto) and appends what it received to
a JSON-lines file, one object per request:

    {"seq": 1, "status": 200, "content_type": "...", "user_agent": "...",
     "received_unix": 1.7e9, "error": null, "request": {...}}

`request` is the ExportMetricsServiceRequest as google.protobuf.json_format
writes it (proto field names, fields with default values included, 64-bit
integers as strings). A body that does not decode, or that has fields the
official definitions do not know, is answered 400 and recorded with an
`error`; so is a wrong Content-Type or Content-Encoding (415). A gzip
body (`Content-Encoding: gzip`) is decompressed first, its size recorded
as `uncompressed_bytes`.

Answers are 200 with an ExportMetricsServiceResponse unless the test
scripted others: each `GET /script?status=503&retry_after=1` (or
`&rejected=2&message=...` for a partial success) queues one answer for the
next export request. Error answers carry a google.rpc.Status body.

With OTLP_TLS_CERT and OTLP_TLS_KEY in the environment it speaks HTTPS
only (PEM files); with OTLP_AUTHORIZATION, a request whose Authorization
header is not exactly that is answered 401 and not recorded. Records
hold the request's other headers (`headers`, names in lower case).

Usage: otlp_receiver.py OUT.jsonl
Prints `listening on PORT` once it accepts connections.
"""

import gzip
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

PROTOBUF = "application/x-protobuf"
LOCK = threading.Lock()
SCRIPT = []
SEQ = [0]
OUT = sys.argv[1]


def rpc_status(code, message):
    """A google.rpc.Status: code (field 1, varint), message (field 2)."""
    msg = message.encode()
    out = bytearray([0x08])
    while True:
        b = code & 0x7F
        code >>= 7
        out.append(b | (0x80 if code else 0))
        if not code:
            break
    out.append(0x12)
    n = len(msg)
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            break
    return bytes(out) + msg


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b"", content_type=PROTOBUF, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/script":
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            with LOCK:
                SCRIPT.append(q)
            self.reply(200, b"ok\n", "text/plain")
        elif url.path == "/health":
            self.reply(200, b"ok\n", "text/plain")
        else:
            self.reply(404, b"not found\n", "text/plain")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        want = os.environ.get("OTLP_AUTHORIZATION")
        if want is not None and self.headers.get("Authorization") != want:
            self.reply(401, b"wrong or missing credentials\n", "text/plain")
            return
        content_type = self.headers.get("Content-Type", "")
        record = {
            "headers": {
                k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"
            },
            "content_type": content_type,
            "user_agent": self.headers.get("User-Agent", ""),
            "received_unix": time.time(),
            "bytes": len(body),
            "error": None,
            "request": None,
        }
        status, answer, headers = 200, None, []
        if self.path != "/v1/metrics":
            status, record["error"] = 404, "wrong path " + self.path
        elif content_type != PROTOBUF:
            status, record["error"] = 415, "wrong content type " + content_type
        elif self.headers.get("Content-Encoding", "identity") not in ("identity", "gzip"):
            status, record["error"] = 415, "unknown content encoding"
        else:
            req = metrics_service_pb2.ExportMetricsServiceRequest()
            try:
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                    record["uncompressed_bytes"] = len(body)
                req.ParseFromString(body)
                req.DiscardUnknownFields()
                if req.ByteSize() != len(body):
                    raise DecodeError(
                        "fields unknown to the official definitions: %d of %d bytes"
                        % (len(body) - req.ByteSize(), len(body))
                    )
                record["request"] = json_format.MessageToDict(
                    req,
                    preserving_proto_field_name=True,
                    always_print_fields_with_no_presence=True,
                )
            except (DecodeError, OSError, EOFError) as e:
                status, record["error"] = 400, "cannot decode: %s" % e
        if status == 200:
            with LOCK:
                scripted = SCRIPT.pop(0) if SCRIPT else {}
            status = int(scripted.get("status", "200"))
            if "retry_after" in scripted:
                headers.append(("Retry-After", scripted["retry_after"]))
            if status == 200:
                resp = metrics_service_pb2.ExportMetricsServiceResponse()
                if "rejected" in scripted:
                    resp.partial_success.rejected_data_points = int(scripted["rejected"])
                    resp.partial_success.error_message = scripted.get("message", "")
                answer = resp.SerializeToString()
            else:
                answer = rpc_status(3, "scripted %d from the test receiver" % status)
        elif answer is None:
            answer = rpc_status(3, record["error"])
        with LOCK:
            SEQ[0] += 1
            record["seq"] = SEQ[0]
            record["status"] = status
            with open(OUT, "a") as f:
                f.write(json.dumps(record) + "\n")
        self.reply(status, answer, PROTOBUF, headers)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    cert, key = os.environ.get("OTLP_TLS_CERT"), os.environ.get("OTLP_TLS_KEY")
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
