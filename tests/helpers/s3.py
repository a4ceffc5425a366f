"""A real S3-compatible server on loopback for tests: moto's threaded server (the dev extra)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def s3_server() -> Iterator[dict[str, str]]:
    """Start moto's S3 server on a free port; yields the ``AWS_*`` settings that reach it."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    finally:
        server.stop()


def new_bucket(env: dict[str, str]) -> str:
    """A fresh, empty bucket on the server ``env`` reaches."""
    import boto3

    name = f"b-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1").create_bucket(Bucket=name)
    return name


@contextmanager
def s3_server_process() -> Iterator[dict[str, str]]:
    """Another S3 server, in its own process: moto's servers in one process share one store, so two
    endpoints that must hold different buckets of the same name need two processes."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server on {url} did not start") from None
                time.sleep(0.1)
        yield {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": url}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
