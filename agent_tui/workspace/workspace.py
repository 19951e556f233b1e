"""One project directory and everything that belongs to it (see the package's doc)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from agent_tui import paths
from agent_tui.config.hook_config import HookSource
from agent_tui.config.layers import person_data
from agent_tui.config.person_edits import own_config_path, save_outside
from agent_tui.config.settings import Config, ProjectTrust, resolve_env_ref
from agent_tui.errors import ConfigError
from agent_tui.events import Event, Notice
from agent_tui.hooks.runner import Hooks
from agent_tui.lsp.language_servers import LspServers, Server
from agent_tui.mcp.mcp_servers import McpServers
from agent_tui.project.agents import AgentCatalog, load_agents
from agent_tui.project.awaiting_trust import held_back
from agent_tui.project.skills import USER_SKILLS_DIR
from agent_tui.provider.api import complete_text
from agent_tui.provider.auth import credentials
from agent_tui.provider.stream_events import ModelRequest
from agent_tui.redact import Redactor
from agent_tui.sandbox import Sandbox
from agent_tui.sandbox.containment import Blocked, Containment
from agent_tui.secrets import ToolEnvironment
from agent_tui.tool.base import AskPermission, PermissionRequest
from agent_tui.tool.escalation import UNSANDBOXED
from agent_tui.tool.registry import ToolRegistry
from agent_tui.tool.task import TASK_TOOL, TaskTool
from agent_tui.trust import store, trusted_files, variables
from agent_tui.trust.keys import explain
from agent_tui.trust.memory_imports import OutsideImport
from agent_tui.workspace.skipped import skipped_files

RUNS_PROJECT_CODE = ("rust", "typescript")
"""Default language servers that run the project's own code (rust-analyzer its build
scripts and proc macros, typescript-language-server the project's TypeScript from
node_modules): started only in a trusted project, and in the sandbox like every server."""
PROMPT_HOOK_MAX_TOKENS = 300
"""A prompt hook's answer is a line of JSON."""


class Workspace:
    """A project directory: its config and trust, and what they start."""

    def __init__(
        self,
        directory: Path,
        config: Config,
        *,
        registry: ToolRegistry,
        publish: Callable[[Event], None],
        own_dirs: list[Path],
        own_files: list[Path],
        output_dir: Path,
        ask: Callable[[], AskPermission | None] = lambda: None,
    ) -> None:
        self.directory = directory.resolve()
        self._ask = ask
        """How to ask the person now (the front-end's; None: nobody to ask)."""
        self.config = config
        project = config.project or ProjectTrust(directory=str(self.directory))
        if not project.trusted:  # its command and agent files' grants wait too
            project = project.model_copy(
                update={"waiting": [*project.waiting, *held_back(self.directory)]}
            )
        self.project = project
        self.registry = registry
        self.publish = publish
        policy = config.shell.env
        self.tool_env = ToolEnvironment.build(
            os.environ, policy.exclude, policy.include, policy.set
        )
        self.redact = Redactor(self.tool_env.known_secrets(_configured_keys(config)))
        self.sandbox = self._sandbox(own_dirs, own_files, output_dir)
        self.agents: AgentCatalog | None = None
        self._for_now = False
        """The person let the project's commands run in this process only (ACP "once")."""
        self._told_changed = False
        self._seen: trusted_files.Seen = {}
        self._programs()  # asks the trust above
        self._refused: set[tuple[str, str]] = set()
        # Each MCP server reads your environment through mcp_expansion as it starts.
        for name, server in self.mcp.servers.items():
            server.expand = self.mcp_expansion(name)

    def _sandbox(self, own_dirs: list[Path], own_files: list[Path], output_dir: Path) -> Sandbox:
        project_config = self.directory / trusted_files.CONFIG_FILE_NAME
        return Sandbox(
            self.config.sandbox,
            own_dirs=own_dirs,
            own_files=[
                *own_files,
                *(Path(s) for s in self.config.sources if Path(s) != project_config),
            ],
            revealed=[output_dir, paths.config_dir() / USER_SKILLS_DIR],
            protected=[Path(p) for p in self.project.protected],
        )

    def _programs(self) -> None:
        """What the project's config starts: hooks, language and MCP servers, each where
        the containment puts it (sandbox/containment.py)."""
        # The MCP servers the project's files define (its `sandbox: false` never counts).
        project_servers = {*self.project.mcp_servers, *self.project.claude_mcp}
        self.containment = Containment(
            self.sandbox,
            self.directory,
            {k: list(v) for k, v in self.config.sandbox.outside.items()},
            let_out=self._let_out,
            project_env=_project_env(self.config),
        )
        self.hooks = Hooks(
            self.config.hook_sources,
            trusted=self._hook_runs,
            warn=self.warn,
            tell=self.tell,
            evaluate=self._ask_model,
            containment=self.containment,
            contained_env=self.tool_env.env,
        )
        self.lsp = LspServers(
            self.config.lsp,
            self.tool_env.env,
            self.warn,
            allowed=self._lsp_runs,
            containment=self.containment,
        )
        self.mcp = McpServers(
            {n: c for n, c in self.config.mcp.items() if n not in project_servers or self.trusted},
            self.registry,
            self.publish,
            self.tool_env.env,
            self.directory,
            containment=self.containment,
            project_servers=project_servers,
        )

    def warn(self, line: str) -> None:
        self.publish(Notice(level="warning", message=line))

    def tell(self, line: str) -> None:
        self.publish(Notice(level="info", message=line))

    def session_servers(self) -> McpServers:
        """MCP servers for one session (an editor's): run as the person's own servers of
        this project run, their tools in a registry of their own, the project's names
        taken."""
        return McpServers(
            {},
            ToolRegistry(),
            self.publish,
            self.tool_env.env,
            self.directory,
            containment=self.containment,
            beside=self.registry,
        )

    async def announce_sandbox(self) -> None:
        """Once: a notice when commands cannot be sandboxed here."""
        if self.sandbox.announced:
            return
        self.sandbox.announced = True
        if (notice := await self.sandbox.start_notice()) is not None:
            self.warn(notice)

    async def _ask_model(self, prompt: str, model: str | None) -> str:
        """A prompt hook's question, to its model, else the small one, else the main one."""
        model = model or self.config.small_model or self.config.model
        api_base, api_key = credentials(model, self.config)
        request = ModelRequest(
            model=model,
            api_base=api_base,
            api_key=api_key,
            max_tokens=PROMPT_HOOK_MAX_TOKENS,
            messages=[{"role": "user", "content": prompt}],
        )
        return await complete_text(request)

    # ---- the sandbox of what the project brings ----------------------------------------

    async def _let_out(self, blocked: Blocked) -> bool:
        """The sandbox stopped a project's program: one line naming it, what was blocked
        and the key of the person's own config that lets it out; where someone can answer,
        the choice a blocked bash command gets (once, or always for this project: saved in
        the person's own config, never the project's)."""
        config = own_config_path()
        entry = f'"sandbox": {{"outside": {{"{self.directory}": ["{blocked.name}"]}}}}'
        self.warn(
            f"{blocked.what} was stopped by the sandbox: {blocked.reason} "
            f"To run it outside in this project: {entry} in your own config ({config})."
        )
        ask = self._ask()
        if ask is None or blocked.session_id is None:
            return False
        if self.config.permission.get(UNSANDBOXED) == "deny":
            return False
        reply = await ask(
            PermissionRequest(
                session_id=blocked.session_id,
                tool=UNSANDBOXED,
                title=f"Run outside the sandbox: {blocked.what}",
                detail=f"{blocked.reason}\n\n{blocked.name}",
                input={"name": blocked.name},
                question=(
                    "The sandbox stopped a program this project brings. Run it again "
                    "outside the sandbox, with your full rights?"
                ),
                always=blocked.name,
                always_label=f"Always, in this project (saved in {config})",
            )
        )
        if reply == "always":
            try:
                save_outside(self.directory, blocked.name)
            except (OSError, ConfigError) as exc:
                self.warn(f"Could not save sandbox.outside in {config}: {exc}")
            self.containment.add_outside(blocked.name)
        return reply in ("once", "always")

    # ---- trust -------------------------------------------------------------------------

    @property
    def trusted(self) -> bool:
        return self.project.trusted or self._for_now

    @property
    def asks_trust(self) -> bool:
        """Something of the project's config, or a file outside it its memory files
        import, waits for the person's trust."""
        return not self.trusted and bool(self.project.waiting or self.imports_waiting())

    @property
    def trust_refused(self) -> bool:
        """The person refused to trust the project for good (an editor's "Reject
        always"), its files as they are now: not asked again until they change."""
        return not self.trusted and store.refused(self.directory, self.project.files)

    def refuse_trust(self) -> None:
        store.refuse(self.directory, self.project.files)

    def imports_waiting(self) -> list[OutsideImport]:
        """The files outside the project its memory files would read once it is trusted
        (project/memory.py reads none of them until then; a secret's, never)."""
        return [] if self.trusted else [item for item in self.project.imports if not item.secret]

    def trusted_elsewhere(self) -> bool:
        """Not trusted here, but trusted since (`agent-tui trust` in another terminal,
        `run --attach --trust`): the trust store holds the project's files as they are."""
        if self.trusted or not (files := self._digests()):
            return False
        return store.state(self.directory, files, self.config.trusted_projects).trusted

    def run_for_now(self) -> None:
        self._for_now = True

    def commands_may_run(self) -> bool:
        """Whether the project's own commands may run now: it is trusted and every file
        the trust vouched for is as it was (a script rewritten since waits)."""
        return self.trusted and not self.notice_changes()

    def notice_changes(self) -> bool:
        """Whether a vouched file (the project's config, `.agent-tui/`, a script its
        commands run) changed since the config was loaded: by `git pull`, an edit or a
        command. The person is told once; what changed waits for their trust."""
        if self.project.status == "by-config":
            return False
        changed = store.compare(self.project.files, self._digests()).changed
        if changed and not self._told_changed:
            self._told_changed = True
            what = store.describe_change(changed)
            if self.project.status == "nothing":
                self.warn(
                    f"This project's agent-tui config appeared during the session ({what}): "
                    "nothing of it applies now, and what would run waits until you trust "
                    "it (`agent-tui trust`)."
                )
            else:
                self.warn(
                    f"This project's files changed since they were trusted ({what}): its "
                    "commands (hooks, language servers, MCP servers, formatters) wait until "
                    "you trust it again (`agent-tui trust`)."
                )
        return bool(changed)

    def _digests(self) -> dict[str, str]:
        """The vouched files now, each read again only once it changed on disk. The
        scripts are those of the config as loaded: a changed config is itself a change."""
        runs = [Path(p) for p in self.project.run_files]
        files = trusted_files.vouched_files(self.directory, runs)
        return trusted_files.digests(self.directory, files, self._seen)

    def _hook_runs(self, source: HookSource) -> bool:
        return not source.project or self.config.trust_project_hooks or self.commands_may_run()

    def _lsp_runs(self, server: Server, configured: bool) -> bool:
        own = server.name in self._project_names("lsp")
        if own or server.name in RUNS_PROJECT_CODE or _inside(self.directory, server.argv[0]):
            return self.project.status != "nothing" and self.commands_may_run()
        return True

    def mcp_expansion(self, name: str) -> Callable[[str, str], str] | None:
        """How the project's MCP server `name` reads your environment as it starts
        (trust/variables.py): a variable withheld from commands only where the recorded
        trust named it (the variable, this server, where it goes), else "" and one line
        saying so. None for your own servers: expanded as your config says."""
        config = self.config.mcp.get(name)
        if not self.project.trusted or name not in self.project.mcp_servers or config is None:
            return None
        shown = set(self.project.named.get(name, ()))
        sent = variables.sent({name: config.model_dump()})

        def allowed(variable: str) -> bool:
            lines = {item.line() for item in sent if item.variable == variable}
            return not self._secret(variable) or (bool(lines) and lines <= shown)

        def refused(variable: str) -> None:
            if (name, variable) in self._refused:
                return
            self._refused.add((name, variable))
            self.warn(
                f"MCP server {name}: ${variable} left empty: it is withheld from commands "
                "and your trust in this project did not name it for this server "
                "(`agent-tui trust` shows what the project's servers would receive and asks)."
            )

        return functools.partial(variables.expand, allowed=allowed, refused=refused)

    def _secret(self, variable: str) -> bool:
        """Whether commands are not given this variable as it is (shell.env: withheld)."""
        value = os.environ.get(variable)
        return value is not None and self.tool_env.env.get(variable) != value

    def unnamed_secrets(self) -> list[str]:
        """The question's lines of secrets the project's servers would receive that its
        trust did not name (one recorded before they were listed, your own entry changed,
        or your `trusted_projects`): left empty until the project is trusted again."""
        if not self.project.trusted:
            return []
        named = self.project.named
        return [
            item.line()
            for item in self.project.sent
            if self._secret(item.variable) and item.line() not in named.get(item.server, [])
        ]

    def _project_names(self, key: str) -> set[str]:
        """The names of what the project's config defines under `key` (`commands` lists
        each as `NAME (its command line)`)."""
        return {entry.split(" (", 1)[0] for entry in self.project.commands.get(key, [])}

    def formatter_runs(self, suffix: str) -> bool:
        own = self.project.commands.get("format", [])
        return (suffix not in own and suffix.lstrip(".") not in own) or self.commands_may_run()

    def waiting_lines(self) -> list[str]:
        """What of the project's config waits for trust, one line a key, with why."""
        return [] if self.trusted else explain(self.project.waiting)

    # ---- agents ------------------------------------------------------------------------

    def agent_catalog(self) -> AgentCatalog:
        """The agents, loaded once (a stable prompt prefix): a warning per file skipped
        (workspace/skipped.py), and the task tool told which subagents it offers."""
        if self.agents is None:
            self.agents = load_agents(self.config, self.directory, trusted=self.trusted)
            for warning in [*skipped_files(self.directory, self.project), *self.agents.warnings]:
                self.publish(Notice(session_id=None, level="warning", message=warning))
            subagents = [(a.name, a.description) for a in self.agents.subagents()]
            if subagents and self.registry.get(TASK_TOOL) is not None:
                self.registry.register(TaskTool(subagents))
        return self.agents

    async def close(self) -> None:
        await self.lsp.close()
        await self.mcp.close()
        await self.sandbox.close()


def _inside(root: Path, program: str) -> bool:
    """Whether a server's program (a path, or a name found on PATH, as LspServers found
    it) is a file of the project: something the repository ships."""
    # A bare name was looked up on PATH (LspServers gives defaults as full paths).
    return "/" in program and paths.is_within(root / program, root)


def _project_env(config: Config) -> dict[str, str]:
    """The variables of `shell.env.set` the project's config set (not the person's)."""
    try:
        own = person_data().get("shell", {}).get("env", {}).get("set", {})
    except (ConfigError, AttributeError):
        own = {}
    own = own if isinstance(own, dict) else {}
    return {k: v for k, v in config.shell.env.set.items() if own.get(k) != v}


def _configured_keys(config: Config) -> dict[str, str]:
    """`provider.<name>.api_key` -> the key, `{env:NAME}` resolved."""
    keys: dict[str, str] = {}
    for name, provider in config.provider.items():
        if provider.api_key is None:
            continue
        where = f"provider.{name}.api_key"
        try:
            key = resolve_env_ref(provider.api_key.get_secret_value(), where)
        except ConfigError:
            continue  # reported when that provider is used
        if key:
            keys[where] = key
    return keys
