"""Rule modules: `general/` for every model, `models/` keyed by architecture like sglang's model_overrides."""
