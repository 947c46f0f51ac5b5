"""Cards for the findings that come from sglang's own resolution (the oracle), not a rule.

The codes are the oracle's (`sglaunch.oracle.answer_findings`); they are spelled out here so the
rule engine never imports the oracle. A test holds the two lists together.
"""

from __future__ import annotations

from sglaunch.validators.cards import card

SGLANG_ERROR = "sglang-error"
SGLANG_OVERRIDE = "sglang-override"
ORACLE_FAULT = "oracle-fault"

card(
    SGLANG_ERROR,
    "sglang rejected this configuration",
    what=(
        "sglang's own argument resolution raised an error for these flags, this GPU and this "
        "model config, and sglaunch has no card of its own for the message. The finding "
        "carries sglang's words and the file and line that raised them."
    ),
    when=(
        "While sglang resolves its arguments (ServerArgs and its post-init checks), before any "
        "weights load: a real launch with this line would stop with the same error."
    ),
    solutions=(
        "Read sglang's message: it usually names the flag and the value it expects.",
        "Undo the most recent flag change and check again.",
        "Search sglang's issues for the exact message.",
    ),
    stage="resolution",
)

card(
    SGLANG_OVERRIDE,
    "sglang will change a value",
    what=(
        "While resolving arguments sglang rewrites some fields: it picks backends for the GPU "
        "and the model, turns off features the model cannot use, and fills in values derived "
        "from the hardware. The launch still works; the server runs with sglang's value, not "
        "the one on your command line."
    ),
    when=(
        "On every launch. sglaunch runs sglang's own resolution with your flags, GPU and model "
        "config and compares each field with what you asked (the resolved view, `r`, shows "
        "them all)."
    ),
    solutions=(
        "Nothing to do when sglang's value is what you want.",
        "Set the flag to sglang's value so the launch line says what will run.",
        "When you need your own value, look for the rule that forces it (the model's family "
        "card): some are forced with no way around, like MiniCPM's sparse-attention backend.",
    ),
    stage="resolution",
)

card(
    ORACLE_FAULT,
    "sglang's own check gave no verdict",
    what=(
        "sglaunch runs sglang's argument resolution in a worker process that imports sglang. "
        "The worker could not start, crashed or took too long, so only the built-in rules ran: "
        "exact for the MiniCPM family, general checks for the rest."
    ),
    when=(
        "sglang is not installed in the interpreter sglaunch found; the import is slower than "
        "the timeout on this machine; or the worker died (a broken install, out of memory)."
    ),
    solutions=(
        "`sglaunch oracle status` says which interpreter was used and why it failed.",
        "Point at the Python that has sglang: --sglang-python PATH or SGLAUNCH_SGLANG_PYTHON.",
        "`sglaunch oracle setup` builds a CPU-only sglang environment for checking.",
        "On a slow machine raise the limit: `sglaunch check --oracle-timeout 120`.",
        "`--no-oracle` checks with the built-in rules alone and says so.",
    ),
    stage="resolution",
)
