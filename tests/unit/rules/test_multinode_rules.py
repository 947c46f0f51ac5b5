"""The multi-node rules, from data: one server over several nodes, on every release.

Each bad case names the code, its severity and a piece of its message (sglang's own words
where sglang has them); each good case must not produce the code. The GPU preset is one
node's; `nodes` is the topology the check is for (`--nodes`, the GPU dialog).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sglaunch.validators.engine import Report, all_rules, get_rule, validate
from sglaunch.validators.findings import Severity
from sglaunch.validators.registry import get_card
from sglaunch.validators.rules.general.multinode import (
    ADDRESSING_CODES,
    layout_maps,
    parse_address,
)
from tests.conftest import make_input

LLAMA = "example:llama-3.1-8b"  # 32 heads, 8 KV heads
DSV2 = "deepseek-v2-lite"  # MoE, attention DP allowed
RELEASES = ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
E, W = Severity.ERROR, Severity.WARNING

# a line every node could run: rank 0, the head's address, reachable
GOOD = ["--tp", "16", "--nnodes", "2", "--dist-init-addr", "10.0.0.5:20000", "--host", "0.0.0.0"]


def check(
    argv: list[str], *, nodes: int = 1, model: str | None = LLAMA, version: str | None = None
) -> Report:
    inp = make_input(model, argv, "H100x8", version=version)
    return validate(replace(inp, gpu=inp.gpu.on_nodes(nodes)))


def with_flags(**changes: str) -> list[str]:
    """GOOD with some flags replaced (name without dashes -> value; "" drops the flag)."""
    out = list(GOOD)
    for name, value in changes.items():
        flag = "--" + name.replace("_", "-")
        if flag in out:
            i = out.index(flag)
            del out[i : i + 2]
        if value != "":
            out += [flag, value]
    return out


# (code, argv, nodes, severity or None, message fragment)
CASES = [
    # --- the topology against the line ---
    (
        "nodes-mismatch",
        with_flags(nnodes="4", tp="32"),
        2,
        E,
        "says --nnodes 4 but the check is for 2 nodes × 8× ",
    ),
    ("nodes-mismatch", with_flags(nnodes=""), 2, W, "no --nnodes (one node)"),
    ("nodes-mismatch", GOOD, 2, None, ""),
    # a line's --nnodes is the topology when none is chosen: the session says so (test_session_nodes)
    ("nodes-mismatch", ["--tp", "8"], 1, None, ""),
    # --- sglang's own: --nnodes 0 divides by zero in check_server_args ---
    ("nnodes-positive", ["--tp", "8", "--nnodes", "0"], 1, E, "integer modulo by zero"),
    ("nnodes-positive", ["--tp", "8", "--nnodes", "-2"], 1, E, "negative node count"),
    ("nnodes-positive", GOOD, 2, None, ""),
    # --- the rendezvous address ---
    ("dist-init-addr-missing", with_flags(dist_init_addr=""), 2, E, "without --dist-init-addr"),
    ("dist-init-addr-missing", with_flags(dist_init_addr=""), 2, E, "hangs until the timeout"),
    # "" is unset for sglang too (bootstrap.py:241)
    (
        "dist-init-addr-missing",
        [*with_flags(dist_init_addr=""), "--dist-init-addr", ""],
        2,
        E,
        "without",
    ),
    ("dist-init-addr-missing", GOOD, 2, None, ""),
    ("dist-init-addr-missing", ["--tp", "8"], 1, None, ""),
    (
        "dist-init-addr-bare-ipv6",
        with_flags(dist_init_addr="fd00::1:20000"),
        2,
        E,
        "Bare IPv6 address without brackets is ambiguous: 'fd00::1:20000'. Use [fd00::1]:20000 instead.",
    ),
    ("dist-init-addr-bare-ipv6", with_flags(dist_init_addr="[fd00::1]:20000"), 2, None, ""),
    (
        "dist-init-addr-port",
        with_flags(dist_init_addr="10.0.0.5"),
        2,
        E,
        "Missing port in address (expected host:port): '10.0.0.5'",
    ),
    (
        "dist-init-addr-port",
        with_flags(dist_init_addr="10.0.0.5:70000"),
        2,
        E,
        "Port out of range (0-65535): 70000",
    ),
    (
        "dist-init-addr-port",
        with_flags(dist_init_addr="[::1]"),
        2,
        E,
        "Expected ':port' after closing bracket, got: ''",
    ),
    (
        "dist-init-addr-port",
        with_flags(dist_init_addr="head:http"),
        2,
        E,
        "Invalid port number: 'http'",
    ),
    ("dist-init-addr-port", GOOD, 2, None, ""),
    (
        "dist-init-addr-host",
        with_flags(dist_init_addr=":20000"),
        2,
        E,
        "Empty host in address: ':20000'",
    ),
    (
        "dist-init-addr-host",
        with_flags(dist_init_addr="[zz]:20000"),
        2,
        E,
        "Invalid IPv6 address inside brackets",
    ),
    ("dist-init-addr-host", with_flags(dist_init_addr="head-0.sglang:20000"), 2, None, ""),
    # --- ranks ---
    (
        "node-rank-range",
        with_flags(node_rank="2"),
        2,
        E,
        "--node-rank 2 is outside 0..1 for --nnodes 2",
    ),
    ("node-rank-range", with_flags(node_rank="-1"), 2, E, "outside 0..1"),
    ("node-rank-range", ["--tp", "8", "--node-rank", "1"], 1, E, "outside 0..0"),
    ("node-rank-range", with_flags(node_rank="1"), 2, None, ""),
    ("node-rank-range", with_flags(node_rank="0"), 2, None, ""),
    # --- ports on node 0 ---
    (
        "dist-init-port-equals-port",
        with_flags(dist_init_addr="10.0.0.5:30000"),
        2,
        E,
        "--port 30000 is also the --dist-init-addr port",
    ),
    (
        "dist-init-port-equals-port",
        with_flags(dist_init_addr="10.0.0.5:30000", port="31000"),
        2,
        None,
        "",
    ),
    ("dist-init-port-equals-port", GOOD, 2, None, ""),
    (
        "attn-dp-port-block",
        [*with_flags(dist_init_addr="10.0.0.5:29990"), "--attn-dp-size", "16"],
        2,
        E,
        "--port 30000 lies in 29990..30003",
    ),
    ("attn-dp-port-block", [*GOOD, "--attn-dp-size", "16"], 2, None, ""),
    # --- the rendezvous timeout ---
    ("dist-timeout-positive", with_flags(dist_timeout="0"), 2, E, "timeout must be positive"),
    ("dist-timeout-positive", with_flags(dist_timeout="-5"), 2, E, "timeout must be positive"),
    ("dist-timeout-positive", with_flags(dist_timeout="3600"), 2, None, ""),
    # --- the layout over the nodes ---
    ("pp-stages-nodes", with_flags(tp="4", pp_size="3"), 2, E, "do not map onto the nodes"),
    ("pp-stages-nodes", with_flags(tp="8", pp_size="2"), 2, None, ""),
    ("pp-stages-nodes", with_flags(tp="8", pp_size="4"), 2, None, ""),
    ("pp-stages-nodes", with_flags(tp="16", pp_size="2", nnodes="4"), 4, None, ""),
    ("gpus-per-node", with_flags(tp="32"), 2, E, "needs 16 GPUs on each node but a node has 8"),
    ("gpus-per-node", with_flags(tp="8", pp_size="4"), 2, E, "needs 16 GPUs on each node"),
    ("gpus-per-node", with_flags(base_gpu_id="4"), 2, E, "needs 12 GPUs on each node"),
    ("gpus-per-node", GOOD, 2, None, ""),
    # across nodes the per-node rule speaks, not the one-machine count
    ("parallel-gpus", with_flags(tp="32"), 2, None, ""),
    # --- who can reach the servers ---
    (
        "multinode-host-loopback",
        with_flags(host=""),
        2,
        W,
        "--host unset (127.0.0.1) across 2 nodes",
    ),
    ("multinode-host-loopback", with_flags(host="localhost"), 2, W, "--host localhost"),
    ("multinode-host-loopback", GOOD, 2, None, ""),
    ("multinode-host-loopback", ["--tp", "8"], 1, None, ""),
]


# every rule of the module, tested here from data (test_general_rules leaves them to this table)
MULTINODE_CODES = frozenset(
    r.code for r in all_rules() if r.func.__module__.endswith(".rules.general.multinode")
)


def test_every_multinode_rule_has_cases_good_and_bad() -> None:
    assert ADDRESSING_CODES | {"nnodes-positive", "pp-stages-nodes"} <= MULTINODE_CODES
    assert {c[0] for c in CASES if c[3] is not None} >= MULTINODE_CODES
    assert {c[0] for c in CASES if c[3] is None} >= MULTINODE_CODES


@pytest.mark.parametrize(("code", "argv", "nodes", "severity", "fragment"), CASES)
def test_multinode_case(
    code: str, argv: list[str], nodes: int, severity: Severity | None, fragment: str
) -> None:
    found = [f for f in check(argv, nodes=nodes).findings if f.code == code]
    if severity is None:
        assert found == [], [f.message for f in found]
        return
    assert found, f"{code} not raised for {argv}"
    assert found[0].severity is severity
    assert fragment in found[0].message


@pytest.mark.parametrize("version", RELEASES)
def test_a_good_multinode_line_is_clean_on_every_release(version: str) -> None:
    report = check(GOOD, nodes=2, version=version)
    assert report.errors == []
    assert not [f for f in report.findings if f.code in ADDRESSING_CODES]


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--tp", "16", "--nnodes", "2", "--node-rank", "2"], "node-rank-range"),
        (["--tp", "16", "--nnodes", "2"], "dist-init-addr-missing"),
        (with_flags(dist_init_addr="fd00::1:5000"), "dist-init-addr-bare-ipv6"),
        (with_flags(tp="4", pp_size="3"), "pp-stages-nodes"),
        (with_flags(dist_timeout="0"), "dist-timeout-positive"),
    ],
)
def test_what_sglang_lets_through_is_caught_on_every_release(
    version: str, argv: list[str], code: str
) -> None:
    assert code in check(argv, nodes=2, version=version).codes()


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("0.5.19", "multi-node data parallel is not supported unless dp attention!"),
        ("0.5.21", "multi-node data parallel is not supported unless dp attention!"),
        ("0.5.23", "multi-node data-parallel replicas are not supported; use attention DP"),
    ],
)
def test_sglang_own_rejections_in_each_release_words(version: str, words: str) -> None:
    report = check(with_flags(tp="8", dp_size="2"), nodes=2, version=version)
    messages = {f.code: f.message for f in report.findings}
    assert words in messages["multinode-dp-replicas"]
    report = check(with_flags(tp="4", nnodes="3"), nodes=3, version=version)
    assert "tp_size must be divisible by number of nodes" in {f.message for f in report.errors}


@pytest.mark.parametrize(
    ("version", "argv"),
    [
        ("0.5.23", ["--tp", "16", "--attn-dp-size", "16"]),
        ("0.5.22", ["--tp", "16", "--attn-dp-size", "16"]),
        # before 0.5.22 attention DP is --enable-dp-attention --dp-size N
        ("0.5.21", ["--tp", "16", "--enable-dp-attention", "--dp-size", "16"]),
        ("0.5.19", ["--tp", "16", "--enable-dp-attention", "--dp-size", "16"]),
    ],
)
def test_attention_dp_ports_collide_with_port(version: str, argv: list[str]) -> None:
    line = [*argv, "--nnodes", "2", "--dist-init-addr", "10.0.0.5:29990", "--host", "0.0.0.0"]
    found = [
        f
        for f in check(line, nodes=2, model=DSV2, version=version).findings
        if f.code == "attn-dp-port-block"
    ]
    assert found and "29990..30003" in found[0].message
    # the same line without attention DP binds no such block
    plain = [t for t in line if t not in ("--attn-dp-size", "--enable-dp-attention")]
    plain = ["--tp", "16", *plain[plain.index("--nnodes") :]]
    assert "attn-dp-port-block" not in check(plain, nodes=2, model=DSV2, version=version).codes()


def test_fixes_hold_and_name_the_way_out() -> None:
    fixes = {
        f.code: [x.set or {"unset": x.unset} for x in f.fixes]
        for f in check(
            with_flags(dist_init_addr="fd00::1:20000", dist_timeout="0", node_rank="5"),
            nodes=2,
        ).findings
    }
    assert {"dist_init_addr": "[fd00::1]:20000"} in fixes["dist-init-addr-bare-ipv6"]
    assert {"dist_timeout": 3600} in fixes["dist-timeout-positive"]
    assert {"node_rank": 1} in fixes["node-rank-range"]
    loopback = check(with_flags(host=""), nodes=2)
    (h,) = [f for f in loopback.findings if f.code == "multinode-host-loopback"]
    assert h.fixes[0].set == {"host": "0.0.0.0"}
    port = check(with_flags(dist_init_addr="10.0.0.5:30000"), nodes=2)
    (f,) = [f for f in port.findings if f.code == "dist-init-port-equals-port"]
    assert f.fixes and f.fixes[0].set == {"port": 31000}
    # the missing address is fixed from a --host that is node 0's own address
    missing = check(with_flags(dist_init_addr="", host="10.0.0.5"), nodes=2)
    (m,) = [f for f in missing.findings if f.code == "dist-init-addr-missing"]
    assert m.fixes[0].set == {"dist_init_addr": "10.0.0.5:20000"}


def test_every_multinode_code_has_a_card_saying_whose_check_it_is() -> None:
    for code in ADDRESSING_CODES | {"nnodes-positive", "pp-stages-nodes", "gpus-per-node"}:
        rule, card = get_rule(code), get_card(code)
        assert rule is not None and card is not None, code
        assert card.solutions
        if rule.mirrors == "launch" and code != "multinode-host-loopback":
            # sglang's own would run in resolution: these are sglaunch's, and say so
            text = card.what
            assert "sglaunch" in text, code


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        ("10.0.0.5:20000", ("10.0.0.5", 20000, None, "")),
        ("[fd00::1]:20000", ("fd00::1", 20000, None, "")),
        ("head:0", ("head", 0, None, "")),
        ("fd00::1:5000", ("fd00::1", None, "bare-ipv6")),
        ("[fd00::1", ("", None, "host")),
    ],
)
def test_address_parsing_follows_sglang(addr: str, expected: tuple[object, ...]) -> None:
    host, port, error, kind = parse_address(addr)
    if expected[2] is None:
        assert (host, port, error, kind) == expected
    else:
        assert (host, port, kind) == expected and error


def test_layout_rule_matches_sglang_rank_ranges_exhaustively() -> None:
    """`layout_maps` against a copy of sglang's own `_calculate_rank_ranges` (engine.py:2045)."""
    for n in range(2, 9):
        for pp in range(1, 9):
            for tp in range(1, 33):
                if (tp * pp) % n:
                    continue
                launched: list[tuple[int, int]] = []
                pp_per_node = max(pp // n, 1)
                nodes_per_pp = max(n // pp, 1)
                tp_per_node = tp // nodes_per_pp
                for rank in range(n):
                    pps = range(
                        pp_per_node * (rank // nodes_per_pp),
                        pp_per_node * (rank // nodes_per_pp + 1),
                    )
                    tps = range(
                        tp_per_node * (rank % nodes_per_pp), tp_per_node * (rank % nodes_per_pp + 1)
                    )
                    launched += [(p, t) for p in pps for t in tps]
                exact = sorted(launched) == [(p, t) for p in range(pp) for t in range(tp)]
                assert layout_maps(tp, pp, n) == exact, (tp, pp, n)


def test_rules_are_bounded_on_huge_input() -> None:
    report = check(
        with_flags(dist_init_addr="[" + "f" * 100_000, nnodes="1000000", tp="1000000"), nodes=2
    )
    assert report.errors
