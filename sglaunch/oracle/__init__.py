"""The sglang oracle: sglang's own argument resolution, run warm and GPU-free.

The client (`Oracle`) runs in sglaunch; the worker (`in_sglang/oracle_worker.py`) runs by path
under the interpreter that has sglang, with the GPU emulated from the facts.
`connect(python)` gives the user's shared, warm service instead (`ServiceOracle`,
the same interface), or with `use_service=False` an `Oracle` of this process.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sglaunch.oracle.answer import OracleAnswer, OracleError, OracleStatus
    from sglaunch.oracle.answer_findings import oracle_findings
    from sglaunch.oracle.client import Oracle, OracleQuery
    from sglaunch.oracle.interpreter import SglangPython, find_sglang_python
    from sglaunch.oracle.service_client import ServiceOracle, connect

# name -> the module that defines it, imported on first use (PEP 562): the service client
# alone must not load the error catalogue and every rule module behind `oracle_findings`,
# which `sglaunch check` would pay before it can send sglang's question
_HOMES = {
    **dict.fromkeys(("OracleAnswer", "OracleError", "OracleStatus"), "answer"),
    "oracle_findings": "answer_findings",
    **dict.fromkeys(("Oracle", "OracleQuery"), "client"),
    **dict.fromkeys(("SglangPython", "find_sglang_python"), "interpreter"),
    **dict.fromkeys(("ServiceOracle", "connect"), "service_client"),
}

__all__ = [
    "Oracle",
    "OracleAnswer",
    "OracleError",
    "OracleQuery",
    "OracleStatus",
    "ServiceOracle",
    "SglangPython",
    "connect",
    "find_sglang_python",
    "oracle_findings",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
