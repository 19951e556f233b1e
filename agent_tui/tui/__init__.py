"""The Textual app. Imported before Textual itself (every module here imports Textual).

Textual draws a changed screen on its next update tick, `1 / TEXTUAL_FPS` seconds apart
(60 by default): a typed key waited up to 17 ms for its frame, more than a frame's own
cost. At 1000 a frame is drawn as soon as the app is idle after a change (Textual waits
for its message queue to empty first, so what one batch of messages changes is still
drawn once); nothing is drawn while nothing changes, and a streamed reply's batches keep
their own pace (`event_pump.py`). A value the person set in the environment wins."""

import os

os.environ.setdefault("TEXTUAL_FPS", "1000")
