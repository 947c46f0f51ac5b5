"""The stand-in sglang server, split by concern; `tests/fake_sglang_server.py` runs it."""
