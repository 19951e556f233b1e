"""The app's first frame on screen in tens of milliseconds, before Textual is imported.

Textual's import and its first layout take a noticeable while, whatever the app does
(docs/performance.md). So each
plain `agent-tui` launch records the bytes of the first frame the app drew (its driver,
`driver_class`), and the next launch in the same place writes those bytes to the
terminal at once (`show`, called first thing by `__main__`), then starts as before. The
app's own first frame, once Textual is up, draws the same picture over it.

The recording is keyed by everything that frame is drawn from: the directory, the
terminal's size and kind, the config files (path, size, mtime), the app's own code and
Textual's version (`_key`). Anything else (another size, an edited config) finds no
recording: the launch draws as it always did, and records the new frame.

Keys typed while the recorded frame is up are kept: the terminal holds them (its echo
is off from launch, frame or not, so they do not scribble over the frame, nor stay on the
person's screen after the app) and the app reads them once it is up. The terminal is
the person's again however the launch ends: the driver gives it back to Textual before
Textual saves its settings (`hand_over`), and if the app never got that far, `abandon`
restores the settings (and leaves the frame's alternate screen).

`agent-tui --continue` (`-c`) gets the same for the session it opens (the app's first
frame draws its newest page), saved when the app ends only if the database is then exactly
as it was at launch (`save_session_frame`: the app wrote nothing, so the next launch would
draw the same session); its key adds the database files' sizes and mtimes, so any write
since (a reply, another session, anywhere) finds no recording.

`AGENT_TUI_INSTANT_FRAME=0` switches it off (nothing shown, nothing recorded).

Imported by `__main__` before anything else: os, sys and zlib only at the top.
"""

from __future__ import annotations

import os
import sys
import zlib

DISABLE_ENV = "AGENT_TUI_INSTANT_FRAME"
KEPT = 8
"""Recordings kept (the newest): one per directory and terminal size in use."""
ENTER = "\x1b[?1049h\x1b[?25l\x1b[?7l"
"""The alternate screen, no cursor, no line wrap (a frame's last cell must not scroll)."""
LEAVE = "\x1b[?7h\x1b[?25h\x1b[?1049l"
ENV_KEYS = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "LANG", "LC_ALL", "HOME")
"""What Textual's colours and widths, and the welcome's `~` label, are drawn from."""
PLAIN, CONTINUE = "plain", "continue"
"""The launches that have a recorded frame: `agent-tui`, `agent-tui --continue`."""

_shown: dict[str, object] | None = None
"""From `show` until `hand_over`: {"attrs": the terminal's settings before `show`,
"frame": whether a recorded frame was written}."""
_launch_key: str | None = None
"""The key `show` looked for: a session frame is saved under it, and only under it."""
_session_frame: str | None = None
"""The first frame of a --continue launch, until `save_session_frame`."""


def enabled() -> bool:
    return os.environ.get(DISABLE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _frames_dir() -> str:
    from agent_tui import paths

    return os.path.join(paths.data_dir(), "frames")


def _stamp(directory: str, suffixes: tuple[str, ...]) -> str:
    """The newest mtime of the files in `directory` ending with `suffixes`."""
    try:
        return str(
            max(
                (e.stat().st_mtime_ns for e in os.scandir(directory) if e.name.endswith(suffixes)),
                default=0,
            )
        )
    except OSError:
        return "?"


def _database_stamp() -> str:
    """The database files' sizes and mtimes: any write changes them. An empty write-ahead
    log holds nothing (one is left while another process has the database open, or by
    one that was killed): the same as none."""
    from agent_tui import paths

    database = str(paths.database_path())
    stamps = []
    for path in (database, f"{database}-wal"):
        try:
            stat = os.stat(path)
        except OSError:
            stamps.append("-")
            continue
        stamps.append(f"{stat.st_size}:{stat.st_mtime_ns}" if stat.st_size else "-")
    return " ".join(stamps)


def _key(size: os.terminal_size, kind: str = PLAIN) -> str:
    """Names the recording of the frame this launch would draw (see the module doc)."""
    from agent_tui.config.layers import config_files

    here = os.path.dirname(os.path.abspath(__file__))
    parts = [os.getcwd(), f"{size.columns}x{size.lines}", sys.version]
    if kind != PLAIN:
        parts += [kind, _database_stamp()]
    parts += [f"{name}={os.environ.get(name, '')}" for name in ENV_KEYS]
    parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("TEXTUAL"))
    for path in config_files():
        try:
            stat = path.stat()
        except OSError:  # a link loop in its place: skipped, with a line, by the app
            continue
        parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    parts.append(_stamp(here, (".py", ".tcss")))
    parts.append(_stamp(os.path.dirname(here), (".py",)))  # keybinds, config_files, …
    import importlib.util

    spec = importlib.util.find_spec("textual")  # without importing it (`show`)
    textual_dir = os.path.dirname(spec.origin) if spec and spec.origin else ""
    parts.append(_stamp(textual_dir, ("__init__.py", "app.py")))
    text = "\n".join(parts).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


def _terminal_size() -> os.terminal_size | None:
    """The size of the terminal on stdin and stdout (fds 0 and 1); None when either is
    not a terminal, or not a POSIX one."""
    if os.name != "posix":
        return None
    try:
        if not (os.isatty(0) and os.isatty(1)):
            return None
        return os.get_terminal_size(1)
    except (OSError, ValueError):
        return None


def show(kind: str = PLAIN) -> bool:
    """For a plain `agent-tui` launch or `--continue` (`__main__`) in a terminal: the
    terminal's echo off (what is typed before the app reads it would be printed on the
    person's screen, and stay there after the app), and the recorded frame written, if
    there is one. True when a frame was written."""
    global _shown, _launch_key
    if _shown is not None or not enabled():
        return False
    size = _terminal_size()
    if size is None:
        return False
    import termios

    try:
        attrs = termios.tcgetattr(0)
        quiet = list(attrs)
        quiet[3] &= ~termios.ECHO  # typed keys wait in the terminal for the app, unseen
        termios.tcsetattr(0, termios.TCSANOW, quiet)
    except termios.error:
        return False
    _shown = {"attrs": attrs, "frame": False}
    try:
        _launch_key = _key(size, kind)
        with open(os.path.join(_frames_dir(), _launch_key), "rb") as file:
            frame = file.read()
    except Exception:  # no recording (or no data dir, a broken config): draw as always
        return False
    data = ENTER.encode() + frame
    try:
        while data:  # a terminal may take a large frame in parts
            data = data[os.write(1, data) :]
    except OSError:
        abandon()
        return False
    _shown["frame"] = True
    return True


def hand_over() -> bool:
    """The app's driver takes the terminal: its settings are the person's again (Textual
    saves them to restore at exit). True when a recorded frame is up."""
    global _shown
    if _shown is None:
        return False
    import termios

    try:  # noqa: SIM105 (contextlib's import would come before the frame)
        termios.tcsetattr(0, termios.TCSANOW, _shown["attrs"])  # type: ignore[arg-type]
    except termios.error:
        pass
    frame_up = bool(_shown["frame"])
    _shown = None
    return frame_up


def abandon() -> None:
    """The app never took the terminal (an error, Ctrl+C): give it back as it was."""
    if hand_over():  # settings restored; a frame was up: leave its screen
        try:  # noqa: SIM105
            os.write(1, LEAVE.encode())
        except OSError:
            pass


def driver_class(kind: str = PLAIN) -> type | None:
    """Textual's driver for this terminal, taking over from a recorded frame and
    recording the first frame it draws (`first_frame_drawn`: the app calls it after
    its first refresh, with keep=False when what was typed at launch is in it); None
    (Textual's own choice) off POSIX."""
    if os.name != "posix":
        return None
    from agent_tui.tui.recording_driver import RecordingDriver

    return type("RecordingDriver", (RecordingDriver,), {"kind": kind})


def save_session_frame() -> None:
    """After the app and its database are closed: keep the session's recording for the
    next --continue here, if the database is as it was at launch (nothing was written,
    so that launch will draw the same session)."""
    global _session_frame
    frame, _session_frame = _session_frame, None
    if frame is not None and _launch_key is not None and _key_now(CONTINUE) == _launch_key:
        _save(frame, _launch_key)


def _key_now(kind: str) -> str | None:
    size = _terminal_size()
    return None if size is None else _key(size, kind)


def _save(frame: str, key: str | None) -> None:
    """Keep `frame` under `key` (written whole, or not at all)."""
    if key is None:
        return
    try:
        folder = _frames_dir()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, key)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as file:
            file.write(frame.encode("utf-8", "surrogateescape"))
        os.replace(temporary, path)
        kept = sorted(
            (e for e in os.scandir(folder) if e.is_file()),
            key=lambda e: e.stat().st_mtime_ns,
            reverse=True,
        )
        for old in kept[KEPT:]:
            os.unlink(old.path)
    except Exception:  # a full disk, a read-only data dir: the next launch draws as always
        return
