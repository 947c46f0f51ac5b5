"""sglaunch: a terminal launch assistant for the SGLang serving runtime."""

__version__ = "0.1.0"

# The sglang release whose rules, flags and runtime this version mirrors.
SGLANG_VERSION = "0.5.23"
