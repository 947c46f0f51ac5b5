"""The sglang oracle: sglang's own argument resolution, run warm and GPU-free.

The client (`Oracle`) runs in sglaunch; the worker (`in_sglang/oracle_worker.py`) runs by path
under the interpreter that has sglang, with the GPU emulated from the facts.
`connect(python)` gives the user's shared, warm service instead (`ServiceOracle`,
the same interface), or with `use_service=False` an `Oracle` of this process.
"""

from sglaunch.oracle.answer import OracleAnswer, OracleError, OracleStatus
from sglaunch.oracle.answer_findings import oracle_findings
from sglaunch.oracle.client import Oracle, OracleQuery
from sglaunch.oracle.interpreter import SglangPython, find_sglang_python
from sglaunch.oracle.service_client import ServiceOracle, connect

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
