"""The provider process: litellm imported and called in a process of its own.

`agent-tui run` (and `compact`, `uncompact`) start it first thing (provider/remote.py).
litellm's import takes seconds of pure Python, and in one process the GIL adds every
other start-up cost to it: the config, the database, the session, the request. Here the
import runs on the machine's other core while the command does all of that, so the
first request leaves as soon as litellm is ready.

Protocol: one JSON object a line. In, on stdin: `{"id", "op": "stream", "request"}`
(a ModelRequest), `{"id", "op": "call", "name", "args"}` (a litellm function in
CALLS), `{"id", "op": "cancel"}`. Out, on the stdout it was started with: `{"id", "e"}`
(a ProviderEvent), `{"id", "end": true}`, `{"id", "ok"}` (a call's result), or
`{"id", "err"}` (an error: provider/wire.py). Anything litellm prints goes to stderr
instead, so it cannot break a line. End of stdin ends the process: the command that
started it has exited, however it ended. `--warm` also loads the tokenizer once litellm
is in; `--lazy` (AGENT_TUI_PROVIDER_PROCESS=lazy) imports litellm at the first request.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import sys
import threading
from typing import Any, BinaryIO

from agent_tui.provider.wire import error_to_json

CALLS = ("get_model_info", "validate_environment")
"""The litellm functions the command asks for by name (provider/limits.py, auth.py)."""


class _Worker:
    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.tasks: dict[int, asyncio.Task[None]] = {}

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, default=str).encode() + b"\n")
        self.out.flush()

    async def serve(self, inbox: queue.SimpleQueue[bytes]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, inbox.get)
            message = json.loads(line)
            ident, op = message["id"], message["op"]
            if op == "cancel":
                task = self.tasks.get(ident)
                if task is not None:
                    task.cancel()
                continue
            handler = self.stream(ident, message) if op == "stream" else self.call(ident, message)
            task = asyncio.create_task(handler)
            self.tasks[ident] = task
            task.add_done_callback(lambda _, ident=ident: self.tasks.pop(ident, None))

    async def stream(self, ident: int, message: dict[str, Any]) -> None:
        from agent_tui.provider.events import ModelRequest
        from agent_tui.provider.stream import litellm_stream

        try:
            request = ModelRequest.model_validate(message["request"])
            async for event in litellm_stream(request):
                self.send({"id": ident, "e": event.model_dump(mode="json")})
        except asyncio.CancelledError:
            return  # litellm_stream closed the connection; the command stopped listening
        except Exception as exc:
            self.send({"id": ident, "err": error_to_json(exc)})
            return
        self.send({"id": ident, "end": True})

    async def call(self, ident: int, message: dict[str, Any]) -> None:
        from agent_tui.provider.loader import load_litellm

        try:
            if message.get("name") not in CALLS:
                raise ValueError(f"not a provider call: {message.get('name')!r}")
            function = getattr(await load_litellm(), message["name"])
            result = await asyncio.to_thread(function, *message.get("args", []))
            self.send({"id": ident, "ok": dict(result) if result is not None else None})
        except Exception as exc:
            self.send({"id": ident, "err": error_to_json(exc)})


def _read(stream: BinaryIO, inbox: queue.SimpleQueue[bytes]) -> None:
    """Lines from the command, read from the start (while litellm imports), so the
    command never blocks writing a large request into a full pipe. Their end is the
    command's: this process ends at once, even in the middle of litellm's import."""
    for line in iter(stream.readline, b""):
        inbox.put(line)
    os._exit(0)


def main() -> None:
    # Ctrl+C reaches the whole process group: the command decides (it cancels the
    # stream, which closes the provider's connection here), this process never dies of it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break a line
    inbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    threading.Thread(target=_read, args=(sys.stdin.buffer, inbox), daemon=True).start()
    from agent_tui.provider import loader

    if "--lazy" not in sys.argv[1:]:  # else the first request imports it
        module = loader.litellm()  # with what its first request imports (_warm_up)
        if "--warm" in sys.argv[1:]:  # its tokenizer, off the serving thread (see loader)
            threading.Thread(target=loader.warm_tokenizer, args=(module,), daemon=True).start()
    try:
        asyncio.run(_Worker(out).serve(inbox))
    except BaseException:  # a bug here: say what, the command reports the exit
        import traceback

        traceback.print_exc()
    finally:
        os._exit(1)  # serve never returns; tearing litellm down would cost ~1 s


if __name__ == "__main__":
    main()
