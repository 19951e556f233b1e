"""The suite. Imported before conftest.py and every test module."""

import os
import sys

# Shells here set PYTHONDONTWRITEBYTECODE: each worker would rewrite every test module's
# asserts (~10 s of collection per worker) and each of the ~140 agent-tui processes the
# suite starts would compile agent_tui again (~0.2 s each). The suite keeps bytecode as a
# plain Python run does (__pycache__ is ignored by git).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
