"""The sglang oracle: sglang's own argument resolution, run warm and GPU-free.

The client (`Oracle`) runs in sglaunch; the worker (`worker.py`) runs by path
under the interpreter that has sglang, with the GPU emulated from the facts.
"""

from sglaunch.oracle.answer import OracleAnswer, OracleError, OracleStatus
from sglaunch.oracle.client import Oracle
from sglaunch.oracle.findings import oracle_findings
from sglaunch.oracle.interpreter import SglangPython, find_sglang_python

__all__ = [
    "Oracle",
    "OracleAnswer",
    "OracleError",
    "OracleStatus",
    "SglangPython",
    "find_sglang_python",
    "oracle_findings",
]
