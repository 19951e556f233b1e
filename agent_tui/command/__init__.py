"""What a person can ask outside a prompt, written once (between the views and the
engine): each module here defines its commands (`core.Command`: arguments, help, the
views that offer it, and a `run` against the engine whose result's `message()` every
view shows); `catalog` finds them."""
