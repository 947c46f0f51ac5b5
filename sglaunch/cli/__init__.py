"""The headless command line."""
