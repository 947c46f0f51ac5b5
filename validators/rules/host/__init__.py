"""The host around a launch: its facts (plain data) and the pure checks over them."""

from sglaunch.validators.rules.host.checks import host_checks, local_ranks, ports_to_bind
from sglaunch.validators.rules.host.facts import HostFacts

__all__ = ["HostFacts", "host_checks", "local_ranks", "ports_to_bind"]
