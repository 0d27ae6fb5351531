"""kafka package."""
