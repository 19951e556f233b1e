"""Coding tools the model can call: read, write, edit, bash, grep, glob, list."""
