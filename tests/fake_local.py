"""Fake local model servers: what llama.cpp, llama-cpp-python, Ollama, LM Studio and vLLM
do that a hosted API does not, so that tests need no model.

`FakeLocal(kind, n_ctx=…)` is a `tests.fake_openai.FakeOpenAI` (scripted replies,
`requests`, `wait_for_requests`, …) that also:

- answers the questions about its window, as its kind does:
  llama.cpp `GET /props`; Ollama `POST /api/show` and `GET /api/ps` (`GET /api/tags` too);
  LM Studio `GET /api/v0/models/{id}`; vLLM `GET /v1/models` with `max_model_len`;
- enforces its window `n_ctx` on chat requests (prompt tokens counted as the base fake
  does, the messages' and tools' JSON length / 4) the way its kind fails: llama.cpp a 400
  `exceed_context_size_error` with `n_ctx`; llama-cpp-python `200`, then the stream ends
  (`overflow="silent"`, what the real one does: the reason is only in its log) or an
  error object "Requested tokens (N) exceed context window of M" inside the stream
  (`overflow="stream"`); LM Studio and vLLM a 400 with their own sentences; Ollama
  nothing at all (it truncates: `truncated` counts the requests it would have cut);
- with `token_scale`, counts the prompt as a model whose tokenizer makes that many times
  more tokens of the same text (reported usage and the window check alike);
- with `string_template=True`, renders its chat template like many Hugging Face
  templates do: `content` must be a string. A list fails the template after `200`: the
  stream ends with no finish reason (`template_failures` counts them). With
  `one_system=True`, a system message anywhere but first fails the same way (Mistral's,
  Qwen's templates);
- for kind "ollama", serves Ollama's own `POST /api/chat` (NDJSON stream) so that
  litellm's `ollama_chat/` route runs too.

`base_url` ends in `/v1` (litellm's OpenAI-compatible base); `root_url` is the server's
address without it (Ollama's native base).
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import unquote

from tests.fake_openai import (
    Cut,
    Error,
    FakeOpenAI,
    Reply,
    StreamError,
    Text,
    ToolCalls,
    Usage,
    _ClientGone,
    _estimate_usage,
    _Handler,
    _pieces,
    _Server,
)

Kind = Literal["llama.cpp", "llama-cpp-python", "ollama", "lmstudio", "vllm"]
Overflow = Literal["400", "stream", "silent", "truncate"]

DEFAULT_OVERFLOW: dict[str, Overflow] = {
    "llama.cpp": "400",
    "llama-cpp-python": "silent",  # 0.3.36: the reason is only in its log
    "ollama": "truncate",
    "lmstudio": "400",
    "vllm": "400",
}


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt as this server counts it: the messages' and the tools' JSON / 4 (a
    server renders both into the prompt)."""
    tools = len(json.dumps(body["tools"])) // 4 if body.get("tools") else 0
    return _estimate_usage(body).prompt_tokens + tools


class _LocalHandler(_Handler):
    @property
    def fake(self) -> FakeLocal:
        return self.server.fake  # type: ignore[return-value]

    def do_GET(self) -> None:
        fake = self.fake
        path = self.path.split("?")[0].rstrip("/")
        fake.asked.append(f"GET {path}")
        answer = fake.get_route(path)
        if answer is None:
            self._send_json(404, {"error": f"Unknown path {path}"})
        else:
            self._send_json(200, answer)

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        fake = self.fake
        if path == "/api/show" and fake.kind == "ollama":
            fake.asked.append(f"POST {path}")
            body = self._read_body() or {}
            answer = fake.show(str(body.get("model") or body.get("name") or ""))
            if answer is None:
                self._send_json(404, {"error": f"model '{body.get('model')}' not found"})
            else:
                self._send_json(200, answer)
            return
        if path == "/api/chat" and fake.kind == "ollama":
            self._ollama_chat()
            return
        if path in ("/api/show", "/api/chat"):
            self._send_json(404, {"error": f"Unknown path {path}"})
            return
        super().do_POST()

    def _ollama_chat(self) -> None:
        """Ollama's native chat API: NDJSON lines, the last one `done: true`."""
        body = self._read_body() or {}
        fake = self.fake
        reply = fake._record(body, {k.lower(): v for k, v in self.headers.items()})
        fake.loaded = True  # Ollama loads the model for its first request
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            model = body.get("model", "fake")
            text = reply.text if isinstance(reply, Text | Cut) else ""
            size = reply.chunk_size if isinstance(reply, Text | Cut) else 4
            pieces = _pieces(text, size)
            if isinstance(reply, Cut):
                pieces = pieces[: reply.after_chunks]
            for piece in pieces:
                self._line(
                    {
                        "model": model,
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": piece},
                        "done": False,
                    }
                )
            if isinstance(reply, ToolCalls):
                calls = [
                    {"function": {"name": c.name, "arguments": json.loads(c.arguments)}}
                    for c in reply.normalised_calls()
                ]
                self._line(
                    {
                        "model": model,
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {
                            "role": "assistant",
                            "content": reply.text,
                            "tool_calls": calls,
                        },
                        "done": False,
                    }
                )
            if not isinstance(reply, Cut):
                self._line(
                    {
                        "model": model,
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": ""},
                        "done": True,
                        "done_reason": "stop",
                        "prompt_eval_count": fake.prompt_tokens(body),
                        "eval_count": len(text) // 4 + 1,
                    }
                )
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (_ClientGone, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        finally:
            fake._set_active(-1)

    def _line(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class FakeLocal(FakeOpenAI):
    """A local model server of one kind (see the module docstring)."""

    def __init__(
        self,
        kind: Kind = "llama.cpp",
        *,
        n_ctx: int = 4096,
        model_window: int | None = None,
        models: tuple[str, ...] = ("local-model",),
        loaded: bool = True,
        num_ctx_parameter: int | None = None,
        overflow: Overflow | None = None,
        string_template: bool = False,
        one_system: bool = False,
        token_scale: float = 1.0,
    ) -> None:
        super().__init__()
        self.kind = kind
        self.n_ctx = n_ctx
        """The window requests get (llama.cpp n_ctx per slot, Ollama's running num_ctx,
        LM Studio's loaded length, vLLM's max_model_len)."""
        self.model_window = model_window or max(n_ctx, 32_768)
        """The model's own (trained) window, where the server tells it apart."""
        self.models = models
        self.loaded = loaded
        """Ollama / LM Studio: the model is in memory (so its running window is known)."""
        self.num_ctx_parameter = num_ctx_parameter
        """Ollama: `PARAMETER num_ctx` in the model's Modelfile (shown by /api/show)."""
        self.overflow: Overflow = overflow or DEFAULT_OVERFLOW[kind]
        self.string_template = string_template
        self.one_system = one_system
        self.token_scale = token_scale
        """How many more tokens this model's tokenizer makes of the same text than the base
        count (JSON / 4): SmolLM2's made ~1.7x of what tiktoken's o200k counts."""
        self.asked: list[str] = []
        """Every GET and /api/show request's method and path, in order."""
        self.template_failures = 0
        self.overflows = 0
        self.truncated = 0
        self.root_url = ""

    def start(self) -> FakeLocal:
        if self._server is not None:
            return self
        import threading

        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _LocalHandler)
        server.fake = self
        self._server = server
        self.root_url = f"http://127.0.0.1:{server.server_address[1]}"
        self.base_url = f"{self.root_url}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-{self.kind}",
            daemon=True,
        )
        self._thread.start()
        return self

    def __enter__(self) -> FakeLocal:
        return self.start()

    # -- the questions about the window ---------------------------------------------------

    def _ollama_name(self, name: str) -> str:
        return name if ":" in name else f"{name}:latest"

    def get_route(self, path: str) -> Any:
        kind = self.kind
        if path == "/v1/models":
            rows = []
            for name in self.models:
                row: dict[str, Any] = {
                    "id": name,
                    "object": "model",
                    "created": 0,
                    "owned_by": kind,
                }
                if kind == "vllm":
                    row.update({"root": name, "max_model_len": self.n_ctx})
                if kind == "llama.cpp":
                    row["meta"] = {"n_ctx_train": self.model_window, "n_params": 135_000_000}
                rows.append(row)
            return {"object": "list", "data": rows}
        if path == "/props" and kind == "llama.cpp":
            return {
                "default_generation_settings": {"n_ctx": self.n_ctx, "params": {}},
                "total_slots": 1,
                "model_path": f"/models/{self.models[0]}.gguf",
                "chat_template": "{{ messages }}",
            }
        if path == "/api/tags" and kind == "ollama":
            return {
                "models": [
                    {"name": self._ollama_name(n), "model": self._ollama_name(n)}
                    for n in self.models
                ]
            }
        if path == "/api/ps" and kind == "ollama":
            loaded = (
                [
                    {
                        "name": self._ollama_name(n),
                        "model": self._ollama_name(n),
                        "size": 1,
                        "size_vram": 1,
                        "context_length": self.n_ctx,
                    }
                    for n in self.models
                ]
                if self.loaded
                else []
            )
            return {"models": loaded}
        if path.startswith("/api/v0/models/") and kind == "lmstudio":
            name = unquote(path.removeprefix("/api/v0/models/"))
            if name not in self.models:
                return None
            row = {
                "id": name,
                "object": "model",
                "type": "llm",
                "arch": "qwen2",
                "state": "loaded" if self.loaded else "not-loaded",
                "max_context_length": self.model_window,
            }
            if self.loaded:
                row["loaded_context_length"] = self.n_ctx
            return row
        return None

    def show(self, name: str) -> dict[str, Any] | None:
        if self._ollama_name(name) not in {self._ollama_name(n) for n in self.models}:
            return None
        parameters = 'stop "<|im_end|>"'
        if self.num_ctx_parameter:
            parameters = f"num_ctx {self.num_ctx_parameter}\n{parameters}"
        return {
            "modelfile": "FROM x",
            "parameters": parameters,
            "template": "{{ .Prompt }}",
            "details": {"family": "qwen2", "parameter_size": "7.6B"},
            "model_info": {
                "general.architecture": "qwen2",
                "qwen2.context_length": self.model_window,
                "qwen2.embedding_length": 3584,
            },
        }

    def estimate_usage(self, body: dict[str, Any], *outputs: str) -> Usage:
        """Reported usage counts the prompt as the window check does (tools included)."""
        usage = _estimate_usage(body, *outputs)
        usage.prompt_tokens = self.prompt_tokens(body)
        return usage

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """The prompt as this server's model counts it (`token_scale` times the base)."""
        return int(prompt_tokens(body) * self.token_scale)

    # -- how a request fails by itself ----------------------------------------------------

    def _template_fails(self, body: dict[str, Any]) -> bool:
        messages = body.get("messages") or []
        if self.string_template and any(isinstance(m.get("content"), list) for m in messages):
            return True
        return self.one_system and any(m.get("role") == "system" for m in messages[1:])

    def _problem(self, body: dict[str, Any]) -> Reply | None:
        if "messages" not in body:
            return None
        if self._template_fails(body):
            self.template_failures += 1
            return Cut()  # 200, the role chunk, then the end: the template raised
        tokens = self.prompt_tokens(body)
        if tokens <= self.n_ctx:
            return None
        if self.overflow == "truncate":
            self.truncated += 1
            return None
        self.overflows += 1
        return self._overflow_reply(tokens)

    def _overflow_reply(self, tokens: int) -> Reply:
        n_ctx = self.n_ctx
        if self.overflow == "silent":
            return Cut()
        if self.overflow == "stream":
            return StreamError(
                f"Requested tokens ({tokens}) exceed context window of {n_ctx}",
                code=None,
                type="server_error",
            )
        if self.kind == "llama.cpp":
            return Error(
                400,
                "the request exceeds the available context size, try increasing it",
                type="exceed_context_size_error",
                extra={"n_prompt_tokens": tokens, "n_ctx": n_ctx},
            )
        if self.kind == "lmstudio":
            return Error(
                400,
                f"Trying to keep the first {tokens} tokens when context the "
                "overflows. However, the model is loaded with context length of only "
                f"{n_ctx} tokens, which is not enough. Try to load the model with a "
                "larger context length, or provide a shorter input",
            )
        return Error(
            400,
            f"This model's maximum context length is {n_ctx} tokens. However, "
            f"you requested {tokens} tokens ({tokens} in the messages, 0 in the "
            "completion). Please reduce the length of the messages or completion.",
            type="BadRequestError",
        )


__all__ = ["Cut", "FakeLocal", "StreamError", "Text", "ToolCalls", "prompt_tokens"]
