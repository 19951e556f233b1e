"""Front matter: the YAML mapping between `---` lines at the top of a Markdown file (an
agent's, a command's, a skill's, a rules file's), read by PyYAML's safe loader, as
Claude Code and OpenCode read theirs: folded (`>`) and literal (`|`) descriptions, plain
values continued on an indented line, lists, booleans and numbers all work.

Like Claude Code (its `parseFrontmatter`), a header that is not valid YAML is read a
second time with each unindented `key: value` line whose value holds a YAML indicator
quoted, so what Claude Code reads is read here too: `argument-hint: [file] [focus]`,
`paths: **/*.ts`, `description: Use it when: ...`. A header still not valid is a
`FrontMatterError` of one line naming the line of the file, and the file is skipped.
Aliases (`*name`) are refused: a few lines of them expand to billions of values."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

INDICATOR = re.compile(r"[{}[\]*&#!|>%@`]|: ")
"""What makes a plain value invalid YAML (Claude Code's YAML_SPECIAL_CHARS)."""
SIMPLE_LINE = re.compile(r"^([A-Za-z_-]+):\s+(.+)$")
"""An unindented `key: value` line: the only kind the second reading quotes."""
FIRST_LINE = 2
"""The header's first line in the file: line 1 is the opening `---`."""
BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
"""How deep each bracket takes a list's text (a comma inside one does not split it)."""


class FrontMatterError(ValueError):
    """Why a file's front matter cannot be read: one line naming the line of the file."""


@cache
def _yaml() -> Any:
    """PyYAML, on first use (a project with no front matter files never imports it)."""
    import yaml

    return yaml


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the header's text, the body) of a `---\\n...\\n---\\nbody` file; (None, text)
    without a header, or when the opening `---` is never closed."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return "\n".join(lines[1:end]), "\n".join(lines[end + 1 :])
    return None, text


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """({key: value} as YAML gives them, the body); ({}, text) without a header, {} for an
    empty one. FrontMatterError for a header that is not valid YAML or not a mapping."""
    header, body = split_front_matter(text)
    if header is None:
        return {}, text
    try:
        data = _load(header)
    except FrontMatterError as first:
        quoted = _quote_values(header)
        if quoted == header:
            raise
        try:
            data = _load(quoted)
        except FrontMatterError:
            raise first from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        raise FrontMatterError(
            f"line {FIRST_LINE}: the front matter is {kind}, not `key: value` lines"
        )
    return {str(key): value for key, value in data.items()}, body


def _load(header: str) -> Any:
    yaml = _yaml()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for event in yaml.parse(header, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                raise FrontMatterError(
                    f"line {event.start_mark.line + FIRST_LINE}: aliases (*name) are not read"
                )
        return yaml.load(header, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + FIRST_LINE}: " if mark is not None else ""
        raise FrontMatterError(where + _one_line(exc.problem or exc.context or str(exc))) from exc
    except yaml.reader.ReaderError as exc:  # a control character: no mark, a position
        line = header[: exc.position].count("\n") + FIRST_LINE
        raise FrontMatterError(f"line {line}: {exc.reason} (#x{exc.character:04x})") from exc
    except (yaml.YAMLError, RecursionError) as exc:
        problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise FrontMatterError(_one_line(problem)) from exc


def _quote_values(header: str) -> str:
    """The header with each unindented `key: value` line's value double-quoted when it
    holds a YAML indicator and is not quoted already (Claude Code's second reading)."""
    lines = []
    for line in header.split("\n"):
        match = SIMPLE_LINE.match(line)
        value = match.group(2) if match else ""
        quoted = value[:1] in "\"'" and value[-1:] == value[:1]
        if match and not quoted and INDICATOR.search(value):
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            line = f'{match.group(1)}: "{escaped}"'
        lines.append(line)
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def text_value(value: Any) -> str:
    """A value written as text (`description`, `model`, `argument-hint`), stripped: a
    YAML list as it was written (`argument-hint: [focus]` is `[focus]`), true/false as
    written; "" for none."""
    if isinstance(value, list):
        return "[" + ", ".join(_scalar_text(item) for item in value) + "]"
    return _scalar_text(value)


def _scalar_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def words(value: Any) -> tuple[str, ...]:
    """A list written either way Claude Code accepts (`tools`, `allowed-tools`, `paths`):
    a YAML list, or one string split at commas outside brackets (`Bash(git add:*), Read`
    and `src/*.{ts,tsx}, lib/**` are two each); none for None."""
    if isinstance(value, list):
        items = [_scalar_text(item) for item in value]
    else:
        items = split_commas(text_value(value))
    return tuple(item for item in items if item)


def split_commas(text: str, nesting: dict[str, int] = BRACKETS) -> list[str]:
    """`text` split at the commas outside the brackets of `nesting`, each item stripped."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += nesting.get(char, 0)
        if char == "," and depth <= 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return items
