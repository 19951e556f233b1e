"""The Textual app. Imported before Textual itself (every module here imports Textual).

Textual draws a changed screen on its next update tick, `1 / TEXTUAL_FPS` seconds apart
(60 by default): a typed key waited up to 17 ms for its frame, more than a frame's own
cost. At 240 the tick comes within ~4 ms; frames are still drawn only when something
changed, and a streamed reply's batches keep their own pace (`event_pump.py`). A value
the person set in the environment wins."""

import os

os.environ.setdefault("TEXTUAL_FPS", "240")
