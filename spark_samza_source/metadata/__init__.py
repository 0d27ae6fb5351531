"""metadata package."""
