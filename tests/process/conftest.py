"""The process tier: tests that start servers, services and process trees.

They run on their own (`make test` runs them after the parallel tiers, one at a time), since
ports, process trees and timing-sensitive monitors do not share the machine well. Some start
the CPU sglang environment; unset, the environments `make test` builds are used.
"""

from __future__ import annotations

from tests.releases import use_the_built_environments

use_the_built_environments()
