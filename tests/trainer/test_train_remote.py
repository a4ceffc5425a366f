"""Training from a shared data root on S3 (``spanrl train --data s3://...``, issue 27): the trainer reads
the root's snapshot, the adapter is published to the root (another machine lists it), ``--notify``
still tells the engine where the adapter is."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.s3 import new_bucket, s3_server
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, write_rows_snapshot

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")


def test_train_reads_the_s3_root_and_publishes_the_adapter_there(tmp_path: Path, monkeypatch) -> None:
    from transformers import AutoTokenizer

    from spanrl.remote import remote_root

    model_dir = make_tiny_model(tmp_path / "model")
    seed = tmp_path / "seed"
    write_rows_snapshot(seed, tiny_rollout_rows(AutoTokenizer.from_pretrained(model_dir)))
    received: list[dict] = []

    class Engine(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"Success")

        def log_message(self, *args) -> None:
            pass

    engine = HTTPServer(("127.0.0.1", 0), Engine)
    threading.Thread(target=engine.serve_forever, daemon=True).start()
    with s3_server() as env:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "trainer-machine"))
        url = f"s3://{new_bucket(env)}/root"
        with remote_root(url, write=True, command="test: an existing root moved to S3") as local:
            shutil.copytree(seed, local, dirs_exist_ok=True)

        res = CliRunner().invoke(cli, ["train", "--data", url, "--model", str(model_dir), "--no-progress",
                                       "--notify", f"http://127.0.0.1:{engine.server_address[1]}"])
        assert res.exit_code == 0, res.output
        assert "published" in res.output
        assert len(received) == 1 and Path(received[0]["lora_path"], "adapter_model.safetensors").is_file()

        monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "another-machine"))
        listed = CliRunner().invoke(cli, ["adapters", "list", "--data", url])
        assert listed.exit_code == 0, listed.output
        assert received[0]["lora_name"] in listed.output
    engine.shutdown()
