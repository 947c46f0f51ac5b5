"""Which of sglang's Requires-Dist lines are the exact pins the host check compares."""

from __future__ import annotations

from sglaunch.host.collect import host_env, sglang_pins

REQUIRES = [
    "cuda-python>=13.0",
    "flashinfer_python[cu13]==0.7.2",
    "sgl-deep-gemm==0.2.3.post2",
    "sglang-kernel==0.4.10",
    "torch==2.14.1",
    "torch_memory_saver>=0.0.9.post1",
    "torchaudio==2.11.0",
    'torchcodec==0.17.0; sys_platform != "linux"',
    'sgl-kernel==0.3.0; extra == "legacy"',
    "flashinfer-cubin==0.7.*",
]


def test_the_kernels_and_torch_pinned_with_double_equals() -> None:
    assert sglang_pins(REQUIRES) == [
        ("flashinfer_python", "0.7.2"),
        ("sglang-kernel", "0.4.10"),
        ("torch", "2.14.1"),
    ]


def test_only_the_variables_the_checks_read_are_kept() -> None:
    env = {"HTTP_PROXY": "p", "no_proxy": "x", "HF_TOKEN": "secret", "CUDA_VISIBLE_DEVICES": "0"}
    assert host_env(env) == {"HTTP_PROXY": "p", "no_proxy": "x", "CUDA_VISIBLE_DEVICES": "0"}
