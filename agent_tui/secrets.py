"""Which environment variables the tools' processes get, and which values are secrets.

Keys reach agent-tui through the environment or the config (`{env:NAME}`); they must
never come back in a tool output (`env`, `cat .env`, an error echoing a header), in the
database or in exports. Commands run without the variables whose names look secret
(`DEFAULT_EXCLUDE` plus config `shell.env.exclude`, minus `shell.env.include`), and the
values of those variables and of the configured keys are redacted (redact.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

DEFAULT_EXCLUDE = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*CREDENTIAL*")
"""Names withheld from tools' processes (fnmatch patterns, case-insensitive)."""


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatchcase(upper, pattern.upper()) for pattern in patterns)


@dataclass(frozen=True)
class ToolEnvironment:
    """The environment for processes the tools start, and what was left out of it."""

    env: dict[str, str]
    withheld: dict[str, str] = field(default_factory=dict)
    """Name -> value of every variable left out (the values are redacted everywhere)."""

    @classmethod
    def build(
        cls,
        environ: Mapping[str, str],
        exclude: Iterable[str] = (),
        include: Iterable[str] = (),
        fixed: Mapping[str, str] | None = None,
    ) -> ToolEnvironment:
        """`environ` minus names matching DEFAULT_EXCLUDE or `exclude`, unless they match
        `include`; then `fixed` (config `shell.env.set`) on top."""
        patterns = (*DEFAULT_EXCLUDE, *exclude)
        include = tuple(include)
        fixed = dict(fixed or {})
        withheld = {
            name: value
            for name, value in environ.items()
            if name not in fixed and matches_any(name, patterns) and not matches_any(name, include)
        }
        env = {name: value for name, value in environ.items() if name not in withheld} | fixed
        return cls(env=env, withheld=withheld)

    def withheld_line(self) -> str:
        """The names (never the values) of the variables left out, for `context`."""
        if not self.withheld:
            return "Withheld from tools: none (shell.env.exclude adds name patterns)"
        names = ", ".join(sorted(self.withheld))
        return f"Withheld from tools: {names} (shell.env.include puts one back)"

    def known_secrets(self, configured_keys: Mapping[str, str] | None = None) -> dict[str, str]:
        """Secret value -> the name it is redacted as: withheld variables first, then the
        configured keys (`provider.<name>.api_key`). A value the tools see anyway under
        another name (HOME's path in a withheld KEYS_DIR) is not treated as a secret;
        a configured key always is."""
        visible = set(self.env.values())
        known = {v: n for n, v in sorted(self.withheld.items()) if v and v not in visible}
        for name, value in (configured_keys or {}).items():
            if value:
                known.setdefault(value, name)
        return known
