"""The ``nginx`` image's stand-in: serve the working directory over HTTP on ``<podIP> <port>`` (argv).

Run by the process runtime as a script (``images.CATALOG``), so it imports nothing of kubelab. It logs as
``python -m http.server`` does (``Serving HTTP on …`` then one line per request). Ports below 1024 need root
(or CAP_NET_BIND_SERVICE): a user without it gets a free port on the pod's IP instead, and the log says so.
"""

from __future__ import annotations

import signal
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


def serve(host: str, port: int) -> None:
    try:
        server = ThreadingHTTPServer((host, port), SimpleHTTPRequestHandler)
    except PermissionError as err:
        server = ThreadingHTTPServer((host, 0), SimpleHTTPRequestHandler)
        print(f"cannot listen on {host}:{port} ({err.strerror}: ports below 1024 need root); "
              f"listening on the free port {server.server_address[1]} instead", file=sys.stderr, flush=True)
    bound_host, bound_port = str(server.server_address[0]), server.server_address[1]
    print(f"Serving HTTP on {bound_host} port {bound_port} (http://{bound_host}:{bound_port}/) ...", flush=True)
    with server:
        server.serve_forever()


if __name__ == "__main__":
    # nginx stops at SIGTERM (its fast shutdown); in a Linux container the server is PID 1, which would otherwise
    # ignore it and wait out the pod's grace period.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    argv = sys.argv[1:]
    serve(argv[0] if argv else "0.0.0.0", int(argv[1]) if len(argv) > 1 else 80)
