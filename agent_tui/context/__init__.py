"""Context management: what the model sees of a long session.

Token counting, overflow and budgets, prune, compaction (planning, the summariser call,
the kept tail, restating), uncompact, the breakdown and the sidebar's figures. `session/`
calls into this package; nothing here imports `session/`. The request and the streamed
step that compaction shares with the loop live below both, in `step/`.
"""
