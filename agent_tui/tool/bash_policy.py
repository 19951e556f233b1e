"""Per-command bash permissions: `{"*": "ask", "git status*": "allow"}` (an agent's
`permission.bash`). A command line is split into its simple commands (pipes, `;`, `&&`,
`||`, `&`, new lines); each must pass, and the most restrictive level wins. What cannot
be checked this way (subshells, `$(...)`, backticks, redirection into a file) and
arguments that make a listed command run or write something (find -exec, sort -o) get
the level of `*`, never a more specific pattern's."""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from agent_tui.bash_semantics import shell_tokens
from agent_tui.config.settings import PermissionLevel

SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;"})
SUBSHELL_MARKS = ("$(", "`", "<(", ">(")
HARMLESS_TARGETS = frozenset({"/dev/null", "&1", "&2"})
WRITING_ARGUMENTS = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls"),
    "fd": ("-x", "--exec", "-X", "--exec-batch"),
    "rg": ("--pre",),
    "sort": ("-o", "--output"),
    "git": ("--output", "-o"),
    "tree": ("-o",),
    "date": ("-s", "--set"),
}
"""Arguments (or their prefixes) that make an otherwise read-only command run another
program or write a file."""
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


def split_commands(command: str) -> tuple[list[str], str | None]:
    """(the simple commands, as normalised text; why the line cannot be checked, if so)."""
    if any(mark in command for mark in SUBSHELL_MARKS):
        return [], "it runs a subshell or command substitution"
    try:
        tokens = shell_tokens(command)
    except ValueError:
        return [], "its quoting is unbalanced"
    commands: list[list[str]] = [[]]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in SEPARATORS:
            commands.append([])
        elif token in ("(", ")"):
            return [], "it runs a subshell"
        elif set(token) <= set("<>&|") and ">" in token:
            target = tokens[index + 1] if index + 1 < len(tokens) else ""
            if token.endswith("&"):
                target = "&" + target
            if target not in HARMLESS_TARGETS:
                return [], f"it redirects output into a file ({token} {target})"
            if commands[-1] and commands[-1][-1].isdigit():
                commands[-1].pop()  # the `2` of `2>/dev/null`
            index += 1
        elif set(token) <= set("<>&|"):  # `<` reads a file: harmless
            if token.startswith("<"):
                index += 1
        else:
            commands[-1].append(token)
        index += 1
    return [" ".join(words) for words in commands if words], None


def _writes(words: list[str]) -> str | None:
    flags = WRITING_ARGUMENTS.get(words[0], ())
    for word in words[1:]:
        for flag in flags:
            if word == flag or (flag.startswith("--") and word.startswith(flag + "=")):
                return word
    return None


def rule_level(rules: dict[str, PermissionLevel], command: str) -> PermissionLevel | None:
    """The level of the longest pattern that matches the simple command."""
    matching = [pattern for pattern in rules if fnmatchcase(command, pattern)]
    return rules[max(matching, key=len)] if matching else None


def command_level(
    rules: dict[str, PermissionLevel],
    command: str,
    default: PermissionLevel,
    match: Callable[[dict[str, PermissionLevel], str], PermissionLevel | None] = rule_level,
) -> tuple[PermissionLevel, str]:
    """(level, the reason when it is not `allow`) of a whole command line; `match` picks
    a simple command's level among the patterns (an agent's: the longest)."""
    fallback = rules.get("*", default)
    commands, problem = split_commands(command)
    if problem is not None:
        return fallback, f"`{command}` cannot be checked: {problem}"
    worst: tuple[PermissionLevel, str] = ("allow", "")
    for simple in commands or [""]:
        words = simple.split()
        writing = _writes(words) if words else None
        if writing is not None:
            level, reason = fallback, f"`{simple}` uses {writing}, which runs or writes"
        else:
            level = match(rules, simple) or default
            reason = f"`{simple}` is not on the allowed list"
        if STRICTNESS[level] > STRICTNESS[worst[0]]:
            worst = (level, reason)
    return worst
