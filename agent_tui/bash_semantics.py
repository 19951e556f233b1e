"""What Claude Code reads from a bash command line for its Bash `tool_response`: whether
the command is one that prints nothing when it works (`noOutputExpected`), and what a
non-zero exit means for the few commands whose exit 1 is an answer, not a failure
(`returnCodeInterpretation`: grep's 1 is "No matches found"). Such an exit is a result
(PostToolUse), not a PostToolUseFailure. Claude Code judges both by each simple
command's first word, as here. Light (the shell's tokenizer only): every view reads
`exit_meaning` to mark a call failed, `run --attach` too."""

from __future__ import annotations

import shlex


def shell_tokens(command: str) -> list[str]:
    """A command line's words and operators, as the shell splits them (new lines are
    `;`, `#` is a word). ValueError for unbalanced quotes."""
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


SILENT_COMMANDS = frozenset(
    {"mv", "cp", "rm", "mkdir", "rmdir", "chmod", "chown", "chgrp", "touch", "ln", "cd"}
    | {"export", "unset", "wait"}
)
"""Commands that print nothing when they work (Claude Code's list)."""
NEUTRAL_COMMANDS = frozenset({"echo", "printf", "true", "false", ":"})
"""Commands that only report: after `||` they are a fallback, not the command's work."""
SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&"})
EXIT_ONE_MEANS = {
    "grep": "No matches found",
    "rg": "No matches found",
    "find": "Some directories were inaccessible",
    "diff": "Files differ",
    "test": "Condition is false",
    "[": "Condition is false",
}
"""Commands whose exit status 1 is an answer (2 and more are failures)."""


def _commands(line: str) -> list[tuple[str, str | None]]:
    """(first word, the operator before it) of each simple command of `line`; a
    redirection's target is no command. Empty when the line cannot be split."""
    try:
        tokens = shell_tokens(line)
    except ValueError:  # unbalanced quotes
        return []
    found: list[tuple[str, str | None]] = []
    operator: str | None = None
    starting, skip = True, False
    for token in tokens:
        if skip:
            skip = False
        elif token in SEPARATORS:
            operator, starting = token, True
        elif set(token) <= set("<>&|"):
            skip = True  # `> file`, `2>&1`'s `1`
        elif starting:
            found.append((token, operator))
            starting = False
    return found


def no_output_expected(line: str) -> bool:
    """Every command of the line is one that prints nothing when it works (`mkdir -p a
    && touch a/b`; an `|| echo failed` fallback does not count)."""
    words = [w for w, before in _commands(line) if not (before == "||" and w in NEUTRAL_COMMANDS)]
    return bool(words) and all(word in SILENT_COMMANDS for word in words)


def exit_meaning(line: str, code: int) -> tuple[bool, str | None]:
    """(whether exit status `code` of `line` is a failure, what it means when it is an
    answer); the line's last command decides, as its status is the line's."""
    commands = _commands(line)
    last = commands[-1][0] if commands else ""
    if last in EXIT_ONE_MEANS:
        return code >= 2, EXIT_ONE_MEANS[last] if code == 1 else None
    return code != 0, None
