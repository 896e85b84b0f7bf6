"""A local HTTP server that serves a weights file in hostile ways (issue 57): the download tests and the fault
benchmark (``benchmarks/fault_cases_doors.py``) both use it. Loopback only; every mode ends by itself."""

from __future__ import annotations

import http.server
import threading
import time

HTML = b"<!doctype html><html><body>Sign in to continue</body></html>\n"
ENDLESS_CHUNKS = 1 << 14  # "endless": 1 GiB at most, so that code without a size cap cannot fill the disk


class Hostile(http.server.BaseHTTPRequestHandler):
    """Serves ``server.body`` the way ``server.mode`` says: whole, endless, huge (announces ``server.huge_length``),
    drip (a byte every ``server.drip_s``), short (announces the whole, sends half), cut (no Content-Length, half),
    long (more bytes than announced), html (a web page)."""

    def do_GET(self):  # noqa: N802 - http.server's name
        srv = self.server
        mode, body = srv.mode, srv.body
        srv.requests.append(self.path)
        self.send_response(200)
        try:
            if mode == "endless":
                self.end_headers()
                for _ in range(ENDLESS_CHUNKS):
                    self.wfile.write(b"\0" * 65536)
            elif mode == "huge":
                self.send_header("Content-Length", str(srv.huge_length))
                self.end_headers()
                self.wfile.write(b"\0" * 65536)
            elif mode == "drip":
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for b in body:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(srv.drip_s)
            elif mode == "html":
                self.send_header("Content-Length", str(len(HTML)))
                self.end_headers()
                self.wfile.write(HTML)
            else:
                half = len(body) // 2
                if mode != "cut":
                    self.send_header("Content-Length", str({"short": len(body), "long": half}.get(mode, len(body))))
                self.end_headers()
                self.wfile.write(body[:half] if mode in ("short", "cut") else body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def log_message(self, *args):
        pass


def serve(body: bytes, mode: str = "whole", *, drip_s: float = 0.2, huge_length: int = 1 << 40) -> http.server.ThreadingHTTPServer:
    """A started server on 127.0.0.1 (its port: ``.server_port``); ``shutdown()`` and ``server_close()`` end it."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    srv.daemon_threads = True
    srv.mode, srv.body, srv.requests, srv.drip_s, srv.huge_length = mode, body, [], drip_s, huge_length
    # a short poll: shutdown() waits for the loop to look again (0.5 s a test with the default)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return srv
