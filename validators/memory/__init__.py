"""sglang's GPU memory plan, as pure arithmetic (standard library only).

Each module mirrors one part of sglang's start-up memory planning, with the
file:line it follows (paths relative to sglang/srt/ in the 0.5.23 wheel). Where a
release from 0.5.19 to 0.5.22 differs, the difference is keyed by release
(validators/release_spans.py names each one; tests/memory/test_golden_releases.py):

- `shapes`   what the plan reads from a model: attention/state shapes, weight groups
- `knobs`    the GPU-memory tier, CUDA-graph batch sizes, the default --mem-fraction-static
- `cells`    bytes per KV token and per mamba/lightning state slot
- `pool`     from free memory to max_total_num_tokens and max_running_requests
- `plan`     the whole plan for one launch (`plan_memory`), and its JSON
- `layouts`  the parallel layouts that fit a set of GPUs

This package imports nothing at import time, so `validators.facts` can use
`shapes` without a cycle.
"""
