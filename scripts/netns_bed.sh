#!/usr/bin/env bash
# A test bed of 2 to 9 "hosts" on one Linux machine, for running grpo's multi-process jobs over a real network
# stack instead of shared memory: each host is a network namespace with its own interface, joined to the
# others by a veth pair into one bridge, its link rate-limited with tc's tbf qdisc (and delayed with netem
# where the kernel has it). Open MPI runs between them over TCP only (no shared memory across hosts);
# mpirun itself stays in the machine's own namespace and reaches the hosts through the bridge.
#
# Usage (as root; needs iproute2 and Open MPI):
#   scripts/netns_bed.sh up [--hosts N] [--rate 10gbit] [--delay 0.1ms]   set the bed up (N = 2 by default)
#   scripts/netns_bed.sh mpirun -np 2 build/grpo train ...                 mpirun with one rank per host
#   scripts/netns_bed.sh cut HOST | restore HOST                           take host HOST's link down / up
#   scripts/netns_bed.sh status                                            the hosts, addresses and qdiscs
#   scripts/netns_bed.sh down                                              remove every namespace and link
# Several beds can coexist: GRPO_NETNS_NAME (default "grpo", at most 8 characters) names one, and
# GRPO_NETNS_SUBNET (default 198.18.0: RFC 2544's range for test beds, no real network's) is its /24. Host i (1-based) is namespace <name>-h<i> at <subnet>.<10+i>;
# the bridge <name>-br is <subnet>.1.
set -Eeuo pipefail  # -E: the ERR trap of `up` also fires inside its functions
name="${GRPO_NETNS_NAME:-grpo}"
subnet="${GRPO_NETNS_SUBNET:-198.18.0}"
state="/run/netns-bed-${name}.env"
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

die() { echo "netns_bed: $*" >&2; exit 1; }
((${#name} <= 8)) || die "GRPO_NETNS_NAME '$name' is longer than 8 characters (interface names are at most 15)"
host_ns() { echo "${name}-h$1"; }
host_ip() { echo "${subnet}.$((10 + $1))"; }
host_link() { echo "${name}-v$1"; }  # the host's veth end in the machine's namespace
hosts() { [[ -f "$state" ]] || die "no bed '$name' is up (run: $0 up)"; sed -n 's/^hosts=//p' "$state"; }

# Applies the rate (and the delay, where netem exists) to one interface's egress, run by "$@" (a namespace
# prefix or nothing). Both ends of each veth are shaped, so each direction of a link has the rate.
shape() {
  local dev="$1" rate="$2" delay="$3"; shift 3
  # tbf's burst must hold at least rate / HZ bytes: 8 MB covers 10 Gbit/s from HZ = 160 (Debian's kernels: 250).
  if [[ -n "$delay" ]] && "$@" tc qdisc add dev "$dev" root handle 1: netem delay "$delay" 2>/dev/null; then
    "$@" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$rate" burst 8mb latency 100ms
  else
    "$@" tc qdisc add dev "$dev" root tbf rate "$rate" burst 8mb latency 100ms
  fi
}

up() {
  local n=2 rate=10gbit delay=""
  while (($#)); do
    case "$1" in
      --hosts) n="$2"; shift 2 ;;
      --rate) rate="$2"; shift 2 ;;
      --delay) delay="$2"; shift 2 ;;
      *) die "unknown option '$1' (expected --hosts, --rate or --delay)" ;;
    esac
  done
  [[ "$n" =~ ^[2-9]$ ]] || die "--hosts $n: expected 2 to 9"
  command -v ip >/dev/null || die "ip (iproute2) is not installed"
  command -v tc >/dev/null || die "tc (iproute2) is not installed"
  [[ ! -f "$state" ]] || die "bed '$name' is already up (run: $0 down)"
  ip netns add "$(host_ns 0)-probe" 2>/dev/null || die "cannot create network namespaces here (root and CAP_SYS_ADMIN needed)"
  ip netns del "$(host_ns 0)-probe"
  trap 'down >/dev/null 2>&1 || true' ERR
  echo "hosts=$n" >"$state"
  ip link add "${name}-br" type bridge
  ip addr add "${subnet}.1/24" dev "${name}-br"
  ip link set "${name}-br" up
  local delay_note="no delay asked"
  for ((i = 1; i <= n; ++i)); do
    local ns link
    ns="$(host_ns "$i")" link="$(host_link "$i")"
    ip netns add "$ns"
    ip link add "$link" type veth peer name eth0 netns "$ns"
    ip link set "$link" master "${name}-br" up
    ip netns exec "$ns" ip addr add "$(host_ip "$i")/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    shape "$link" "$rate" "$delay"
    shape eth0 "$rate" "$delay" ip netns exec "$ns"
  done
  if [[ -n "$delay" ]]; then
    if tc qdisc show dev "$(host_link 1)" | grep -q netem; then delay_note="delay $delay per direction (netem)"
    else delay_note="delay $delay NOT applied: this kernel has no netem qdisc (sch_netem)"; fi
  fi
  echo "delay=$delay_note" >>"$state"
  trap - ERR
  echo "netns_bed: $n hosts up, $rate per link, $delay_note" >&2
  status
}

down() {
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${name}-h[0-9]+$" || true); do ip netns del "$ns"; done
  ip link del "${name}-br" 2>/dev/null || true
  rm -f "$state" "/run/netns-bed-${name}.hosts"
}

status() {
  local n
  n="$(hosts)"
  for ((i = 1; i <= n; ++i)); do
    printf '%s %s %s\n' "$(host_ns "$i")" "$(host_ip "$i")" \
      "$(ip -o link show "$(host_link "$i")" | grep -o 'state [A-Z]*')"
    ip netns exec "$(host_ns "$i")" tc qdisc show dev eth0 | sed 's/^/  /'
  done
  sed -n 's/^delay=/  /p' "$state"
}

# mpirun's remote-shell agent: called as `agent [options] HOST COMMAND...` for each host's daemon (orted),
# it runs COMMAND in the host's namespace with its own host name (UTS namespace). It stays attached, as ssh
# does, and plays ssh's part when the network fails: once the host's link has been down for 1 s (as ssh with
# ServerAliveInterval and ServerAliveCountMax) it ends the daemon and exits 255, and mpirun, having lost a
# daemon, ends the job. (The remote shell here is a local process, which no cut link would stop.) The loss
# must be declared before the ranks' own timeout (trainer.comm_timeout_s): once a rank has failed, Open MPI
# 4.1's mpirun is aborting the job and waits for every daemon's answer, a lost one's included.
agent() {
  while [[ "${1:-}" == -* ]]; do shift; done
  local ip="$1"; shift
  local n i host=""
  n="$(hosts)"
  for ((i = 1; i <= n; ++i)); do [[ "$(host_ip "$i")" == "$ip" ]] && host="$i"; done
  [[ -n "$host" ]] || die "agent: $ip is not a host of bed '$name'"
  # a session of its own (setsid; a background job of this script is no group leader, so setsid does not
  # fork and $! leads the session), so that a lost host's daemon and its ranks end together
  setsid ip netns exec "$(host_ns "$host")" unshare --uts sh -c "hostname $(host_ns "$host"); $*" &
  local daemon=$! down=0
  while kill -0 "$daemon" 2>/dev/null; do
    if ip link show "$(host_link "$host")" | grep -q 'state UP'; then down=0; else down=$((down + 1)); fi
    if ((down >= 5)); then
      echo "netns_bed: host $host ($ip): link down for 1 s, connection lost" >&2
      pkill -KILL -s "$daemon" 2>/dev/null || true
      exit 255
    fi
    sleep 0.2
  done
  wait "$daemon"
}

run_mpirun() {
  local n hostfile
  n="$(hosts)"
  hostfile="/run/netns-bed-${name}.hosts"
  for ((i = 1; i <= n; ++i)); do echo "$(host_ip "$i") slots=1"; done >"$hostfile"
  # TCP between the hosts (shared memory would bypass the links); the daemons' own channel on the bridge too.
  # No binding: each host's daemon would bind its rank to "its" first core, the same core on every host.
  exec env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --hostfile "$hostfile" \
    --mca plm_rsh_agent "$self agent" --mca plm_rsh_no_tree_spawn 1 \
    --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "${subnet}.0/24" \
    --mca oob_tcp_if_include "${subnet}.0/24" --mca orte_leave_session_attached 1 -x PATH "$@"
}

link_state() {
  local i="$1" to="$2"
  [[ "$i" =~ ^[0-9]+$ ]] && ((i >= 1 && i <= $(hosts))) || die "host '$i': expected 1 to $(hosts)"
  ip link set "$(host_link "$i")" "$to"
}

cmd="${1:-}"
shift || true
case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  status) status ;;
  agent) agent "$@" ;;
  mpirun) run_mpirun "$@" ;;
  cut) link_state "${1:-}" down ;;
  restore) link_state "${1:-}" up ;;
  *) die "usage: $0 up|down|status|mpirun|cut|restore|agent (see the header of this script)" ;;
esac
