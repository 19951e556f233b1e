"""A language server that misbehaves the way real ones do, over stdio (LSP framing):

python tests/fake_lsp.py silent     reads everything, never answers (not even initialize)
python tests/fake_lsp.py mute       answers initialize and shutdown, never publishes
python tests/fake_lsp.py deaf       answers initialize, then never reads again
"""

from __future__ import annotations

import json
import sys
import time


def read_message(stream: object) -> dict[str, object] | None:
    length = 0
    while True:
        line = stream.readline()  # type: ignore[attr-defined]
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))  # type: ignore[attr-defined]


def answer(ident: object, result: object) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def main(mode: str) -> None:
    while (message := read_message(sys.stdin.buffer)) is not None:
        if mode == "silent":
            continue
        if message.get("method") == "initialize":
            answer(message["id"], {"capabilities": {"textDocumentSync": 1}})
            if mode == "deaf":
                time.sleep(3600)
        elif message.get("method") == "shutdown":
            answer(message["id"], None)


if __name__ == "__main__":
    main(sys.argv[1])
