"""The driver of the app's first frames (instant_frame.py): Textual's own on POSIX, taking
over from a recorded frame and recording the first frame it draws. Imported with Textual,
when the app starts."""

from __future__ import annotations

from textual.drivers.linux_driver import LinuxDriver

from agent_tui.tui import instant_frame as frames


class RecordingDriver(LinuxDriver):
    _recording: list[str] | None = None
    _started = False
    _skip_enter = False
    kind = frames.PLAIN
    """What it records (instant_frame.driver_class makes one for each kind)."""

    def start_application_mode(self) -> None:
        # Already on the alternate screen: entering it again would clear what the
        # recorded frame drew (some terminals do) until the app's own frame.
        self._skip_enter = frames.hand_over()
        super().start_application_mode()
        if not self._started:  # the launch, not a resume after Ctrl+Z
            self._started = True
            if frames.enabled():
                self._recording = []

    def write(self, data: str) -> None:
        if self._skip_enter and data == "\x1b[?1049h":
            self._skip_enter = False
            return
        if self._recording is not None:
            self._recording.append(data)
        super().write(data)

    def first_frame_drawn(self, keep: bool = True) -> None:
        """The recording ends: kept for the next launch here unless `keep` is False
        (something typed is in it); a --continue launch's only if the database is as it
        was at launch when the app ends (`instant_frame.save_session_frame`)."""
        frame, self._recording = self._recording, None
        if not frame or not keep:
            return
        if self.kind == frames.PLAIN:
            frames._save("".join(frame), frames._key_now(frames.PLAIN))
        else:
            frames._session_frame = "".join(frame)
