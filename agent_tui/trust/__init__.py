"""Repository trust (a leaf below config/): `keys.py` which keys of a project's own
config apply before the person trusts it, `trusted_files.py` which files a trust covers,
`store.py` where trust is recorded and against what."""
