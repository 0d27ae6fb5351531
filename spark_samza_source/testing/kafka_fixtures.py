"""pytest fixtures (filled in by their owner)."""
