#!/usr/bin/env bash
# A real two-node Slurm cluster on this one machine, for the Slurm tests (as root).
#
#   scripts/slurm/cluster.sh install   Debian's slurm-wlm and munge (apt; a no-op when present)
#   scripts/slurm/cluster.sh up        install, then start munged, slurmctld and one slurmd per node
#   scripts/slurm/cluster.sh down      cancel every job, stop everything, remove what `up` made
#   scripts/slurm/cluster.sh status    exit 0 when both nodes answer, else 1
#   scripts/slurm/cluster.sh env       the SLURM_CONF line clients (sbatch, squeue) need
#   scripts/slurm/cluster.sh around CMD...   CMD with the cluster up, stopped after (make test)
#
# Each node is a slurmd in its own network namespace (sgl-n1, sgl-n2) joined to the host by
# veth pairs on a bridge (sglbr0, 10.77.0.0/24): each node has its own ports, so a server on
# 0.0.0.0 on one node is not the other's, as on a real cluster, and no traffic leaves the
# namespaces made here. slurmd is entered with `nsenter --net` only, so it keeps the host's
# mounts (cgroup, /dev, the checkout). slurmctld runs on the host on the bridge address.
# Every node declares 8 GPUs over character devices made here, so `--gpus-per-node=8` is
# accepted as on a real cluster (SlurmdParameters=config_overrides: slurmd reports what the
# configuration declares, not what the machine has). The configuration lives in the state
# directory, not /etc/slurm: clients find it through SLURM_CONF.
set -euo pipefail

STATE=${SGLAUNCH_SLURM_STATE:-/run/sglaunch-slurm}
CONF=$STATE/etc/slurm.conf
NODES=(sgl-n1 sgl-n2)
NET=10.77.0
BRIDGE=sglbr0
CTLD_PORT=16817
SLURMD_PORT=16818
MARK="# sglaunch-slurm"
UP_TIMEOUT=${SGLAUNCH_SLURM_UP_TIMEOUT:-60}

say() { echo "cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }

need_root() {
    [ "$(id -u)" = 0 ] || die "$1 needs root (network namespaces, daemons): run \`sudo make slurm-up\`"
}

have_slurm() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null &&
        command -v munged >/dev/null && command -v curl >/dev/null
}

cmd_install() {
    have_slurm && return 0
    need_root install
    local pkgs=(slurm-wlm munge curl)
    # The package lists may be missing on a fresh machine: update once, only when needed.
    if ! timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${pkgs[@]}" >/dev/null; then
        timeout 300 apt-get update -q >/dev/null
        timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${pkgs[@]}" >/dev/null
    fi
    have_slurm || die "slurm-wlm/munge did not install"
}

node_ip() { echo "$NET.$((11 + $1))"; }

write_config() {
    mkdir -p "$STATE/etc" "$STATE/dev" "$STATE/ctld" "$STATE/log"
    local i nodelist=""
    for i in "${!NODES[@]}"; do
        echo "NodeName=${NODES[$i]} NodeAddr=$(node_ip "$i") NodeHostname=${NODES[$i]}" \
            "CPUs=64 RealMemory=64000 Gres=gpu:8 State=UNKNOWN"
        nodelist+="${nodelist:+,}${NODES[$i]}"
    done >"$STATE/etc/nodes.conf"
    cat >"$CONF" <<EOF
ClusterName=sglaunch
SlurmctldHost=$(hostname -s)($NET.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge.socket
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
KillWait=5
MessageTimeout=10
SlurmdTimeout=60
InactiveLimit=0
MinJobAge=30
include $STATE/etc/nodes.conf
PartitionName=gpu Nodes=$nodelist Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
EOF
    : >"$STATE/etc/gres.conf"
    for i in "${!NODES[@]}"; do
        echo "NodeName=${NODES[$i]} Name=gpu File=$STATE/dev/${NODES[$i]}-gpu[0-7]" >>"$STATE/etc/gres.conf"
        for g in 0 1 2 3 4 5 6 7; do
            # the same device numbers as /dev/null: slurmd only needs a character device
            [ -c "$STATE/dev/${NODES[$i]}-gpu$g" ] || mknod -m 666 "$STATE/dev/${NODES[$i]}-gpu$g" c 1 3
        done
    done
    # cgroup.conf keeps slurmd from probing cgroup plugins it will not use
    echo "CgroupPlugin=autodetect" >"$STATE/etc/cgroup.conf"
}

start_munge() {
    [ -s "$STATE/munge.key" ] || {
        (umask 077 && head -c 1024 /dev/urandom >"$STATE/munge.key")
    }
    chmod 0400 "$STATE/munge.key"
    timeout 30 munged --force --socket="$STATE/munge.socket" --key-file="$STATE/munge.key" \
        --pid-file="$STATE/munged.pid" --log-file="$STATE/log/munged.log" --seed-file="$STATE/munged.seed"
}

net_up() {
    ip link add "$BRIDGE" type bridge
    ip addr add "$NET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    local i n
    for i in "${!NODES[@]}"; do
        n=${NODES[$i]}
        ip netns add "$n"
        ip link add "$n-h" type veth peer name "$n-n"
        ip link set "$n-n" netns "$n"
        ip link set "$n-h" master "$BRIDGE"
        ip link set "$n-h" up
        ip -n "$n" addr add "$(node_ip "$i")/24" dev "$n-n"
        ip -n "$n" link set "$n-n" up
        ip -n "$n" link set lo up
    done
    # node names resolve on every node (the mount namespace, hence /etc/hosts, is shared);
    # rewritten in place because /etc/hosts is often a bind mount that cannot be renamed over
    hosts_clean
    {
        echo "$NET.1 sgl-ctld $MARK"
        for i in "${!NODES[@]}"; do echo "$(node_ip "$i") ${NODES[$i]} $MARK"; done
    } >>/etc/hosts
}

hosts_clean() {
    if grep -q "$MARK" /etc/hosts 2>/dev/null; then
        local kept
        kept=$(grep -v "$MARK" /etc/hosts || true)
        printf '%s\n' "$kept" >/etc/hosts
    fi
}

cmd_status() {
    [ -f "$CONF" ] || return 1
    local out
    out=$(SLURM_CONF=$CONF timeout 10 sinfo -h -N -o "%N %t" 2>/dev/null) || return 1
    local n
    for n in "${NODES[@]}"; do
        echo "$out" | grep -Eq "^$n (idle|mix|alloc|comp)" || return 1
    done
    return 0
}

cmd_up() {
    need_root up
    cmd_install
    if cmd_status; then
        say "already up (SLURM_CONF=$CONF)"
        return 0
    fi
    # whatever a crashed run left (half a network, a dead daemon) goes first
    cmd_down >/dev/null 2>&1 || true
    local t0=$SECONDS
    mkdir -p "$STATE"
    chmod 0755 "$STATE"
    write_config
    start_munge
    net_up
    # each daemon forks and its first process exits: the timeouts bound only the start
    SLURM_CONF=$CONF timeout 30 slurmctld -i
    local n
    for n in "${NODES[@]}"; do
        mkdir -p "$STATE/spool/$n"
        SLURM_CONF=$CONF timeout 30 nsenter --net="/run/netns/$n" slurmd -N "$n"
    done
    until cmd_status; do
        if ((SECONDS - t0 > UP_TIMEOUT)); then
            say "the nodes did not come up within ${UP_TIMEOUT}s; logs in $STATE/log:"
            tail -n 5 "$STATE"/log/*.log >&2 || true
            cmd_down >/dev/null 2>&1 || true
            exit 1
        fi
        sleep 0.5
    done
    say "up in $((SECONDS - t0))s: ${NODES[*]} with 8 GPUs each; export SLURM_CONF=$CONF"
}

kill_pidfile() {
    local f=$1 pid
    [ -s "$f" ] || return 0
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || return 0
    # a second of grace: the state they would save is removed with the state directory
    for _ in $(seq 10); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

cmd_down() {
    need_root down
    local n
    if [ -f "$CONF" ] && command -v scancel >/dev/null; then
        SLURM_CONF=$CONF timeout 10 scancel --full --quiet --user=root 2>/dev/null || true
        SLURM_CONF=$CONF timeout 10 scancel --full --quiet 2>/dev/null || true
    fi
    for n in "${NODES[@]}"; do kill_pidfile "$STATE/slurmd-$n.pid"; done
    kill_pidfile "$STATE/slurmctld.pid"
    # whatever a job left running in a node's namespace (no process outlives the cluster)
    for n in "${NODES[@]}"; do
        if [ -e "/run/netns/$n" ]; then
            ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        fi
    done
    kill_pidfile "$STATE/munged.pid"
    for n in "${NODES[@]}"; do
        ip netns del "$n" 2>/dev/null || true
        ip link del "$n-h" 2>/dev/null || true
    done
    ip link del "$BRIDGE" 2>/dev/null || true
    hosts_clean
    rm -rf "$STATE"
    say "down"
}

cmd_env() { echo "export SLURM_CONF=$CONF"; }

# `around CMD...`: run CMD with the cluster up. As root it starts the cluster unless it is
# running, and stops what it started when CMD ends, however it ends; otherwise it says in one
# line how to start it (the Slurm tests then fail with the same line) and runs CMD anyway.
cmd_around() {
    if cmd_status; then
        "$@"
        return
    fi
    if [ "$(id -u)" != 0 ]; then
        say "not root, so the Slurm tests (tests/process/slurm) will fail: run \`sudo make slurm-up\` first (\`sudo make slurm-down\` after)"
        "$@"
        return
    fi
    trap 'cmd_down >/dev/null 2>&1 || true' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # a cluster that does not start fails the Slurm tests (with NOT_UP), not the whole tier
    (cmd_up) || say "the Slurm test cluster did not start (above); the Slurm tests will fail"
    local rc=0
    "$@" || rc=$?
    return "$rc"
}

case "${1:-}" in
    install) cmd_install ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    around) shift; cmd_around "$@" ;;
    *) die "usage: $0 install|up|down|status|env|around CMD..." ;;
esac
