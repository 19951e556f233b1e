"""Storage: the only place that writes SQL. Everything else speaks in models."""
