"""The explicit list of rule and card modules. A module not listed here does not run.

Like ruff's and pylint's registries: importing a module registers its rules
(`@rule`) and cards (`card(...)`); order here is the order rules run in.
"""

from sglaunch.validators.rules.general import flags
from sglaunch.validators.rules.models import minicpm, minicpmv

MODULES = (flags, minicpm, minicpmv)
