"""Cards for the host findings (`sglaunch doctor`): what each means, when, and the way out."""

from __future__ import annotations

from sglaunch.validators.cards import card

STAGE = "host"
SERVE = "sglang serve --model-path meta-llama/Llama-3.1-8B-Instruct"

card(
    "host-python-unusable",
    "The launch interpreter could not be asked for its packages",
    what="sglaunch runs the interpreter that will start sglang with a tiny script to read its "
    "package versions; it did not answer (missing, not executable, crashed or too slow).",
    when="A profile names a Python that was removed, or an environment that hangs on import.",
    solutions=(
        "Name an interpreter with sglang installed: --sglang-python /path/to/env/bin/python.",
        "Run it by hand (PATH -c 'import sglang') to see its own error.",
    ),
    before="sglaunch doctor --sglang-python /gone/bin/python",
    after="sglaunch doctor --sglang-python ~/sglang-env/bin/python",
    related=("host-sglang-missing",),
    stage=STAGE,
)
card(
    "host-sglang-missing",
    "The launch interpreter has no sglang",
    what="`python -m sglang.launch_server` fails at once with ModuleNotFoundError.",
    when="The launch uses a Python from another environment than the one sglang was installed in.",
    solutions=(
        "Install sglang there: PYTHON -m pip install sglang.",
        "Or launch with the environment that has it: --sglang-python PATH.",
    ),
    before="python -m sglang.launch_server …  # /usr/bin/python",
    after="~/sglang-env/bin/python -m sglang.launch_server …",
    related=("runtime-sglang-not-installed",),
    stage=STAGE,
)
card(
    "host-torch-missing",
    "The launch interpreter has sglang but no torch",
    what="sglang imports torch first thing; without it the server cannot start.",
    when="sglang was installed with --no-deps, or torch was uninstalled afterwards.",
    solutions=("Install the torch release sglang pins: PYTHON -m pip install torch==VERSION.",),
    before="pip install --no-deps sglang",
    after="pip install sglang  # brings the pinned torch",
    related=("host-package-mismatch",),
    stage=STAGE,
)
card(
    "host-package-missing",
    "A package sglang pins is not installed",
    what="sglang's METADATA pins its kernels (flashinfer, sglang-kernel, …) and torch to exact "
    "releases; one of them is absent from the launch interpreter, so the first kernel call "
    "(or the import) fails.",
    when="A partial install, a CPU-only environment, or a requirements file that drops extras.",
    solutions=(
        "Install the pinned release the finding names: PYTHON -m pip install NAME==VERSION.",
    ),
    before="pip install sglang --no-deps",
    after="pip install 'flashinfer-python==0.7.2' 'sglang-kernel==0.4.10'",
    related=("host-package-mismatch",),
    stage=STAGE,
)
card(
    "host-package-mismatch",
    "A package sglang pins is installed at another release",
    what="sglang was built and tested against exact releases of its kernels and torch; another "
    "release fails with undefined symbols, missing ops, or wrong results.",
    when="torch or flashinfer upgraded after sglang, or two projects sharing one environment.",
    solutions=(
        "Install the pinned release: PYTHON -m pip install NAME==VERSION.",
        "Keep sglang in its own virtual environment.",
    ),
    before="pip install -U torch  # after sglang",
    after="pip install 'torch==2.14.1'",
    related=("host-package-missing",),
    stage=STAGE,
)
card(
    "host-no-nvml",
    "No NVML: the driver's CUDA version is not known",
    what="NVML (libnvidia-ml) could not be loaded, so the driver's CUDA version cannot be "
    "compared with the CUDA release torch was built for.",
    when="A machine without an NVIDIA driver (planning only), or a container without the "
    "driver libraries mounted.",
    solutions=(
        "On a GPU machine: run the container with the NVIDIA runtime (--gpus all).",
        "Without a GPU this is expected: plan with --gpu NAMExCOUNT.",
    ),
    before="docker run image sglaunch doctor",
    after="docker run --gpus all image sglaunch doctor",
    related=("host-torch-cuda-newer-than-driver",),
    stage=STAGE,
)
card(
    "host-torch-cpu-only",
    "torch is a CPU build on a GPU host",
    what="torch.version.cuda is None: this torch cannot use the GPUs, and sglang stops with "
    "'Torch not compiled with CUDA enabled'.",
    when="pip picked the CPU wheel (an index without CUDA wheels, or a CPU-only extra).",
    solutions=("Install a CUDA build of torch from the PyTorch index for the driver's CUDA.",),
    before="pip install torch --index-url https://download.pytorch.org/whl/cpu",
    after="pip install torch --index-url https://download.pytorch.org/whl/cu128",
    related=("host-torch-cuda-newer-than-driver", "runtime-no-gpu-runtime"),
    stage=STAGE,
)
card(
    "host-torch-cuda-newer-than-driver",
    "torch is built for a newer CUDA than the driver supports",
    what="The driver supports CUDA up to the version NVML reports; a torch built for a newer "
    "CUDA fails at the first CUDA call ('The NVIDIA driver on your system is too old').",
    when="A new torch wheel (cu130) on a machine with an older driver (CUDA 12.x).",
    solutions=(
        "Upgrade the NVIDIA driver.",
        "Or install a torch built for the driver's CUDA (the cuXYZ index of download.pytorch.org).",
    ),
    before="torch 2.14.1+cu130 with driver CUDA 12.8",
    after="torch 2.14.1+cu128 with driver CUDA 12.8",
    related=("host-torch-cpu-only",),
    patterns=(r"The NVIDIA driver on your system is too old",),
    stage=STAGE,
)
card(
    "host-port-in-use",
    "A port the launch binds is already taken",
    what="Another process listens on a port sglang will bind (the HTTP --port, the rendezvous "
    "port on the head, attention DP's port block). The launch loads the whole model and then "
    "fails to bind, or waits 30 s per busy DP port.",
    when="An earlier server still running, two launches with the same --port, or an unrelated "
    "service on 30000.",
    solutions=(
        "Stop the process the finding names (sglaunch runs stop RUN for one sglaunch started).",
        "Or choose another port: --port P (attention DP also uses P+13 and P+233…P+238).",
    ),
    before=f"{SERVE} --port 30000  # 30000 held by an old server",
    after=f"{SERVE} --port 30010",
    related=("runtime-port-in-use",),
    stage=STAGE,
)
card(
    "host-port-unbindable",
    "A port cannot be bound on this host",
    what="Binding the port failed for a reason other than 'in use': the --host address is not "
    "this machine's, or the port needs privileges.",
    when="--host set to another machine's address, or a port under 1024 without root.",
    solutions=("Use --host 0.0.0.0 or an address of this host, and a port above 1023.",),
    before=f"{SERVE} --host 10.9.9.9 --port 80",
    after=f"{SERVE} --host 0.0.0.0 --port 30000",
    related=("host-port-in-use",),
    stage=STAGE,
)
card(
    "host-proxy-intercepts-warmup",
    "A proxy variable catches the server's own warm-up request",
    what="sglang sends a warm-up request to its own --host:--port with the requests library, "
    "which honours http_proxy; unless no_proxy names that host, the request goes to the proxy, "
    "which answers 502, and the launch is declared failed (sglang issue 9814).",
    when="Corporate networks and clusters that export http_proxy/https_proxy in every shell.",
    solutions=(
        "export no_proxy=127.0.0.1,localhost (and NO_PROXY) before launching.",
        "Or unset http_proxy and HTTP_PROXY for the launch.",
    ),
    before=f"http_proxy=http://proxy:3128 {SERVE}",
    after=f"http_proxy=http://proxy:3128 no_proxy=127.0.0.1,localhost {SERVE}",
    related=("runtime-warmup-failed",),
    stage=STAGE,
)
card(
    "host-shm-too-small",
    "/dev/shm is too small for NCCL between the ranks on this node",
    what="NCCL's shared-memory transport maps its buffers (NCCL_BUFFSIZE, 4 MiB by default, "
    "per channel and pair of ranks) in /dev/shm; when the segment cannot be created the first "
    "all-reduce fails with 'Error while creating shared memory segment'. sglaunch flags under "
    "512 MiB as an error and asks 1 GiB per local rank.",
    when="Docker's default /dev/shm of 64 MB with --tp 2 or more.",
    solutions=(
        "docker run --shm-size 16g (or --ipc=host).",
        "Kubernetes: mount an emptyDir with medium: Memory on /dev/shm.",
    ),
    before=f"docker run --gpus all image {SERVE} --tp 4",
    after=f"docker run --gpus all --shm-size 16g image {SERVE} --tp 4",
    patterns=(r"Error while creating shared memory segment",),
    stage=STAGE,
)
card(
    "host-memory-hicache",
    "--hicache-size × the ranks on this node exceeds host memory",
    what="--hicache-size is the host KV cache of each rank (sglang PR 29263), so tp 4 with "
    "--hicache-size 150 pins 600 GB of host memory; beyond what the host has, the OOM killer "
    "ends the launch.",
    when="Reading --hicache-size as the total for the server.",
    solutions=("Divide the budget by the ranks on this node: --hicache-size TOTAL/RANKS.",),
    before=f"{SERVE} --tp 4 --enable-hierarchical-cache --hicache-size 150",
    after=f"{SERVE} --tp 4 --enable-hierarchical-cache --hicache-size 35",
    stage=STAGE,
)
card(
    "host-memory-weights",
    "The weights are larger than the free host memory",
    what="safetensors are read through the page cache while they load; with less free memory "
    "than the weights on this node the load pages heavily, and with other pinned memory the "
    "OOM killer may end it.",
    when="Large checkpoints on hosts with little RAM, or beside --hicache-size.",
    solutions=("Free host memory before the launch, or spread the model over more nodes.",),
    before="a 140 GB checkpoint on a 64 GB host",
    after="the same checkpoint on a host with 256 GB",
    related=("host-memory-hicache",),
    stage=STAGE,
)
card(
    "host-checkpoint-unreadable",
    "The checkpoint's index cannot be read",
    what="model.safetensors.index.json (or the folder) could not be read or parsed, so sglang "
    "cannot find the shards.",
    when="A truncated download, a hand-edited index, or a permission problem.",
    solutions=("Download the checkpoint again (hf download REPO).",),
    before="model.safetensors.index.json cut off mid-file",
    after="hf download REPO --local-dir DIR",
    related=("host-shard-missing",),
    stage=STAGE,
)
card(
    "host-shard-missing",
    "A shard named in the index is not there",
    what="The index maps tensors to shard files; a missing file makes sglang fail while loading "
    "weights, after the GPUs are set up.",
    when="An interrupted download, or copying a checkpoint without every file.",
    solutions=(
        "Download the checkpoint again (hf download resumes and fetches only what is missing).",
    ),
    before="model-00003-of-00004.safetensors absent",
    after="hf download REPO --local-dir DIR",
    related=("host-shard-truncated",),
    stage=STAGE,
)
card(
    "host-shard-truncated",
    "A shard is shorter than its header says",
    what="A safetensors header gives every tensor's byte range; a file shorter than the last "
    "range ends mid-tensor, and loading fails ('incomplete metadata, file not fully covered' "
    "or a short read).",
    when="An interrupted download or copy.",
    solutions=("Download that shard again.",),
    before="model-00002-of-00004.safetensors: 3.1 GB of 4.9 GB",
    after="hf download REPO model-00002-of-00004.safetensors --local-dir DIR",
    related=("host-shard-missing",),
    patterns=(r"incomplete metadata, file not fully covered",),
    stage=STAGE,
)
card(
    "host-shard-corrupt",
    "A shard's safetensors header cannot be read",
    what="The file does not start with a valid safetensors header, so its tensors cannot be "
    "located.",
    when="A download that saved an error page, or a corrupted disk.",
    solutions=("Download that shard again.",),
    before="model-00001-of-00002.safetensors holds an HTML error page",
    after="hf download REPO model-00001-of-00002.safetensors --local-dir DIR",
    related=("host-shard-truncated",),
    stage=STAGE,
)
card(
    "host-no-weights",
    "The model folder has no weight files",
    what="Neither an index nor any .safetensors or .bin file is there; sglang fails while "
    "loading weights unless --load-format dummy is used.",
    when="A folder with the config only (sglaunch's bundled examples are such folders).",
    solutions=("Point --model-path at the full checkpoint, or use --load-format dummy to test.",),
    before=f"{SERVE.split(' --')[0]} --model-path ./config-only",
    after=f"{SERVE.split(' --')[0]} --model-path ./config-only --load-format dummy",
    stage=STAGE,
)
card(
    "host-download-size-unknown",
    "The model will be downloaded; its size is not known here",
    what="The model is neither a folder nor in the Hugging Face cache, so sglang downloads it at "
    "launch; sglaunch reads no network, so the size is not known.",
    when="The first launch of a Hugging Face repo id.",
    solutions=("Download it first (hf download REPO) to see its size and check it offline.",),
    before=f"{SERVE}  # not cached",
    after="hf download meta-llama/Llama-3.1-8B-Instruct; sglaunch doctor --model …",
    related=("host-download-no-space",),
    stage=STAGE,
)
card(
    "host-download-no-space",
    "The model download does not fit on the disk",
    what="The download is larger than the free space where Hugging Face puts it; the download "
    "fails part way, after minutes.",
    when="Large checkpoints on small root disks (the cache defaults to ~/.cache/huggingface).",
    solutions=("Point HF_HOME at a disk with room, or free space.",),
    before=f"{SERVE}  # 16 GB into a disk with 5 GB free",
    after=f"HF_HOME=/data/hf {SERVE}",
    stage=STAGE,
)
card(
    "host-visible-devices-absent",
    "CUDA_VISIBLE_DEVICES names GPUs this host does not have",
    what="CUDA drops entries that match no device (and everything after an invalid one), so "
    "the server sees fewer GPUs than planned, or none ('No CUDA GPUs are available').",
    when="A variable copied from another machine, or left over from a job script.",
    solutions=("Set CUDA_VISIBLE_DEVICES to indices 0…N-1 or UUIDs that nvidia-smi lists.",),
    before=f"CUDA_VISIBLE_DEVICES=4,5 {SERVE}  # a 4-GPU host",
    after=f"CUDA_VISIBLE_DEVICES=2,3 {SERVE}",
    related=("host-gpus-out-of-range",),
    stage=STAGE,
)
card(
    "host-gpus-out-of-range",
    "--base-gpu-id and the ranks go past the visible GPUs",
    what="Rank r uses GPU base-gpu-id + r × gpu-id-step among the visible ones; past the last "
    "one, torch fails with 'invalid device ordinal'.",
    when="--base-gpu-id kept from a bigger machine, or CUDA_VISIBLE_DEVICES narrowed.",
    solutions=("Lower --base-gpu-id, or make more GPUs visible, or lower --tp.",),
    before=f"CUDA_VISIBLE_DEVICES=0,1 {SERVE} --tp 2 --base-gpu-id 1",
    after=f"CUDA_VISIBLE_DEVICES=0,1 {SERVE} --tp 2",
    related=("host-visible-devices-absent",),
    stage=STAGE,
)
card(
    "host-gpu-memory-held",
    "Other processes already hold GPU memory",
    what="--mem-fraction-static is a share of each GPU's total memory; what other processes "
    "hold is not free for it, and the KV cache allocation fails or is smaller than planned.",
    when="An earlier server still running, a notebook holding a CUDA context, a monitoring job.",
    solutions=(
        "Stop the processes the finding names.",
        "Or lower --mem-fraction-static by their share.",
    ),
    before=f"{SERVE}  # a notebook holds 20 GB",
    after=f"{SERVE} --mem-fraction-static 0.6",
    related=("runtime-kv-cache-oom",),
    stage=STAGE,
)
card(
    "host-rendezvous-unresolvable",
    "The rendezvous address does not resolve",
    what="--dist-init-addr names a host that DNS cannot resolve here, so torch's rendezvous "
    "cannot connect and the ranks wait until --dist-timeout.",
    when="A typo, a short name without the search domain, or an unset shell variable in the "
    "address.",
    solutions=("Use the head node's IP address, or a name every node resolves.",),
    before=f"{SERVE} --nnodes 2 --node-rank 1 --dist-init-addr head-nod:20000",
    after=f"{SERVE} --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:20000",
    related=("host-rendezvous-not-local",),
    stage=STAGE,
)
card(
    "host-rendezvous-not-local",
    "The head's rendezvous address is not one of its own",
    what="Rank 0 runs the TCPStore (and attention DP's ZMQ sockets) on the --dist-init-addr "
    "host, so on the head that address must be this host's; another one fails to bind "
    "('Cannot assign requested address').",
    when="Launching the head with the address of another node, a VIP or a NAT address.",
    solutions=("On the head use one of its own addresses (hostname -I).",),
    before=f"{SERVE} --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.2:20000",
    after=f"{SERVE} --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:20000",
    related=("host-rendezvous-unresolvable",),
    stage=STAGE,
)
card(
    "host-memlock-limited",
    "InfiniBand with a limited memlock",
    what="NCCL registers its buffers with the InfiniBand card, which locks them in memory; "
    "with a finite RLIMIT_MEMLOCK registration fails ('ibv_reg_mr failed') or NCCL falls back "
    "to slow sockets.",
    when="Containers without --ulimit memlock=-1, or hosts with the default 64 KiB limit.",
    solutions=(
        "docker run --ulimit memlock=-1 (Kubernetes: IPC_LOCK capability).",
        "Set memlock unlimited in /etc/security/limits.conf.",
    ),
    before="docker run --gpus all --network host image …",
    after="docker run --gpus all --network host --ulimit memlock=-1 image …",
    patterns=(r"ibv_reg_mr failed",),
    stage=STAGE,
)
card(
    "host-fact-unknown",
    "A fact about the host could not be read",
    what="A collector could not read something (a /proc file, a mount); the check that needs "
    "it was skipped, and the finding says which.",
    when="Restricted containers, read-only or missing /proc.",
    solutions=(
        "Nothing is needed; run sglaunch doctor where /proc is readable for the full check.",
    ),
    before="sglaunch doctor  # /proc/meminfo unreadable",
    after="sglaunch doctor  # on the host itself",
    stage=STAGE,
)
