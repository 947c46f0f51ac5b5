"""The GPU memory plan, core side: facts, the calibration store, launch comparison, the oracle.

The arithmetic is pure and lives in the rule engine (`sglaunch.validators.memory`);
this package gathers what it needs and joins it to the rest of sglaunch:

- `assumptions`  `memory_facts(gpu, assume_free_gib=)` / `with_memory_facts(inp)`: calibration + override
- `calibration`  the JSON store of measured start-up costs per (GPU name, driver, TP size)
- `startup`      after launch: sglang's start-up lines against the plan; records the measured cost
- `api`          `plan_for(...)`, `memory_json(...)`, `layouts_json(...)`: what the CLI and TUI call
- `oracle`       the same plan computed by sglang's own pool code in the oracle worker
"""
