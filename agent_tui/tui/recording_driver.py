"""The driver of the app's first frames (instant_frame.py): Textual's own on POSIX, taking
over from a recorded frame and recording the first frame it draws. Imported with Textual,
when the app starts."""

from __future__ import annotations

import time

from textual import events
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from agent_tui.tui import instant_frame as frames


class RecordingDriver(LinuxDriver):
    _recording: list[str] | None = None
    _started = False
    _skip_enter = False
    _held: list[str] | None = None
    """The app's output while a recorded session frame stays up (`CONTINUE`)."""
    _hold_until = 0.0
    _typed = False
    kind = frames.PLAIN
    """What it records (instant_frame.driver_class makes one for each kind)."""

    def start_application_mode(self) -> None:
        # Already on the alternate screen: entering it again would clear what the
        # recorded frame drew (some terminals do) until the app's own frame.
        self._skip_enter = frames.hand_over()
        if self._skip_enter and self.kind == frames.CONTINUE and not self._started:
            self._held, self._hold_until = [], time.monotonic() + frames.HOLD_MAX
        super().start_application_mode()
        if not self._started:  # the launch, not a resume after Ctrl+Z
            self._started = True
            if frames.enabled():
                self._recording = []
                frames._driver = self

    def write(self, data: str) -> None:
        if self._skip_enter and data == "\x1b[?1049h":
            self._skip_enter = False
            return
        if self._recording is not None:
            self._recording.append(data)
        if self._held is not None:
            if not self._typed and time.monotonic() < self._hold_until:
                self._held.append(data)
                return
            self.release()
        super().write(data)

    def release(self) -> None:
        """What the app drew while the recorded frame was held up, written now."""
        held, self._held = self._held, None
        if held:
            super().write("".join(held))

    def process_message(self, message: Message) -> None:  # on the input thread
        if isinstance(message, events.Key):
            self._typed = True  # its echo is drawn, not held
        super().process_message(message)

    def stop_application_mode(self) -> None:
        self.release()
        super().stop_application_mode()

    def first_frame_drawn(self, keep: bool = True) -> None:
        if self.kind != frames.PLAIN:
            return  # `session_drawn` ends this recording
        frame, self._recording = self._recording, None
        if frame and keep:
            frames._save("".join(frame), frames._key_now(frames.PLAIN))  # the next launch here

    def session_drawn(self, keep: bool = True) -> None:
        frame, self._recording = self._recording, None
        self.release()
        if frame and keep and not self._typed:
            frames._session_frame = "".join(frame)
