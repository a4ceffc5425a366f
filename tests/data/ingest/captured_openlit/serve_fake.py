"""The fake OpenAI server for record.sh: writes its URL to argv[1]; on SIGTERM, what it saw to argv[2]."""

import json
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.helpers.fake_openai import FakeOpenAI  # noqa: E402

done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
with FakeOpenAI() as fake:
    Path(sys.argv[1]).write_text(fake.url)
    done.wait()
    Path(sys.argv[2]).write_text(json.dumps([[req, resp] for req, resp in fake.exchanges], indent=1) + "\n")
