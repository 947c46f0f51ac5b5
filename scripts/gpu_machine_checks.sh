#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU and driver, in one go, for a GPU machine where
# sglaunch is not installed (nothing is fetched: what the interpreter lacks comes as wheels).
#
#   bash scripts/gpu_machine_checks.sh WHEELS_DIR OUT_DIR
#
# WHEELS_DIR  cp312 wheels of what the interpreter lacks: sglang, the packages sglang's
#             argument resolution imports, sglaunch's own dependencies. They are installed
#             with --no-deps into a temporary folder put on PYTHONPATH, never into the
#             interpreter (its own CUDA torch is the one used). "-" installs nothing.
# OUT_DIR     one log per step and summary.txt (created if missing).
#
# Environment:
#   PY         sglaunch's interpreter (default /opt/torch/.venv/bin/python3, else python3)
#   BUDGET     seconds for the whole run (default 560)
#   SGLANG_PY  the interpreter with sglang (default PY); with wheels it runs on the wheels'
#              folder alone (a wrapper script), as a separate sglang environment would
#   HIDE       packages the sglang interpreter must not see, e.g. "triton": sglang's own
#              mocks stand in, as on a CPU-only machine (a fallback if the real one breaks
#              sglang's imports)
#
# Steps, each bounded by `timeout`; a step that fails never stops the ones after it:
#   setup  install the wheels, lay the source out (scripts/source_tree.py), show versions,
#          import sglang as the oracle worker does (the full traceback if that fails)
#   a      scripts/gpu_facts_check.py      sglaunch's NVML facts against the real driver
#   b      scripts/oracle_gpu_check.py     the oracle worker never creates a CUDA context
#   d      scripts/cuda_startup_check.py   CUDA/NCCL start-up cost against the plan's estimate
#   c      pytest -m gpu tests/sglang      the gpu-marked tests (last: it repeats b in pytest)
# All of it within BUDGET seconds (default 560); a step's limit shrinks to what is left.
# Prints a one-line summary per step (also OUT_DIR/summary.txt). Exit 0 when every step
# passed, 1 otherwise, 2 on bad arguments. Without a GPU, a, b and d fail with their
# "no GPU" exit codes (1, 2, 2) and c fails on its first assertion.

set -u

if [ $# -ne 2 ]; then
    echo "usage: bash scripts/gpu_machine_checks.sh WHEELS_DIR|- OUT_DIR" >&2
    exit 2
fi
WHEELS=$1
OUT=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
if [ "$WHEELS" != "-" ] && ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    echo "no wheels in $WHEELS; pass - to install nothing" >&2
    exit 2
fi
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)

if [ -z "${PY:-}" ]; then
    if [ -x /opt/torch/.venv/bin/python3 ]; then PY=/opt/torch/.venv/bin/python3; else PY=$(command -v python3); fi
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sglaunch-gpu.XXXXXX")
SITE=$WORK/site
SRC=$WORK/src
export PYTHONUNBUFFERED=1
# no user directory, cache or hub access leaks in; nothing here may reach a network
export SGLAUNCH_HOME=$WORK/home HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
SUMMARY=()
FAILED=0

# the whole run ends by then (BUDGET seconds, default 560: the device tool's limit is 600)
DEADLINE=$(($(date +%s) + ${BUDGET:-560}))

# run NAME SECONDS CMD...: CMD's output into OUT/NAME.log, its status and time into the
# summary; the limit shrinks to what is left of the budget, and a step with no time is skipped
run() {
    local name=$1 limit=$2 t0 rc left
    shift 2
    t0=$(date +%s)
    left=$((DEADLINE - t0))
    [ "$left" -lt "$limit" ] && limit=$left
    echo "== $name: $*" >"$OUT/$name.log"
    if [ "$limit" -lt 10 ]; then
        echo "== $name: skipped, the budget is spent" | tee -a "$OUT/$name.log"
        LAST_RC=skip LAST_S=0 FAILED=1
        return
    fi
    timeout -k 10 "$limit" "$@" >>"$OUT/$name.log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "== $name: stopped after $limit s" >>"$OUT/$name.log"
    [ $rc -ne 0 ] && FAILED=1
    LAST_RC=$rc
    LAST_S=$(($(date +%s) - t0))
    echo "---- $name (rc $rc, ${LAST_S} s), last lines:"
    tail -n 15 "$OUT/$name.log" | cut -c1-400
}

note() {
    local what=$2
    [ "$LAST_RC" = skip ] && what="skipped: the budget was spent"
    [ "$LAST_RC" = 124 ] && what="stopped at its time limit; $what"
    SUMMARY+=("$(printf '%-7s rc=%-4s %4ss  %s' "$1" "$LAST_RC" "$LAST_S" "$what")")
}

setup() {
    local status=0
    echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
    command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi
    # first: a and d need only the source and the interpreter's own packages
    "$PY" scripts/source_tree.py --out "$SRC" || status=1
    if [ "$WHEELS" != "-" ]; then
        echo "installing $(ls "$WHEELS"/*.whl | wc -l) wheels into $SITE"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$SITE" "$WHEELS"/*.whl || return 1
    fi
    "$PY" -P -c '
import importlib.metadata as m, sglaunch, sglaunch.validators, sglaunch.tui
print("sglaunch from", sglaunch.__file__)
for name in ("torch", "transformers", "huggingface-hub", "tokenizers", "textual", "rich", "pydantic",
             "nvidia-ml-py", "pytest", "numpy", "regex", "triton", "torchvision", "sglang"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        print(name, "-")
' || status=1
    # warm_up() is what the oracle worker runs before it answers; here its traceback is whole
    "$SGLANG_PY" -P -c '
import importlib.util, sys, time, traceback
spec = importlib.util.spec_from_file_location("w", sys.argv[1])
w = importlib.util.module_from_spec(spec)
sys.modules["w"] = w
spec.loader.exec_module(w)
t0 = time.perf_counter()
try:
    w.warm_up()
except BaseException:
    traceback.print_exc()
    sys.exit(1)
import torch
print(f"sglang warm-up {time.perf_counter() - t0:.1f} s, CUDA initialised: {torch.cuda._initialized}")
' "$SRC/sglaunch/in_sglang/oracle_worker.py" || status=1
    return $status
}

# -- setup ---------------------------------------------------------------------------------
# The sglang interpreter: SGLANG_PY (or PY) on the wheels' folder alone, as a separate sglang
# environment would be, and with the HIDE packages made to look absent (a sitecustomize
# first on its path), so that sglang_import.py installs sglang's own mocks for them.
SGLANG_BASE=${SGLANG_PY:-$PY}
# the wrapper runs from wherever the oracle is started
case $SGLANG_BASE in */*) [ "${SGLANG_BASE#/}" = "$SGLANG_BASE" ] && SGLANG_BASE=$ROOT/$SGLANG_BASE ;; esac
SGLANG_PATH=
[ "$WHEELS" != "-" ] && SGLANG_PATH=$SITE
if [ -n "${HIDE:-}" ]; then
    mkdir -p "$WORK/hide"
    SGLANG_PATH=$WORK/hide${SGLANG_PATH:+:$SGLANG_PATH}
    cat >"$WORK/hide/sitecustomize.py" <<EOF
# written by scripts/gpu_machine_checks.sh: HIDE="$HIDE" look absent to this interpreter
import importlib.util
import sys

_HIDDEN = set("$HIDE".split())
_find_spec = importlib.util.find_spec


def _hidden(name):
    return name.split(".")[0] in _HIDDEN and name not in sys.modules


def find_spec(name, package=None):
    return None if _hidden(name) else _find_spec(name, package)


class _Hide:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if _hidden(name):
            raise ModuleNotFoundError(f"No module named {name!r} (HIDE)", name=name)
        return None


importlib.util.find_spec = find_spec
sys.meta_path.insert(0, _Hide)
EOF
fi
if [ -n "$SGLANG_PATH" ]; then
    SGLANG_PY=$WORK/sglang-python
    printf '#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' "$SGLANG_PATH" "$SGLANG_BASE" >"$SGLANG_PY"
    chmod +x "$SGLANG_PY"
else
    SGLANG_PY=$SGLANG_BASE
fi
if [ "$WHEELS" = "-" ]; then export PYTHONPATH=$SRC; else export PYTHONPATH=$SRC:$SITE; fi
export PY SGLANG_PY WHEELS SITE SRC
export -f setup
run setup 240 bash -c setup
note setup "$(grep -E '^(sglang warm-up|ERROR|Error|[A-Za-z]*Error)' "$OUT/setup.log" | tail -1)"

# -- a: NVML facts -------------------------------------------------------------------------
run a_gpu_facts 60 "$PY" scripts/gpu_facts_check.py
note a "$(grep -E '^(driver|GPU0|no NVML)' "$OUT/a_gpu_facts.log" | head -2 | tr '\n' ' ')"

# -- b: the oracle worker holds no CUDA context --------------------------------------------
run b_oracle_gpu 200 "$PY" scripts/oracle_gpu_check.py --json --sglang-python "$SGLANG_PY"
note b "$(grep -oE '"(verdict|reason)": "[^"]*"' "$OUT/b_oracle_gpu.log" | tr '\n' ' ' | cut -c1-300)"

# -- d: CUDA and NCCL start-up cost (before c: c repeats b's check through pytest) -----------
run d_cuda_startup 120 "$PY" scripts/cuda_startup_check.py
note d "$(grep -E '^start-up cost, one GPU|^no GPU' "$OUT/d_cuda_startup.log" | head -1)"

# -- c: the gpu-marked tests ---------------------------------------------------------------
# sglaunch is imported before pytest puts the checkout first on sys.path: the checkout's
# sglaunch/ lacks validators/ and tui/, which only the laid-out source maps in; -P keeps the
# current folder off the path for the same reason. Plugins are not autoloaded: the
# interpreter's own may not match this pytest, and the gpu test needs none.
run c_pytest_gpu 200 env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 SGLAUNCH_SGLANG_PYTHON="$SGLANG_PY" \
    "$PY" -P -c \
    'import sys, sglaunch.validators, sglaunch.tui, pytest; sys.exit(pytest.main())' \
    -m gpu tests/sglang -p no:cacheprovider -q -rA
note c "$(grep -E '(passed|failed|error|no tests ran)' "$OUT/c_pytest_gpu.log" | tail -1)"

echo "==== summary (logs in $OUT)"
printf '%s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
rm -rf "$WORK"
exit $FAILED
