"""What a project brings of its own: agents, skills and custom commands, and the front
matter of their Markdown files."""
