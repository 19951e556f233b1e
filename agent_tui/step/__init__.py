"""One model step, shared by the loop and by compaction: the history as model messages,
the request (system prompt, cache breakpoints, media), and the processor that streams
the answer into stored parts and runs its tool calls."""
