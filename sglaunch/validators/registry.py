"""The explicit list of rule and card modules. A module not listed here does not run.

Like ruff's and pylint's registries: importing a module registers its rules
(`@rule`) and cards (`card(...)`); order here is the order rules run in.
"""

from sglaunch.validators.cards import oracle as oracle_cards
from sglaunch.validators.cards import runtime as runtime_cards
from sglaunch.validators.rules.general import (
    backends,
    flags,
    json_flags,
    memory,
    memory_plan,
    model_config,
    multinode,
    parallel,
    serving,
)
from sglaunch.validators.rules.host import cards as host_cards
from sglaunch.validators.rules.models import minicpm, minicpmv

MODULES = (
    flags,
    json_flags,
    model_config,
    parallel,
    multinode,
    memory,
    memory_plan,
    backends,
    serving,
    minicpm,
    minicpmv,
    runtime_cards,
    oracle_cards,
    host_cards,
)
