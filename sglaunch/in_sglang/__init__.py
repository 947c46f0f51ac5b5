"""Code that runs under sglang's interpreter, by path: the oracle worker, the GPU emulation,
the memory probe, the sglang import shim and the flag and model-type extractors.

Each file imports the standard library, sglang and its siblings here (loaded by path),
never the rest of sglaunch: the sglang interpreter need not have sglaunch installed.
sglaunch imports `sglang_import` (standard library only) by name."""
