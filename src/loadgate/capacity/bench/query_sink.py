"""The sink of logql-query's generator benchmark: a small HTTPS server that answers as Loki's
push and query APIs do, at once and without storing anything (run as a process of its own,
`python -m loadgate.capacity.bench.query_sink PORT CERT KEY`, so its CPU is counted apart from
k6's and from loadgate's).

- `POST /loki/api/v1/push`: the body read, 204;
- `GET /loki/api/v1/query` and `/loki/api/v1/query_range`: a success with one series holding
  the count 0 (a vector or a matrix), so k6 pays for reading and checking an answer;
- `GET /ready`: 200 (the bench waits for it).
"""

from __future__ import annotations

import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_PUSH_PATH = "/loki/api/v1/push"
_VECTOR = json.dumps(
    {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [0, "0"]}]}}
).encode()  # fmt: skip
_MATRIX = json.dumps(
    {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {}, "values": [[0, "0"]]}]}}
).encode()  # fmt: skip
_ANSWERS = {"/loki/api/v1/query": _VECTOR, "/loki/api/v1/query_range": _MATRIX, "/ready": b"ready"}


class _LokiLike(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as k6 keeps its connections
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        status = 204 if self.path == _PUSH_PATH else 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        body = _ANSWERS.get(self.path.partition("?")[0])
        self.send_response(200 if body is not None else 404)
        body = body or b""
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def _serve(port: int, cert: str, key: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _LokiLike)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    _serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
