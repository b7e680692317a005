# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# common.sh - helpers for the VM tests under tools/vm/tests/. Source it:
#   . "$MDR_TOP/tools/vm/common.sh"
#
# Conventions (liburing's): exit 0 pass, 1 fail, 77 skip. Register every
# undo step with mdr_on_exit as soon as the thing exists, so a test cleans
# up even when it fails halfway.

: "${MDR_TOP:?not in the test guest (run through tools/vm/run)}"
MDR_BIN=${MDR_BIN:-$MDR_TOP/build/userspace-asan/bin}
MDR_KO=${MDR_KO:-$MDR_TOP/mdroute.ko}
MDCTL=${MDCTL:-$MDR_BIN/mdctl}
MDNODE=${MDNODE:-$MDR_BIN/mdnode}
MDR_NODE_PORT=${MDR_NODE_PORT:-4791}
# The newest wire version the kernel, mdnode and mdctl of this tree speak.
# shellcheck disable=SC2034 # for the tests that source this file
MDR_WIRE_VERSION=$(sed -n 's/^#define MDR_WIRE_VERSION[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p' \
	"$MDR_TOP/uapi/linux/mdroute_wire.h")

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

mdr_skip() { echo "SKIP: $*"; exit 77; }
mdr_fail() { echo "FAIL: $*" >&2; exit 1; }
mdr_log() { echo "$(basename "$0"): $*"; }

_mdr_undo=()
# The index has a name of its own: a command's loop over i (eval runs it
# in this function's scope) would otherwise move it, and commands would be
# skipped.
_mdr_run_undo() {
	local rc=$? _mdr_k
	for ((_mdr_k = ${#_mdr_undo[@]} - 1; _mdr_k >= 0; _mdr_k--)); do
		eval "${_mdr_undo[_mdr_k]}" || true
	done
	return $rc
}
trap _mdr_run_undo EXIT

# MDR_SLOW: how many times the waits of the tests (mdr_wait_for,
# mdr_wait_listen) and the time constants of the system they start (etcd
# TTLs, host leases, where a test sizes them by it) are stretched in this
# guest: 8 on the debug kernel, 1 on others. Lockdep, KASAN and kmemleak
# make IO in the guest two to seven times slower (Documentation/testing.md)
# and a program's life six to nine times: idle, on the debug kernel against
# Debian's (2026-12-07, one build), /bin/true took 800 ms against 127, the
# sanitized node client's start 3.5 s against 0.5, a sanitized mdnode's
# exec to its listener 14 s against 1.6, its kill -9 to the listener's end
# 2.8 s against 0.5; beside fio a replica took 61 s to its first log line.
# Leases sized for Debian's kernel lapsed there for the guest's slowness
# alone. What a test proves does not change; only how long its system may
# take does.
read -r _mdr_release </proc/sys/kernel/osrelease
case $_mdr_release in
*-mdr-debug) MDR_SLOW=8 ;;
*) MDR_SLOW=1 ;;
esac

# mdr_on_exit CMD...: run CMD (as one shell line) when the test exits,
# after the commands registered later.
mdr_on_exit() { _mdr_undo+=("$*"); }

mdr_require_cmd() {
	local c
	for c; do command -v "$c" >/dev/null || mdr_skip "$c not installed"; done
}

mdr_require_file() {
	local f
	for f; do [ -e "$f" ] || mdr_skip "$f missing (run make)"; done
}

# mdr_expect_eq WHAT GOT WANT
mdr_expect_eq() {
	[ "$2" = "$3" ] || mdr_fail "$1: got '$2', want '$3'"
}

# mdr_diff A B: the first lines of a diff of the texts A and B, for a
# failure's message. Through files: the guest has no /dev/fd, so <(...)
# would leave the message empty.
mdr_diff() {
	printf '%s\n' "$1" >"$MDR_TMP/mdr-diff.a"
	printf '%s\n' "$2" >"$MDR_TMP/mdr-diff.b"
	diff "$MDR_TMP/mdr-diff.a" "$MDR_TMP/mdr-diff.b" | head -n 20
}

# mdr_expect_rc WANT CMD...: run CMD, fail unless it exits WANT. Its
# output is kept in $MDR_OUT for further checks.
mdr_expect_rc() {
	local want=$1 rc
	shift
	MDR_OUT=$("$@" 2>&1) && rc=0 || rc=$?
	[ "$rc" -eq "$want" ] ||
		mdr_fail "'$*' exited $rc, want $want; output: $MDR_OUT"
}

# mdr_nap SECONDS: sleep without starting a program. Under TCG each
# program started costs tens of ms of the guest's CPU (a poll that started
# four every 20 ms kept 0.82 of a CPU busy in an idle guest, 2026-12-06):
# a poll that forks takes the CPU from what it waits for. read -t on a
# FIFO that nobody writes (opened read-write, so that it never ends)
# times out instead; the FIFO is made once per shell.
mdr_nap() {
	if [ "${_mdr_nap_pid:-}" != "$BASHPID" ]; then
		local f=$MDR_TMP/.mdr-nap.$BASHPID
		rm -f "$f"
		mkfifo "$f" || mdr_fail "mdr_nap: no FIFO at $f"
		exec {_mdr_nap_fd}<>"$f"
		rm -f "$f"
		_mdr_nap_pid=$BASHPID
	fi
	read -r -t "$1" -u "$_mdr_nap_fd" _ || true
}

# mdr_now_ms: sets now_ms to the guest's clock in ms, without a program.
mdr_now_ms() {
	local t=${EPOCHREALTIME//[!0-9]/}
	# shellcheck disable=SC2034 # for the scripts that source this file
	now_ms=$((t / 1000))
}

# mdr_follow KEY FILE [ID]: sets mdr_lines to the lines FILE gained since
# the last call with KEY: all its lines at the first call, and again when
# ID (a writer's pid: its restart) changed, which sets mdr_follow_new to 1
# (else 0). It starts no program (mdr_nap says why): FILE stays open on an
# fd of this shell, and a line not ended yet waits for its end. A subshell
# opens FILE anew (an fd shared with it would share its offset too).
# mdr_unfollow KEY closes it.
declare -A _mdr_follow_id _mdr_follow_fd _mdr_follow_part
mdr_follow() {
	local key=$1 id="$BASHPID ${3:-} $2" line
	mdr_lines=()
	mdr_follow_new=0
	if [ "${_mdr_follow_id[$key]:-}" != "$id" ]; then
		mdr_unfollow "$key"
		exec {_mdr_follow_fd[$key]}<"$2" || mdr_fail "cannot read $2"
		_mdr_follow_id[$key]=$id
		_mdr_follow_part[$key]=
		mdr_follow_new=1
	fi
	while IFS= read -r -u "${_mdr_follow_fd[$key]}" line; do
		mdr_lines+=("${_mdr_follow_part[$key]}$line")
		_mdr_follow_part[$key]=
	done
	_mdr_follow_part[$key]+=$line
}

mdr_unfollow() {
	local id=${_mdr_follow_id[$1]:-} fd=${_mdr_follow_fd[$1]:-}
	# only this shell's: a parent's fd is the parent's to close
	[ -n "$id" ] && [ "${id%% *}" = "$BASHPID" ] && exec {fd}<&-
	unset "_mdr_follow_id[$1]" "_mdr_follow_fd[$1]" "_mdr_follow_part[$1]"
}

# mdr_wait_for PATH_OR_CMD [SECONDS]: wait until a path exists, or until
# a command (if it is not a path) succeeds. SECONDS (default 10) is how
# long to give it before the test fails, times MDR_SLOW. Most tests prove
# their bounds by measuring; one that proves a bound by a wait
# (replication/010's goes_on) has it stretched on the debug kernel too.
mdr_wait_for() {
	# by the clock: under TCG one check can take far longer than 0.1 s
	local what=$1 secs=$((${2:-10} * MDR_SLOW))
	local end=$((SECONDS + secs))
	while :; do
		if [[ $what == /* ]]; then
			[ -e "$what" ] && return 0
		else
			eval "$what" >/dev/null 2>&1 && return 0
		fi
		[ "$SECONDS" -lt "$end" ] || break
		mdr_nap 0.1
	done
	mdr_fail "timed out after ${secs}s waiting for $what"
}

mdr_module_loaded() { [ -d /sys/module/mdroute ]; }

# mdr_module_load [PARAM=VALUE...]: insmod the built module; unloaded at exit.
mdr_module_load() {
	mdr_require_file "$MDR_KO"
	mdr_module_loaded && mdr_fail "mdroute is already loaded"
	modprobe -a ib_core rdma_cm libcrc32c >/dev/null 2>&1 || true
	insmod "$MDR_KO" "$@" || mdr_fail "insmod $MDR_KO failed"
	# where the code lives, for the vCPU registers tools/vm/run takes from
	# a guest wedged past its timeout
	awk '$3 ~ /^(_text|_stext)$/ { printf "mdr-test: %s %s\n", $3, $1 }' \
		/proc/kallsyms >/dev/kmsg 2>/dev/null || true
	awk '$1 ~ /^(mdroute|rdma_rxe|ib_core|rdma_cm|ib_uverbs)$/ {
		printf "mdr-test: module %s at %s\n", $1, $6 }' /proc/modules \
		>/dev/kmsg 2>/dev/null || true
	mdr_on_exit 'mdr_module_loaded && rmmod mdroute'
	mdr_wait_for /dev/mdroute-control 5
}

# Kernel log checks. mdr_kmsg_mark prints a marker to the kernel log and
# remembers it; mdr_assert_no_splat fails if a splat shows after it.
mdr_kmsg_mark() {
	_mdr_mark="mdr-test: mark $$-$RANDOM ${1:-}"
	echo "$_mdr_mark" >/dev/kmsg
}

mdr_assert_no_splat() {
	local since=${1:-${_mdr_mark:-}} s
	if [ -n "$since" ]; then
		s=$(dmesg | awk -v m="$since" 'f; index($0, m) { f = 1 }' |
			"$MDR_TOP/tools/vm/splat")
	else
		s=$(dmesg | "$MDR_TOP/tools/vm/splat")
	fi
	[ -z "$s" ] || mdr_fail "kernel log shows a splat: $s"
}

# mdnode: the storage-node responder, on the storage-node end of the veth.
# mdr_mdnode_start DATA_DIR [mdnode options...]: started in the background,
# stopped at exit; waits until its rdma_cm listener is up. The guest's disks
# are QEMU's and complete an IO within a second unless a test queues deep:
# io-hold-ms is 2000 here, not the 20 s of mdnode's default, so that a
# lapsed lease or a restart does not hold moves up for 25 s in every test. A test that queues deep gives its own (the last one counts).
# Hosts need not authenticate (--host-auth optional) unless the test says
# --host-auth itself: the tests of other things attach without a key and
# run their test clients unauthenticated; the auth/ tests require it.
mdr_mdnode_start() {
	local dir=$1 policy=(--host-auth optional)
	shift
	mdr_require_file "$MDNODE"
	mkdir -p "$dir"
	case " $* " in *" --host-auth "* | *" --host-auth="*) policy=() ;; esac
	"$MDNODE" --listen "$MDR_NODE_ADDR:$MDR_NODE_PORT" --data-dir "$dir" \
		--io-hold-ms 2000 "${policy[@]}" "$@" >"$dir/mdnode.log" 2>&1 &
	MDR_MDNODE_PID=$!
	mdr_on_exit "mdr_mdnode_stop"
	mdr_mdnode_wait_listen "$dir/mdnode.log"
	# mdnode takes its start (the Node's clock, main.cc) before it
	# listens: the restart window (mdr_mdnode_wait_old_leases) ends no
	# later than now plus its length. A time taken before the exec ends
	# too early by mdnode's own start-up, and an ALLOC then got AGAIN
	# (mdnode/007, 2026-12-04: 193 ms of the window were left).
	MDR_MDNODE_STARTED_MS=$(($(date +%s%N) / 1000000))
}

# mdr_wait_listen PID PATTERN LOG: until an rdma_cm listener whose line of
# `rdma resource show cm_id` matches PATTERN (an extended regex) is up.
# A PID that ended fails at once, with the tail of its LOG; one still
# starting is given 60 s (times MDR_SLOW), since on the debug kernel with
# the host's cores loaded mdnode's start (sanitized binary, journal
# recovery) took over 15 s once, and 73 s in failover/001 (2026-12-07:
# 61 s from the exec to its first log line, with fio, a host and two
# replicas beside it).
mdr_wait_listen() {
	local pid=$1 pattern=$2 log=$3 limit=$((60 * MDR_SLOW))
	local end=$((SECONDS + limit))
	until rdma resource show cm_id 2>/dev/null | grep -q -E "LISTEN.*$pattern"; do
		kill -0 "$pid" 2>/dev/null ||
			mdr_fail "$(basename "$log" .log) ended before it listened on $pattern: $(tail -n 5 "$log")"
		[ "$SECONDS" -lt "$end" ] ||
			mdr_fail "nothing listened on $pattern within $limit s: $(tail -n 5 "$log")"
		sleep 0.1
	done
}

# mdr_mdnode_wait_listen LOG: until mdnode's rdma_cm listener is up on the
# storage-node address.
mdr_mdnode_wait_listen() {
	mdr_wait_listen "$MDR_MDNODE_PID" "$MDR_NODE_ADDR:$MDR_NODE_PORT" "$1"
}

# mdr_replica_links N: N storage-node addresses more, for the replicas of a
# group, each on a veth link and an rxe device of its own:
# MDR_REPLICA_ADDR[1..N] = 192.0.2.11 ... Inside one guest rdma_cm uses the
# rxe device that owns the destination address, so `ip link set mdrrI
# down` cuts the RDMA paths to replica I's address and to no other.
# Removed at exit.
mdr_replica_links() {
	local i a
	MDR_REPLICA_ADDR=()
	for ((i = 1; i <= $1; i++)); do
		a=192.0.2.$((10 + i))
		ip link add "mdrr$i" type veth peer name "mdrr${i}p" || mdr_fail "cannot add link mdrr$i"
		mdr_on_exit "ip link del mdrr$i 2>/dev/null"
		{ ip addr add "$a/32" dev "mdrr$i" && ip link set "mdrr${i}p" up &&
			ip link set "mdrr$i" up; } || mdr_fail "cannot bring up mdrr$i with $a"
		rdma link add "rxr$i" type rxe netdev "mdrr$i" || mdr_fail "cannot add rxe device rxr$i"
		mdr_on_exit "rdma link delete rxr$i 2>/dev/null"
		MDR_REPLICA_ADDR[i]=$a
	done
}

# mdr_replica_link_cut I, mdr_replica_link_heal I: replica I's link down,
# and up again with its rxe device made anew. Once a connect to an address
# was tried while its link was down, rxe reaches that address no more after
# the link is up, for any process, until its device is made anew (seen on
# 6.1, with rping as well). An mdnode listening there loses its device
# (DEVICE_REMOVAL), stops, and has to be started again.
mdr_replica_link_cut() {
	ip link set "mdrr$1" down || mdr_fail "cannot take mdrr$1 down"
}
mdr_replica_link_heal() {
	ip link set "mdrr$1" up &&
		rdma link delete "rxr$1" &&
		rdma link add "rxr$1" type rxe netdev "mdrr$1" || mdr_fail "cannot heal mdrr$1"
}

# mdr_mdnode_wait_old_leases LEASE_MS: after a restart, mdnode allocates no
# extent of a volume from before it (ALLOC answers AGAIN) until the leases
# the old process may have granted have run out: LEASE_MS plus a 500 ms
# margin from its start. Wait that out before an allocation that must pass.
mdr_mdnode_wait_old_leases() {
	local left=$((MDR_MDNODE_STARTED_MS + $1 + 500 - $(date +%s%N) / 1000000))
	[ "$left" -le 0 ] || sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
}

# mdr_stop_pid PID WHAT [SIGNAL]: TERM (or SIGNAL) a child and wait for it
# up to 20 s; one still running then is killed, said of WHAT, so that a
# hung process fails its own test and not every later one. Its exit status.
mdr_stop_pid() {
	local pid=$1 i
	kill "-${3:-TERM}" "$pid" 2>/dev/null
	# No program started (mdr_nap): a failover's kill is timed from here.
	# The shell may note the signal's end of the job while it naps: that
	# note goes where wait's would.
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		mdr_nap 0.1 2>/dev/null
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "$2 did not stop in 20 s: killing it" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
}

# mdr_mdnode_stop [SIGNAL]: stop it (TERM by default, KILL to crash it).
mdr_mdnode_stop() {
	local pid=${MDR_MDNODE_PID:-}
	[ -n "$pid" ] || return 0
	MDR_MDNODE_PID=
	mdr_stop_pid "$pid" "mdnode $pid" "${1:-TERM}"
}
