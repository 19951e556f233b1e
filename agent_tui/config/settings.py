"""Configuration: pydantic models, file lookup and merging, `{env:NAME}` references."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)

from agent_tui import paths, pydantic_plugins  # noqa: F401 (before the models: no plugin scan)
from agent_tui.config import claude_settings
from agent_tui.config.claude_permissions import permission_of
from agent_tui.config.hook_config import HookMatcher, HookSource
from agent_tui.config.keybinds import DEFAULT_KEYS
from agent_tui.config.layers import CONFIG_FILE_NAME as CONFIG_FILE_NAME
from agent_tui.config.layers import ProjectLayer, check_attach, person_files, project_layer
from agent_tui.config.layers import merge_layers as _deep_merge
from agent_tui.config.layers import read_json as _read_json
from agent_tui.config.lsp_config import LspConfig
from agent_tui.errors import ConfigError
from agent_tui.trust.memory_imports import OutsideImport
from agent_tui.trust.store import TRUSTED
from agent_tui.trust.trusted_files import run_files
from agent_tui.trust.variables import Sent

DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"
"""The model when the config names none and no key or local server picks one
(provider/defaults.py `choose_model`); it is also Anthropic's default there."""
ENV_REF = re.compile(r"^\{env:([A-Za-z_][A-Za-z0-9_]*)\}$")

PermissionLevel = Literal["allow", "ask", "deny"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderConfig(_Strict):
    api_base: str | None = None
    """Base URL of the provider's API (e.g. a local OpenAI-compatible server)."""
    api_key: SecretStr | None = None
    """The key itself, or `{env:NAME}` to read it from an environment variable."""


class ModelLimit(_Strict):
    context: int = Field(default=0, ge=0)
    """Context window in tokens; 0 means unknown (context % is not shown, never overflows)."""
    input: int | None = Field(default=None, ge=0)
    """Maximum input tokens, when the provider limits input separately."""
    output: int | None = Field(default=None, ge=0)
    """Maximum output tokens."""


ReasoningEffort = Literal["minimal", "low", "medium", "high"]


class ReasoningConfig(_Strict):
    effort: ReasoningEffort | None = None
    """Reasoning effort, passed as litellm's `reasoning_effort` (OpenAI, Gemini, Claude)."""
    budget_tokens: int | None = Field(default=None, ge=1024)
    """Extended-thinking budget in tokens (Anthropic `thinking`); wins over effort."""


class ModelConfig(_Strict):
    limit: ModelLimit = Field(default_factory=ModelLimit)
    cache: bool = True
    """Prompt caching: cache_control breakpoints (Claude) or prompt_cache_key (OpenAI)."""
    reasoning: ReasoningConfig | None = None
    """Reasoning / thinking for this model, e.g. {"effort": "medium"} or {"budget_tokens": 8000}."""
    vision: bool | None = None
    """Whether the model takes images (a tool's image is sent, else a one-line note is);
    null: litellm's model info (`supports_vision`), and no for models it does not know."""


class TruncationConfig(_Strict):
    max_lines: int = Field(default=2000, ge=1)
    """A tool output over this many lines is truncated and saved in full."""
    max_bytes: int = Field(default=50 * 1024, ge=1)
    """A tool output over this many bytes is truncated and saved in full."""
    max_saved_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    """A saved full output is cut to this size: its head and tail are kept, with a line
    saying how much was cut from the middle."""
    retention_days: int = Field(default=7, ge=0)
    """Saved outputs older than this are deleted when agent-tui starts (0 = keep for ever)."""


class ImagesConfig(_Strict):
    max_bytes: int = Field(default=3_932_160, ge=1024)
    """An image the read tool returns may be at most this large (3.75 MB: Anthropic's
    5 MB once base64-encoded); a larger one is refused with a line saying so."""
    max_side: int = Field(default=8000, ge=1)
    """Pixels on an image's longer side at most (Anthropic refuses larger images)."""


class ShellEnvConfig(_Strict):
    exclude: list[str] = Field(default_factory=list)
    """More name patterns (fnmatch, case-insensitive) withheld from commands, on top of
    *KEY*, *SECRET*, *TOKEN*, *PASSWORD*, *CREDENTIAL*; their values are redacted."""
    include: list[str] = Field(default_factory=list)
    """Names or patterns passed to commands although an exclude pattern matches them."""
    set: dict[str, str] = Field(default_factory=dict)
    """Variables set for every command (they win over agent-tui's own environment; PAGER,
    GIT_PAGER and GIT_TERMINAL_PROMPT stay as bash sets them)."""


class ShellConfig(_Strict):
    env: ShellEnvConfig = Field(default_factory=ShellEnvConfig)
    """The environment of the processes tools start (bash)."""


DEFAULT_DENY_READ = ("~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.netrc")
"""Secret paths commands in the sandbox cannot read (sandbox.deny_read's default)."""


class SandboxConfig(_Strict):
    """The OS sandbox (bubblewrap, Linux) of bash commands, `!command` and everything a
    project brings (hooks, language and MCP servers, formatters): everything read-only
    but the project, a per-session temp dir and `writable`; secrets unreadable; no
    network; its own process namespace."""

    enabled: bool = True
    """Sandbox every command where bubblewrap works (false: commands run with your rights)."""
    network: bool = False
    """Let sandboxed commands use the network (off: only the sandbox's own loopback)."""
    writable: list[str] = Field(default_factory=list)
    """More paths commands may write besides the project and their temp dir (`~` works),
    e.g. ["~/.cache", "~/.npm"]."""
    deny_read: list[str] = Field(default_factory=lambda: list(DEFAULT_DENY_READ))
    """Paths commands cannot read (setting it replaces this list; `~` works). agent-tui's
    own data and config dirs are never readable."""
    required: bool = False
    """Refuse to run commands (and local MCP servers) when no sandbox is possible here,
    instead of running them unsandboxed with a notice."""
    outside: dict[str, list[str]] = Field(default_factory=dict)
    """What a project brings that runs outside the sandbox, by project folder (`~` works;
    "*" for every project): `hook:COMMAND` (a hook's command as written), `lsp:NAME`,
    `mcp:NAME`, `format:.EXT`. Everything else a project brings (hooks, language servers,
    MCP servers, formatters) runs in the sandbox, trusted or not. Only your own config's
    list counts: a project's file never sets it."""


class CompactionConfig(_Strict):
    auto: bool = True
    """Summarise automatically when the context window fills up."""
    threshold: float = Field(default=1.0, gt=0, le=1)
    """The share of usable at which automatic compaction fires (1 = when usable is full)."""
    prune: bool = True
    """Clear old tool outputs (beyond prune_protect tokens) before summarising."""
    prune_protect: int = Field(default=40_000, ge=0)
    """Tokens of the newest tool outputs that are never pruned."""
    prune_minimum: int = Field(default=20_000, ge=0)
    """Prune only when at least this many tokens would be freed."""
    protected_tools: list[str] = Field(default_factory=lambda: ["skill"])
    """Tools whose outputs are never pruned."""
    output_token_max: int = Field(default=32_000, ge=1)
    """Output tokens reserved for the answer when computing the usable window."""
    reserved: int | None = Field(default=None, ge=0)
    """Extra tokens kept free below the window (default: none beyond output_token_max)."""
    tail_tokens: int | None = Field(
        default=None,
        ge=0,
        validation_alias=AliasChoices("tail_tokens", "preserve_recent_tokens"),
    )
    """Newest steps kept verbatim after compaction (default 20% of usable, at most 40,000)."""
    user_tokens: int | None = Field(default=None, ge=0)
    """The person's own messages restated verbatim after a summary (default 5% of usable,
    at most 10,000)."""
    pin_tokens: int | None = Field(default=None, ge=0)
    """Pinned messages and tool results restated verbatim after every summary (default
    10% of usable, between 1,000 and 20,000; 20,000 when the window is unknown); pins
    that do not fit are named instead, with a notice."""
    prompt: str | None = None
    """A file path or the text of a prompt replacing prompts/compaction.txt."""
    model: str | None = None
    """A cheaper litellm model id for summaries (default: the session's model)."""
    budget_reminder: float = Field(default=0.5, ge=0, le=1)
    """Past this fraction of usable, each model request ends with a short reminder of the
    tokens used, the usable window and the compaction threshold (0 = never)."""
    prepare_at: float = Field(default=0.8, ge=0, le=1)
    """Past this share of the automatic threshold (`threshold` of usable), the summary is
    written in the background while the agent keeps working, and compaction applies it at
    once (0 = never). 0.8: the steps taken between preparing and the threshold (up to 20%
    of the threshold) stay verbatim, which is the size of the usual kept tail, so the
    prompt after a prepared compaction is as small as after one that waited. It is the
    latest start, and the start until the session's pace is measured; then a summary that
    the summariser's time would not finish by the threshold starts earlier
    (context/prepare_lead.py)."""
    prepare_earliest: float = Field(default=0.5, ge=0, le=1)
    """The earliest share of the threshold at which a slow summariser (or one never
    measured) starts preparing: a summary begun earlier would cover little, and the steps
    kept verbatim after it would fill the window again soon."""
    prepare_margin: float = Field(default=2.0, ge=0)
    """Steps of slack a preparation is started with beyond the steps the summariser's
    measured time spans, so that a slower summary or a larger step is still ready."""
    prepare_max_age: float = Field(default=900, ge=0)
    """Seconds a prepared summary stays usable; an older one is discarded (a person back
    from a break gets a summary of the conversation as it is now, never an old one)."""
    review: bool = False
    """A manual /compact shows the summary before applying it: apply, edit or discard.
    Automatic compaction never waits for a person."""


class RetryConfig(_Strict):
    max_attempts: int = Field(default=5, ge=1)
    """Attempts for rate limits, 5xx and dropped connections (1 = no retry)."""
    initial_delay: float = Field(default=2.0, ge=0)
    """Seconds before the first retry; doubles each attempt unless Retry-After says otherwise."""
    max_delay: float = Field(default=60.0, ge=0)
    """Longest wait between attempts, in seconds."""


AgentMode = Literal["primary", "subagent", "all"]
PermissionRule = PermissionLevel | dict[str, PermissionLevel]
"""A level, or for bash a level per command pattern: {"*": "ask", "git status*": "allow"}."""


class AgentPromptFile(_Strict):
    file: str
    """A prompt file: relative to the project directory (or, for a Markdown agent, its file)."""


class AgentConfig(_Strict):
    """An agent (project/agents.py), in OpenCode's shape: `agent.NAME` here, or the same keys in
    the front matter of `.agent-tui/agents/NAME.md` with the prompt as the body."""

    description: str = ""
    """What it is for; the task tool lists subagents by it."""
    mode: AgentMode | None = None
    """primary (Tab cycles it), subagent (the task tool runs it) or all (both; the default
    for a new agent; a built-in keeps its own)."""
    model: str | None = None
    """litellm model id (default: the session's model)."""
    reasoning: ReasoningConfig | None = None
    """Reasoning settings for its requests, over the model's `models.<id>.reasoning`."""
    prompt: str | AgentPromptFile | None = None
    """Its instructions: text, `{file:path}` or {"file": path}. A primary agent's prompt
    replaces the built-in base prompt; a subagent's follows prompts/task.txt."""
    tools: list[str] | dict[str, bool] | None = None
    """Tools offered: {NAME: true/false}, wildcards allowed ("github_*": false), the
    longest matching key wins; a list names the only ones. Default: every tool for a
    primary agent, the read-only ones for a subagent; `task` never runs inside a subagent."""
    permission: dict[str, PermissionRule] = Field(default_factory=dict)
    """Per tool: allow, ask or deny, over the top-level `permission`; bash also takes
    {command pattern: level} (the longest matching pattern wins, every command of a
    pipeline or chain must pass)."""
    max_steps: int | None = Field(
        default=None, ge=1, validation_alias=AliasChoices("max_steps", "steps", "maxSteps")
    )
    """Model calls per prompt for this agent (default: the top-level `max_steps`)."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature of its requests (default: the provider's)."""
    hidden: bool = False
    """A primary agent left out of the Tab cycle (still usable with `run --agent`)."""
    isolation: Literal["worktree"] | None = None
    """worktree: as a subagent, it works in a new git worktree of its own (Claude Code's
    `isolation: worktree`), removed after it when it changed nothing."""
    color: str | None = None
    """Accepted for OpenCode agent files; not used."""


class KeybindsConfig(_Strict):
    leader: str = DEFAULT_KEYS.leader
    """Leader key; the keys below marked (leader) follow it."""
    compact: str = DEFAULT_KEYS.compact
    """(leader) summarise the session now."""
    new_session: str = DEFAULT_KEYS.new_session
    """(leader) start a new session."""
    sessions: str = DEFAULT_KEYS.sessions
    """(leader) list sessions."""
    model: str = DEFAULT_KEYS.model
    """(leader) choose the model."""
    sidebar: str = DEFAULT_KEYS.sidebar
    """(leader) show or hide the sidebar."""
    uncompact: str = DEFAULT_KEYS.uncompact
    """(leader) take back the newest compaction."""
    undo: str = DEFAULT_KEYS.undo
    """(leader) undo the newest turn: restore its files, put its prompt back."""
    redo: str = DEFAULT_KEYS.redo
    """(leader) redo the turn undone last."""
    pin: str = DEFAULT_KEYS.pin
    """(leader) pin or unpin a message or tool result (the list of /pin)."""
    agent_cycle: str = DEFAULT_KEYS.agent_cycle
    """(leader) switch to the next primary agent (build, plan, ...); Tab in an empty prompt too."""
    permission_mode: str = DEFAULT_KEYS.permission_mode
    """(leader) cycle ask / auto-accept edits for this session; Shift+Tab in the prompt too."""
    next_waiting: str = DEFAULT_KEYS.next_waiting
    """(leader) open the session that has waited longest for you (a question, a plan)."""
    interrupt: str = DEFAULT_KEYS.interrupt
    """Interrupt the running step or compaction."""
    background: str = DEFAULT_KEYS.background
    """Send the shown session's running bash command to the background: the model gets its
    id at once and goes on while the command runs (/bashes lists and stops it). Works while
    the model's turn runs."""
    palette: str = DEFAULT_KEYS.palette
    """Command palette."""


class RunConfig(_Strict):
    attach: str = "off"
    """Where `agent-tui run` sends its prompt: off (run here), auto (to the `agent-tui
    serve` running on this machine when there is one, found through the file it keeps in
    the data dir; here otherwise), or a server's URL. `run --attach` overrides it."""

    @field_validator("attach")
    @classmethod
    def _attach(cls, value: str) -> str:
        return check_attach(value)


class RelayConfig(_Strict):
    idle: float = Field(default=30.0, ge=0)
    """Minutes your relay (litellm loaded once in a process of yours, relaying your
    commands' model requests: the app, `run`, `acp`) stays after its last command; 0:
    never start one, each command starts a provider process of its own (docs/relay.md).
    $AGENT_TUI_RELAY overrides it."""


DEFAULT_SERVER_PORT = 4097
"""`agent-tui serve`'s port (OpenCode's own `serve` uses 4096)."""


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    """The address `agent-tui serve` binds; anything but a loopback address opens the
    server (which runs bash) to the network: the token is then all that guards it."""
    port: int = Field(default=DEFAULT_SERVER_PORT, ge=0, le=65535)
    """The port `agent-tui serve` listens on (0: any free port, written to the data dir's
    server.json for `run.attach: auto`)."""


MCP_DEFAULT_TIMEOUT_MS = 10_000
"""How long an MCP server may take to start and list its tools (OpenCode's `timeout`)."""


class McpLocalConfig(_Strict):
    """An MCP server agent-tui starts as a process and talks to over stdin/stdout."""

    type: Literal["local"] = "local"
    command: list[str] = Field(min_length=1)
    """The program and its arguments, e.g. ["npx", "-y", "@modelcontextprotocol/server-memory"]."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Variables set for the server on top of the tools' environment (`shell.env`); a value
    `{env:NAME}` reads agent-tui's own variable NAME."""
    enabled: bool = True
    """False keeps the entry without starting the server."""
    timeout: int = Field(default=MCP_DEFAULT_TIMEOUT_MS, ge=1)
    """Milliseconds the server may take to start and list its tools."""
    sandbox: bool = True
    """Run the server in the sandbox (the `sandbox` section's rules); false opts it out."""


class McpRemoteConfig(_Strict):
    """An MCP server reached over streamable HTTP."""

    type: Literal["remote"] = "remote"
    url: str
    """The server's MCP endpoint, e.g. https://example.com/mcp."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request; a value `{env:NAME}` reads the variable NAME."""
    enabled: bool = True
    """False keeps the entry without connecting."""
    timeout: int = Field(default=MCP_DEFAULT_TIMEOUT_MS, ge=1)
    """Milliseconds the server may take to answer the handshake and list its tools."""


McpServerConfig = Annotated[McpLocalConfig | McpRemoteConfig, Field(discriminator="type")]


class ProjectTrust(BaseModel):
    """The project's own config and its trust, as loaded (workspace/ acts on it)."""

    directory: str
    file: str | None = None
    status: str = "nothing"
    """trusted, untrusted, changed, by-config (your trusted_projects), nothing (no
    project config or .agent-tui/ to trust)."""
    waiting: list[str] = Field(default_factory=list)
    """Key paths of the project's config that wait for trust (empty once trusted)."""
    changed: list[str] = Field(default_factory=list)
    """Since the trust was recorded: `+name` added, `-name` removed, `~name` changed."""
    files: dict[str, str] = Field(default_factory=dict)
    """What the trust vouches for: each file -> sha256."""
    run_files: list[str] = Field(default_factory=list)
    """Files inside the project its commands run (the trust covers them)."""
    protected: list[str] = Field(default_factory=list)
    """Read-only in the sandbox: those, and the project files your own config's commands
    run (a global hook running "$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh)."""
    commands: dict[str, list[str]] = Field(default_factory=dict)
    """What of the project's config would run or connect: `hooks`, `lsp`, `mcp`,
    `format` -> names; `endpoints` -> where requests would go."""
    mcp_servers: list[str] = Field(default_factory=list)
    """The MCP servers its config sets (agent-tui.json's and `.mcp.json`'s)."""
    sent: list[Sent] = Field(default_factory=list)
    """What of your environment those servers would receive (trust/variables.py)."""
    imports: list[OutsideImport] = Field(default_factory=list)
    """The files outside the project its memory files would read once it is trusted (a
    secret's never), trust/memory_imports.py."""
    named: dict[str, list[str]] = Field(default_factory=dict)
    """Server -> the lines of `sent` the recorded trust named: a variable withheld from
    commands (a secret) is given only as named there (Workspace.mcp_expansion)."""
    claude_mcp: list[str] = Field(default_factory=list)
    """The servers of Claude Code's `.mcp.json` (whether or not they wait for trust)."""
    claude_read: dict[str, str] = Field(default_factory=dict)
    """Claude Code's settings files of the project -> what each brought."""
    skipped: list[str] = Field(default_factory=list)
    """A line per broken project file left out (not JSON, wrong types, unreadable): the
    workspace shows them, the rest of the project applies."""

    @property
    def trusted(self) -> bool:
        return self.status in TRUSTED


class Config(_Strict):
    model: str = DEFAULT_MODEL
    """litellm model id, e.g. `openai/gpt-5.4` or `anthropic/claude-sonnet-4-6`. When no
    file sets it, the first provider with a key picks it (ANTHROPIC_API_KEY,
    OPENAI_API_KEY, GEMINI_API_KEY, ...), else a local Ollama / OpenAI-compatible server."""
    small_model: str | None = None
    """A cheap model for session titles (default: the main model)."""
    provider: dict[str, ProviderConfig] = Field(default_factory=dict)
    """Per litellm provider: api_base, api_key."""
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    """Per model id: limit.{context,input,output} overriding litellm's model info, cache
    (prompt caching on/off) and reasoning ({effort} or {budget_tokens})."""
    permission: dict[str, PermissionRule] = Field(default_factory=dict)
    """Per tool: allow, ask or deny, or a level per pattern (docs/configuration.md): bash
    by command (`{"git status*": "allow", "*": "ask"}`), read, edit, write, grep, glob and
    list by path (`{".env": "deny"}`), webfetch by domain (`{"domain:example.com":
    "allow"}`); among matching patterns the strictest wins, `*` is the rest. Claude
    Code's `permissions` lists are read into this shape. Defaults: read-only tools allow;
    edit, write, bash ask; `unsandboxed` (running a command again outside the sandbox
    after it blocked it) ask."""
    instructions: list[str] = Field(default_factory=list)
    """Extra instructions for the system prompt: file paths (relative to the project) and
    http(s) URLs (fetched once per start with a short timeout, cached in the data dir)."""
    max_steps: int = Field(default=100, ge=1)
    """Model calls per prompt before the agent is told to stop and summarise."""
    doom_loop: int = Field(default=3, ge=0)
    """Identical tool calls in a row before asking the person (0 disables)."""
    snapshot: bool = True
    """Snapshot the working tree (a shadow git repository under the data dir) before and
    after each step that runs tools, so /undo and /redo can restore files. Needs git."""
    retry: RetryConfig = Field(default_factory=RetryConfig)
    truncation: TruncationConfig = Field(default_factory=TruncationConfig)
    images: ImagesConfig = Field(default_factory=ImagesConfig)
    """Images tools return to the model (the read tool on a PNG, JPEG, GIF or WebP)."""
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    keybinds: KeybindsConfig = Field(default_factory=KeybindsConfig)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    """What commands the model runs may see of the environment."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The OS sandbox of commands and local MCP servers (bubblewrap on Linux)."""
    mcp: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers by name: their tools are offered as `NAME_TOOL` (permission default ask;
    `"NAME_*"` keys in `permission` match them)."""
    agent: dict[str, AgentConfig] = Field(default_factory=dict)
    """Agents by name (project/agents.py): new ones, or changes to the built-in `build` and `plan`.
    Markdown files in .agent-tui/agents/ and <config dir>/agents/ define them too."""
    run: RunConfig = Field(default_factory=RunConfig)
    """`agent-tui run`: whether it sends its prompt to a running `agent-tui serve`."""
    server: ServerConfig = Field(default_factory=ServerConfig)
    """`agent-tui serve`: where it listens (its token is in the data dir, see README)."""
    relay: RelayConfig = Field(
        default_factory=RelayConfig, validation_alias=AliasChoices("relay", "engine")
    )
    """Your relay, shared by your commands (`agent-tui relay` shows it)."""
    hooks: dict[str, list[HookMatcher]] = Field(default_factory=dict)
    """Commands run at fixed points, in Claude Code's shape (docs/hooks.md): event name ->
    [{matcher, hooks: [{type: "command", command, timeout}]}]. The global and project
    files' hooks all run; a project's own only once it is trusted."""
    lsp: LspConfig = Field(default_factory=LspConfig)
    """Language servers whose new errors after an edit the edit's result reports: by name
    ({"python": {"command": ["ruff", "server"], "extensions": [".py"]}}), else the first
    of ruff server, pylsp, pyright, typescript-language-server, gopls, rust-analyzer on
    PATH; `timeout`, `warnings`, `max_diagnostics`, `enabled`. Nothing is downloaded."""
    format: dict[str, str | list[str]] = Field(default_factory=dict)
    """Formatters run after the agent changes a file, by extension, `{file}` its path:
    {".py": "ruff format {file}", ".ts": "prettier --write {file}"}. In the sandbox."""
    idle_notification: float = Field(default=60.0, ge=0)
    """Seconds after the agent finishes a turn in the app, with nothing typed since,
    before Notification hooks hear `idle_prompt` (Claude Code's
    `messageIdleNotifThresholdMs`); 0: never."""
    notify: list[str] = Field(default_factory=list)
    """A program the app runs when a session that is not on screen waits for you or
    finishes, as Codex's `notify`: the words, then one JSON argument (`type`: waiting,
    finished or failed; `session_id`, `title`, `directory`, `reason`). On your machine,
    not in the sandbox: read from your own config only, never a project's."""
    notify_terminal: Literal["auto", "osc9", "osc777", "bell", "off"] = "auto"
    """How the app tells the terminal then: a bell, and a desktop notification where the
    terminal shows one (auto: OSC 9 in iTerm2, WezTerm, Ghostty and kitty, OSC 777 in foot
    and urxvt); osc9/osc777 force one; bell only; off."""
    trust_project_hooks: bool = False
    """Run every project's own hooks without asking (read from your own config only;
    `trusted_projects` trusts the whole project instead)."""
    trusted_projects: list[str] = Field(default_factory=list)
    """Folders whose projects you trust outright (`~` works; a folder trusts everything
    beneath it), e.g. your own repositories: their `agent-tui.json` and `.agent-tui/`
    apply in full with no question. Read from your own config only, never a project's."""

    # Where each value came from, for error messages; not part of the file format.
    sources: list[str] = Field(default_factory=list, exclude=True)
    hook_sources: list[HookSource] = Field(default_factory=list, exclude=True)
    """Each file's hooks (they add up, as in Claude Code, instead of replacing)."""
    project: ProjectTrust | None = Field(default=None, exclude=True)
    """The project's own config and its trust (None: built without a project)."""

    def resolve_env(self) -> Config:
        """Apply environment overrides that win over the file."""
        if os.environ.get("AGENT_TUI_DISABLE_AUTOCOMPACT") == "1":
            self.compaction.auto = False
        if os.environ.get("AGENT_TUI_DISABLE_PRUNE") == "1":
            self.compaction.prune = False
        return self

    def provider_for(self, model: str) -> tuple[str | None, str | None]:
        """(api_base, api_key) for a model's provider, with `{env:NAME}` resolved."""
        name = model.split("/", 1)[0] if "/" in model else "openai"
        if (cfg := self.provider.get(name)) is None:
            return None, None
        key = cfg.api_key.get_secret_value() if cfg.api_key else None
        return (
            resolve_env_ref(cfg.api_base, f"provider.{name}.api_base"),
            resolve_env_ref(key, f"provider.{name}.api_key"),
        )

    def limit_for(self, model: str) -> ModelLimit | None:
        return self.models[model].limit if model in self.models else None

    def model_settings(self, model: str) -> ModelConfig:
        """The `models.<id>` entry of a model, or the defaults."""
        return self.models.get(model) or ModelConfig()


def resolve_env_ref(value: str | None, field: str) -> str | None:
    if not (match := ENV_REF.match(value or "")):
        return value
    name = match.group(1)
    if not (resolved := os.environ.get(name)):
        raise ConfigError(
            f"Config field {field} is {value!r}, but the environment variable {name} is not set.\n"
            f"Set it (export {name}=...) or put the value in the config file."
        )
    return resolved


def _describe_error(err: dict[str, Any]) -> str:
    field = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        parent = Config
        for part in err["loc"][:-1]:
            ann = parent.model_fields.get(str(part)) if isinstance(parent, type) else None
            parent = ann.annotation if ann else None  # type: ignore[assignment]
        valid = ""
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            valid = " Valid keys here: " + ", ".join(sorted(parent.model_fields)) + "."
        return f"{field}: unknown key.{valid}"
    return f"{field}: {err['msg']} (got {err.get('input')!r})"


def _validated(data: dict[str, Any], where: str | Path) -> Config:
    """`data` as a Config; ConfigError naming `where` and the fields that are wrong."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        details = "\n".join("  " + _describe_error(e) for e in exc.errors()[:10])
        raise ConfigError(f"Invalid config in {where}:\n{details}") from exc


def load_config(
    overrides: dict[str, Any] | None = None,
    directory: Path | None = None,
    *,
    trust: bool = False,
) -> Config:
    """The config in force for a project directory: the person's own files, then as much
    of the project's own file as its trust allows (layers.project_layer); `trust`
    records the project as trusted first. ConfigError names the file and field."""
    directory = directory or Path.cwd()
    merged: dict[str, Any] = {}
    hook_sources: list[HookSource] = []
    trust_all = False
    files = person_files()
    person_runs: list[Path] = []
    claude_user = None if os.environ.get("AGENT_TUI_CONFIG") else claude_settings.user_file()
    if claude_user is not None:  # the person's own Claude Code settings: below their config
        raw = _read_json(claude_user)
        user_hooks = claude_settings.hooks_of(claude_user, raw)
        person_runs += run_files(directory, {"hooks": user_hooks})
        if user_hooks:
            hook_sources.append(HookSource(str(claude_user), _hooks_of(user_hooks, claude_user)))
        rules, _ = permission_of(claude_user, raw, paths.claude_home())
        merged = {"permission": rules} if rules else {}
    for path in files:
        data = _read_json(path)
        person_runs += run_files(directory, data)
        checked = _validated(data, path)
        if checked.hooks:
            hook_sources.append(HookSource(str(path), checked.hooks))
        trust_all = trust_all or checked.trust_project_hooks
        merged = _deep_merge(merged, {k: v for k, v in data.items() if k != "hooks"})
    layer = project_layer(directory, merged, trust_now=trust, check=_validated)
    applied = layer.applied
    if layer.path is not None:
        _validated(applied, layer.path)
        for path, hooks in layer.hook_files:
            hook_sources.append(HookSource(str(path), _hooks_of(hooks, path), project=True))
        merged = _deep_merge(merged, {k: v for k, v in applied.items() if k != "hooks"})
        files = [*files, layer.path]
    if overrides:
        merged = _deep_merge(merged, overrides)
    config = _validated(merged, "(command-line options)")
    config.sources = [str(p) for p in files]
    config.hook_sources = hook_sources
    config.trust_project_hooks = trust_all  # a project cannot trust its own hooks
    config.project = _project_trust(layer)
    config.project.protected = sorted({*config.project.run_files, *map(str, person_runs)})
    return config.resolve_env()


def _hooks_of(hooks: dict[str, Any], path: Path) -> dict[str, list[HookMatcher]]:
    """One file's hooks (a project's run only once it is trusted)."""
    return _validated({"hooks": hooks}, path).hooks


def _program(name: object, entry: object) -> str:
    """A server or formatter by name, with the program it runs (the trust question's)."""
    command = entry.get("command") if isinstance(entry, dict) else None
    if isinstance(command, list) and command:
        return f"{name} ({shlex.join(str(word) for word in command)})"
    return str(name)


def _project_trust(layer: ProjectLayer) -> ProjectTrust:
    data = layer.data
    commands: dict[str, list[str]] = {}
    for key in ("hooks", "lsp", "mcp", "format"):
        entries = data.get(key)
        if not isinstance(entries, dict):
            continue
        if key == "lsp":  # its servers, beside its own settings
            servers = entries.get("servers") if isinstance(entries.get("servers"), dict) else {}
            entries = {k: v for k, v in entries.items() if k not in LspConfig.model_fields}
            entries.update(servers)
        if entries:
            commands[key] = sorted(_program(name, entry) for name, entry in entries.items())
    endpoints = [
        f"{key}.{name}: {entry[field]}"
        for key, field in (("provider", "api_base"), ("mcp", "url"))
        for name, entry in (data.get(key) or {}).items()
        if isinstance(entry, dict) and entry.get(field)
    ]
    attach = data["run"].get("attach") if isinstance(data.get("run"), dict) else None
    if isinstance(attach, str) and attach != "off":
        endpoints.append(f"run.attach: {attach}")
    if endpoints:
        commands["endpoints"] = endpoints
    return ProjectTrust(
        directory=str(layer.directory.resolve()),
        file=str(layer.path) if layer.path is not None else None,
        status=layer.state.status,
        waiting=[] if layer.state.trusted else layer.split.waiting,
        changed=layer.state.changed,
        files=layer.state.files,
        run_files=[str(p) for p in layer.run_files],
        commands=commands,
        mcp_servers=sorted(data.get("mcp") or {}) if isinstance(data.get("mcp"), dict) else [],
        sent=layer.sent,
        named=layer.state.named,
        claude_mcp=layer.claude_mcp,
        claude_read=layer.claude_read,
        skipped=layer.skipped,
        imports=layer.imports,
    )
