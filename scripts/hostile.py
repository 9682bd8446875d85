#!/usr/bin/env python3
"""Hostile and faulty /metrics endpoints for scripts/soak.sh, on loopback.

  scripts/hostile.py BASE_PORT COPIES

Serves COPIES of each behaviour below, on BASE_PORT, BASE_PORT+1, ... and
prints one line per port: PORT KIND. Loopback only; runs until killed.
"""
import gzip, itertools, socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BOMB = gzip.compress(b"\0" * (64 << 20), 1)  # 64 MiB of zeros, ~64 KiB on the wire
counter = itertools.count()


def lines(fmt, n):
    return "".join(fmt % i for i in range(n)).encode()


def body(kind):
    i = next(counter)
    if kind == "churn":  # new model names every scrape
        return lines('vllm:num_requests_running{model_name="m%d-%%d"} 1\n' % i, 2000)
    if kind == "churn-fail":  # churn that always fails to parse at the end
        return lines('vllm:num_requests_waiting{model_name="f%d-%%d"} 1\n' % i, 3000) + b'vllm:x{model_name="x" 1\n'
    if kind == "many-models":  # 10,000 models on a valid endpoint
        return lines('vllm:num_requests_running{model_name="model-%d"} 1\n', 10000)
    if kind == "absurd":  # negative counts, NaN, 1e300 buckets, escapes
        return (b'vllm:num_requests_running{model_name="m"} -3\n'
                b'vllm:num_requests_waiting{model_name="m"} NaN\n'
                b'vllm:kv_cache_usage_perc{model_name="\x1b[2J\xe2\x80\xaeevil"} 0.5\n'
                b'vllm:time_to_first_token_seconds_bucket{model_name="m",le="1e300"} %d\n'
                b'vllm:time_to_first_token_seconds_bucket{model_name="m",le="+Inf"} %d\n'
                b'vllm:time_to_first_token_seconds_count{model_name="m"} %d\n'
                b'vllm:time_to_first_token_seconds_sum{model_name="m"} 1e300\n' % (i, i, i))
    return b"vllm:num_requests_running 1\n"


class H(BaseHTTPRequestHandler):
    kind = "hang"

    def log_message(self, *a):
        pass

    def do_GET(self):
        k = self.server.kind
        try:
            if k == "hang":
                time.sleep(3600)
                return
            if k == "slow-drip":
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                for _ in range(100000):
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.05)
                return
            if k == "redirect":
                self.send_response(302)
                self.send_header("Location", "http://127.0.0.2:%d/metrics" % self.server.server_port)
                self.end_headers()
                return
            if k == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                self.connection.close()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            if k == "bomb":
                self.send_header("Content-Encoding", "gzip")
                self.end_headers()
                self.wfile.write(BOMB)
                return
            if k == "oversize":
                self.end_headers()
                chunk = b"vllm:num_requests_running 1\n" * 40000
                for _ in range(40):  # ~44 MiB
                    self.wfile.write(chunk)
                return
            self.end_headers()
            self.wfile.write(body(k))
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass


KINDS = ["hang", "slow-drip", "redirect", "reset", "bomb", "oversize", "churn", "churn-fail", "many-models", "absurd"]


def main():
    base, copies = int(sys.argv[1]), int(sys.argv[2])
    port = base
    for kind in KINDS:
        for _ in range(copies):
            srv = ThreadingHTTPServer(("127.0.0.1", port), H)
            srv.daemon_threads = True
            srv.kind = kind
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            print(port, kind, flush=True)
            port += 1
    threading.Event().wait()


if __name__ == "__main__":
    main()
