"""Diagnostics after edits from language servers over stdio (never downloaded: those on
PATH or configured). `settings.py` the `lsp` config key, `client.py` one server,
`servers.py` the servers of an engine and what an edit introduced."""
