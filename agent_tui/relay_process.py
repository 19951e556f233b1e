"""The relay's process: `python -m agent_tui.relay_process --serve PATH --idle S`
(started by provider/relay.py). It is the provider process's serving mode
(provider/worker.py) with the saver of a summary whose command left
(context/prepared_left.py) wired into the transport of detached requests
(provider/detached.py): provider/ never imports context/, so the wiring is here, above
both."""

from __future__ import annotations

from agent_tui.provider import detached, worker


def _saver() -> detached.Saver:
    """Imported at the first summary to save: the relay listens before importing it."""
    from agent_tui.context import prepared_left

    return prepared_left


def main() -> None:
    detached.find_saver = _saver
    worker.main()


if __name__ == "__main__":
    main()
