"""`!command`: what the model reads of a shell command the person ran themselves."""

from __future__ import annotations


def shell_text(command: str, output: str) -> str:
    """The synthetic user text saved with a `!command` (the model reads it with the next
    message; the view shows the tool line instead)."""
    return (
        f"The person ran this command in the shell themselves:\n<command>\n{command}\n"
        f"</command>\n<output>\n{output}\n</output>"
    )
