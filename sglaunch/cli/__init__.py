"""The headless command line."""

from sglaunch.cli import dataclass_cache

# first, before the commands' modules create their dataclasses (~35 ms of a `check`)
dataclass_cache.install()
