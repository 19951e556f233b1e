"""Code highlighting that never holds up a frame.

pygments compiles a lexer's rules the first time the lexer is used: tens of milliseconds
for Python (docs/performance.md), a stall of whatever frame first draws a code block in
that language — a reopened session's first frame, a key's echo while a reply streams.
Until its lexer is built on a thread, a language's code is drawn plain (the same lines
and block colours, no token colours), and the app draws it again once the lexer is built.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from pygments.lexer import RegexLexer
from pygments.lexers import find_lexer_class_by_name, get_lexer_by_name
from pygments.util import ClassNotFound

COMMON = ("python", "bash", "javascript", "typescript", "json", "diff", "rust", "go")
"""Languages whose lexers are built once the app has started, before any is drawn."""


_READY: dict[str, str] = {}
"""Languages found ready, with the lexer to highlight them by: a built lexer stays built,
and a name pygments does not know stays unknown (looking it up scans every installed
package's entry points, at every render)."""


def ready(language: str) -> str | None:
    """The lexer to highlight `language`'s code by now — "text", rich's own fallback, for a
    name pygments does not know — or None while its lexer is not built."""
    if (known := _READY.get(language)) is not None:
        return known
    try:
        lexer = find_lexer_class_by_name(language)
    except ClassNotFound:
        _READY[language] = "text"
        return "text"
    # pygments' RegexLexerMeta compiles the rules into the class's `_tokens` at its first
    # instance.
    if not issubclass(lexer, RegexLexer) or "_tokens" in vars(lexer):
        _READY[language] = language
        return language
    return None


class Highlighting:
    """The lexers waiting to be built, and the thread that builds them once started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[str] = []
        self._drawn_plain: set[str] = set()
        self._redraw: Callable[[], object] | None = None
        self._thread: threading.Thread | None = None
        self.plain_draws = 0
        """Code blocks drawn plain so far: a renderer compares it before and after."""

    @property
    def idle(self) -> bool:
        """No lexer is being built and no code waits to be drawn again."""
        with self._lock:
            return self._thread is None and not self._drawn_plain

    def drawn_plain(self, language: str) -> None:
        """Code in `language` was drawn plain: its lexer is built next."""
        self.plain_draws += 1
        with self._lock:
            self._drawn_plain.add(language)
        self._want([language], first=True)

    def start(self, redraw: Callable[[], object]) -> None:
        """Build the lexers of the code drawn plain so far, then COMMON's, on a thread
        (nothing is built before: the first frame has the process to itself); `redraw`
        is called on that thread after each lexer some code was drawn plain for."""
        self._redraw = redraw
        self._want(list(COMMON))

    def stop(self) -> None:
        """No more redraws, and no thread started (the app is leaving)."""
        self._redraw = None

    def _want(self, languages: list[str], *, first: bool = False) -> None:
        with self._lock:
            new = [name for name in languages if name not in self._waiting]
            self._waiting = new + self._waiting if first else self._waiting + new
            if self._redraw is None or self._thread is not None:
                return
            thread = self._thread = threading.Thread(
                target=self._build, name="highlighting", daemon=True
            )
        thread.start()

    def _build(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return
                language = self._waiting.pop(0)
            with contextlib.suppress(ClassNotFound):
                get_lexer_by_name(language)
            with self._lock:
                drawn = language in self._drawn_plain
                self._drawn_plain.discard(language)
            redraw = self._redraw
            if drawn and redraw is not None:
                with contextlib.suppress(RuntimeError):  # the app has left
                    redraw()


HIGHLIGHTING = Highlighting()
