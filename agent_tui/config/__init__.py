"""The configuration: the person's files and the project's, validated (settings.py), the
raw values read before that (layers.py) and the keys of the app (keybinds.py). The
package imports nothing itself: the app's first frame reads keybinds and raw values
without pydantic."""
