"""Rules for every model: flags, parallelism, memory, context, remote code, backends."""
