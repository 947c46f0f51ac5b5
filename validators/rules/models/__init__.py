"""Per-family rules, one module per family, named like sglang's srt/arg_groups/model_overrides/."""
