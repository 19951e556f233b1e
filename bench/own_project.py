"""A bench's project is the person's own: trusted through `trusted_projects` in a config
dir of the bench's (docs/security.md#repository-trust), as a person's own repository
would be, so its agent-tui.json (the fake server's api_base, permissions) applies."""

from __future__ import annotations

import json
import os
from pathlib import Path


def own_project(project: Path, config_dir: Path | None = None) -> Path:
    """Trust `project` in `config_dir` (default: $AGENT_TUI_CONFIG_DIR, else a folder
    beside the project, then set as $AGENT_TUI_CONFIG_DIR). Returns the config dir."""
    if config_dir is None:
        found = os.environ.get("AGENT_TUI_CONFIG_DIR")
        config_dir = Path(found) if found else project.parent / "bench-config"
        os.environ["AGENT_TUI_CONFIG_DIR"] = str(config_dir)
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / "config.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    trusted = [*data.get("trusted_projects", []), str(project.resolve())]
    path.write_text(json.dumps({**data, "trusted_projects": trusted}), encoding="utf-8")
    return config_dir
