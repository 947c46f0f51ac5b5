"""Facts about the GPUs, the model and its weights."""
