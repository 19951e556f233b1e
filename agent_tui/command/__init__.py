"""What a person can ask outside a prompt, written once (between the views and the
engine): `table` names every command (its arguments, help and the views that offer it:
the app's slash commands and palette, the CLI's subcommands, ACP's advertised commands),
`run` runs one against the engine and returns a result whose `message()` is the
sentence every view shows."""
