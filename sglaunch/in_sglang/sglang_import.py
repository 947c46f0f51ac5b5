"""Import sglang on a machine without triton or a working torchvision.

This file runs under the *sglang* interpreter, loaded by path (it must not
import sglaunch or anything outside the standard library): the flag-schema
extractor and the oracle worker both call `prepare()` before importing sglang.

Two things stop `import sglang` on a CPU-only machine (see the resolution
reference): `import triton` in srt/utils/common.py, and PyPI's torchvision,
which fails to import beside the CPU build of torch. sglang ships a triton mock
in `sglang/_platform_stubs.py`; resolution never needs torchvision.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys


def _triton_importable() -> bool:
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def _torchvision_importable() -> bool:
    """PyPI's torchvision fails to import beside the CPU torch; so does a missing one."""
    if importlib.util.find_spec("torchvision") is None:
        return False
    try:
        import torchvision  # noqa: F401
    except Exception:
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        return False
    return True


class _MockFinder:
    """Serve every `PREFIX.*` import from sglang's `_MockModule` (already in sys.modules)."""

    def __init__(self, prefix: str, mock_cls: type) -> None:
        self.prefix = prefix
        self.mock_cls = mock_cls

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname != self.prefix and not fullname.startswith(self.prefix + "."):
            return None
        if fullname not in sys.modules:
            mod = self.mock_cls(fullname)
            sys.modules[fullname] = mod
            parent, _, child = fullname.rpartition(".")
            if parent in sys.modules:
                setattr(sys.modules[parent], child, mod)
        return getattr(sys.modules[fullname], "__spec__", None)


def _install_torchvision_mock(stubs) -> None:  # type: ignore[no-untyped-def]
    """Resolution never needs torchvision, but sglang imports it at module level.

    transformers decides once, at its own import, whether torchvision exists
    (an lru_cache'd find_spec); importing it first, while torchvision is still
    absent, keeps it off its torchvision code paths, which the mock cannot serve.
    """
    with contextlib.suppress(ImportError):
        import transformers  # noqa: F401
    sys.modules["torchvision"] = stubs._MockModule("torchvision")
    sys.meta_path.insert(0, _MockFinder("torchvision", stubs._MockModule))


def sglang_dir() -> str:
    """The installed sglang package's folder, found without importing it."""
    spec = importlib.util.find_spec("sglang")
    if spec is None or spec.origin is None:
        raise ImportError("sglang is not installed in this interpreter")
    return os.path.dirname(spec.origin)


def _load_stubs():  # type: ignore[no-untyped-def]
    stubs_path = os.path.join(sglang_dir(), "_platform_stubs.py")
    stub_spec = importlib.util.spec_from_file_location("_sglaunch_sglang_stubs", stubs_path)
    if stub_spec is None or stub_spec.loader is None:
        raise ImportError(f"cannot load {stubs_path}")
    module = importlib.util.module_from_spec(stub_spec)
    # dataclasses inside the stubs look their module up in sys.modules
    sys.modules[stub_spec.name] = module
    stub_spec.loader.exec_module(module)
    return module


def _install_triton_mock(stubs) -> None:  # type: ignore[no-untyped-def]
    """Run sglang's own triton mock (`install_platform_stubs`), which it gates on Apple MPS.

    The mock must sit in sys.modules before anything imports triton: a bare
    meta-path finder yields a namespace package without `triton.language`,
    and torch._dynamo reads `triton.language.dtype` at import.
    """
    import platform

    import torch

    saved = (sys.platform, platform.machine, torch.backends.mps.is_available)
    try:
        sys.platform = "darwin"
        platform.machine = lambda: "arm64"  # type: ignore[assignment]
        torch.backends.mps.is_available = lambda: True  # type: ignore[assignment]
        stubs.install_platform_stubs()
    finally:
        sys.platform, platform.machine, torch.backends.mps.is_available = saved  # type: ignore[assignment]
    if "triton" not in sys.modules:
        raise ImportError("sglang's triton mock did not install")


def _register_configs_over_transformers() -> None:
    """sglang 0.5.19 registers its own `qwen3_asr` config without `exist_ok`; the
    transformers this environment pins (5.19.0, the one that imports beside the CPU
    torch) ships that type, so the registration raises and no config loads. 0.5.20
    passes `exist_ok=True` itself: default it to True, which changes only a call
    that would otherwise fail."""
    try:
        from transformers import AutoConfig
    except Exception:
        return
    original = AutoConfig.register
    if getattr(original, "_sglaunch_exist_ok", False):
        return

    def register(model_type, config, exist_ok=True):  # type: ignore[no-untyped-def]
        return original(model_type, config, exist_ok=exist_ok)

    register._sglaunch_exist_ok = True  # type: ignore[attr-defined]
    AutoConfig.register = staticmethod(register)  # type: ignore[method-assign]


def prepare() -> None:
    """Install the import shims. Idempotent; call before the first `import sglang`."""
    if getattr(sys, "_sglaunch_prepared", False):
        return
    need_triton = not _triton_importable()
    need_torchvision = not _torchvision_importable()
    if need_triton or need_torchvision:
        stubs = _load_stubs()
        if need_triton:
            _install_triton_mock(stubs)
        if need_torchvision:
            _install_torchvision_mock(stubs)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    _register_configs_over_transformers()
    sys._sglaunch_prepared = True  # type: ignore[attr-defined]


def sglang_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("sglang")
    except Exception:
        return None
