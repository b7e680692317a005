# SPDX-License-Identifier: GPL-2.0
#
# group.sh - a replica group for the VM tests of tools/vm/tests/replication/:
# etcd on loopback (one member, or three for etcd's own failover) and three
# mdnode replicas, each on an address and rxe device of its own
# (mdr_replica_links), sharing the guest's disk. Source it after
# common.sh, then:
#
#	group_init TAG TTL_S [ETCD_MEMBERS]
#				names, etcd (1 member, the default, or 3),
#				links, the admin key
#	GROUP_SPARE=1		before group_init: a fourth address and rxe
#				device, for a replica 4 outside the set the
#				group starts with (replica add)
#	group_start I [ARGS]	replica I on its data directory (kept across
#				starts: a restart recovers from it)
#	group_stop I [SIGNAL]	TERM (or SIGNAL) replica I (mdr_stop_pid):
#				its exit status
#	group_wait_leader [NOT]	sets leader: a live replica, other than
#				NOT, that logged "serving in epoch" since
#				its start
#	admin I STEPS..., host I STEPS..., state I
#	group_check_logs	no sanitizer report in any replica's log
#	group_etcd_cut I, group_etcd_heal I	replica I cut from etcd (the
#				one-member etcd only)
#	group_etcd_kill M [SIGNAL], group_etcd_member M, group_etcd_leader
#				(three members) member M stopped (KILL), M
#				started again on its data, etcd_leader set to
#				the member etcd's live members follow
#
# One member: clients reach it at 127.0.0.1:23790, and replica I at
# 2379I, a port of its own (group_etcd_cut); its peer port is 23800.
# Three: member M listens for clients at 2383M and for peers at 2384M;
# replica I is given all three, from member I on ($GROUP_ETCD lists them).
# Hosts and admins reach replica I at ${MDR_REPLICA_ADDR[I]}:4791, the
# leader's log connections at :4800.
. "$MDR_TOP/tools/vm/common.sh"
GROUP_CLIENT=$MDR_BIN/mdr-test-node-client

# (group_count_served and group_find_leader spell these two out: they
# start no program)
group_dir() { echo "$MDR_TMP/mdnode-$GROUP_TAG-$1"; }
# The replicas' numbers: the three of the set, and the spare.
group_ids() { seq 1 $((3 + ${GROUP_SPARE:-0})); }
# group_etcd_url I: the endpoints replica I is given (a spare replica
# shares the one member's common port).
group_etcd_url() {
	if [ "$GROUP_ETCD_MEMBERS" -eq 1 ]; then
		if [ "$1" -le 3 ]; then echo "http://127.0.0.1:2379$1"; else echo "$GROUP_ETCD"; fi
		return
	fi
	local k urls=()
	for k in 0 1 2; do urls+=("http://127.0.0.1:2383$(((($1 - 1 + k) % 3) + 1))"); done
	(IFS=,; echo "${urls[*]}")
}

# group_etcd_cut I, group_etcd_heal I: replica I's packets to and from
# etcd dropped on loopback (its own client port), and let through again.
# The exit takes the qdisc away, with any filter still there.
group_etcd_cut() {
	[ "$GROUP_ETCD_MEMBERS" -eq 1 ] || mdr_fail "group_etcd_cut: for the one-member etcd"
	if ! tc qdisc show dev lo | grep -q 'qdisc prio 1:'; then
		tc qdisc add dev lo root handle 1: prio || mdr_fail "cannot add a qdisc to lo"
		mdr_on_exit 'tc qdisc del dev lo root 2>/dev/null'
	fi
	tc filter add dev lo parent 1: protocol ip prio "1$1" u32 \
		match ip dport "2379$1" 0xffff action drop &&
		tc filter add dev lo parent 1: protocol ip prio "2$1" u32 \
			match ip sport "2379$1" 0xffff action drop ||
		mdr_fail "cannot cut replica $1 from etcd"
}
group_etcd_heal() {
	tc filter del dev lo parent 1: prio "1$1" && tc filter del dev lo parent 1: prio "2$1" ||
		mdr_fail "cannot heal replica $1's path to etcd"
}

# group_etcd_member M: member M of the three-member etcd, started on its
# data directory (again: it rejoins the cluster with what it held). Its
# heartbeat and election timeout are twice the one member's: under TCG,
# with three sanitized replicas beside it, a member heard nothing for
# 500 ms now and then, and each such gap would be an election. Both are
# MDR_SLOW times that (common.sh), as the group's TTL in the tests.
group_etcd_member() {
	local m=$1 edir=$MDR_TMP/etcd-$GROUP_TAG
	etcd --name "m$m" --data-dir "$edir/m$m" \
		--listen-client-urls "http://127.0.0.1:2383$m" \
		--advertise-client-urls "http://127.0.0.1:2383$m" \
		--listen-peer-urls "http://127.0.0.1:2384$m" \
		--initial-advertise-peer-urls "http://127.0.0.1:2384$m" \
		--initial-cluster "m1=http://127.0.0.1:23841,m2=http://127.0.0.1:23842,m3=http://127.0.0.1:23843" \
		--initial-cluster-state new --initial-cluster-token "mdr-$GROUP_TAG" \
		--heartbeat-interval $((100 * MDR_SLOW)) --election-timeout $((1000 * MDR_SLOW)) --logger zap --log-level warn \
		>>"$edir/m$m.log" 2>&1 &
	GROUP_ETCD_PIDS[m]=$!
}

group_etcd_kill() {
	local pid=${GROUP_ETCD_PIDS[$1]:-}
	[ -n "$pid" ] || return 0
	GROUP_ETCD_PIDS[$1]=
	kill "-${2:-KILL}" "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# Which member leads, as the members that answer say (etcd's member ids
# are 64-bit: read as JSON by python, whose integers keep them whole).
group_etcd_leader() {
	local url
	etcd_leader=
	url=$(etcdctl --endpoints "$GROUP_ETCD" --dial-timeout 1s --command-timeout 3s \
		endpoint status -w json 2>/dev/null | python3 -c '
import json, sys
try:
    members = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
for e in members:
    s = e["Status"]
    if s["leader"] and s["header"]["member_id"] == s["leader"]:
        print(e["Endpoint"])
        break
') || return 1
	[ -n "$url" ] || return 1
	# shellcheck disable=SC2034 # for the tests that source this file
	etcd_leader=${url##*:2383}
}

group_init() {
	GROUP_TAG=$1
	GROUP_TTL=$2
	GROUP_ETCD_MEMBERS=${3:-1}
	mdr_require_file "$GROUP_CLIENT" "$MDNODE"
	mdr_require_cmd etcd etcdctl

	local edir=$MDR_TMP/etcd-$GROUP_TAG m
	rm -rf "$edir" && mkdir -p "$edir"
	mdr_on_exit "rm -rf '$edir'"
	GROUP_ETCD_PIDS=()
	mdr_on_exit 'for m in "${!GROUP_ETCD_PIDS[@]}"; do group_etcd_kill "$m" TERM; done'
	if [ "$GROUP_ETCD_MEMBERS" -eq 1 ]; then
		GROUP_ETCD=http://127.0.0.1:23790
		# Each replica reaches etcd at a port of its own (group_etcd_cut).
		etcd --name "$GROUP_TAG" --data-dir "$edir/data" \
			--listen-client-urls "$GROUP_ETCD,$(group_etcd_url 1),$(group_etcd_url 2),$(group_etcd_url 3)" \
			--advertise-client-urls "$GROUP_ETCD" --listen-peer-urls http://127.0.0.1:23800 \
			--initial-advertise-peer-urls http://127.0.0.1:23800 \
			--initial-cluster "$GROUP_TAG=http://127.0.0.1:23800" --initial-cluster-state new \
			--heartbeat-interval 50 --election-timeout 500 --logger zap --log-level warn \
			>"$edir/etcd.log" 2>&1 &
		GROUP_ETCD_PIDS[1]=$!
	elif [ "$GROUP_ETCD_MEMBERS" -eq 3 ]; then
		GROUP_ETCD=http://127.0.0.1:23831,http://127.0.0.1:23832,http://127.0.0.1:23833
		for m in 1 2 3; do group_etcd_member "$m"; done
	else
		mdr_fail "group_init: an etcd of 1 or 3 members, not $GROUP_ETCD_MEMBERS"
	fi
	mdr_wait_for "etcdctl --endpoints $GROUP_ETCD endpoint health" 60

	mdr_replica_links $((3 + ${GROUP_SPARE:-0}))
	# Runs after every replica's stop, before the links go: a process
	# still holding a verbs device makes the link's removal wait for it.
	mdr_on_exit 'for f in /proc/[0-9]*/fd/*; do [[ "$(readlink "$f" 2>/dev/null)" == /dev/infiniband/* ]] && { p=${f#/proc/}; p=${p%%/*}; echo "holds $(readlink "$f"): $p $(tr "\0" " " </proc/$p/cmdline)"; }; done | sort -u'
	GROUP_KEY=$MDR_TMP/admin.key
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$GROUP_KEY"
	GROUP_SET=()
	local i
	for i in $(group_ids); do
		[ "$i" -gt 3 ] || GROUP_SET+=(--replica "$i=${MDR_REPLICA_ADDR[i]}:4800")
		rm -rf "$(group_dir "$i")" && mkdir -p "$(group_dir "$i")"
		mdr_on_exit "group_stop $i"
	done
	GROUP_PIDS=()
	mdr_on_exit 'if [ "$rc" -ne 0 ]; then for i in $(group_ids); do echo "--- replica $i:"; grep -v "similar lines dropped\|refused (no replica" "$(group_dir $i)/mdnode.log" | tail -n 40; done; fi'
}

# group_start I [ARGS...]: the log of each start is appended to the last.
group_start() {
	local i=$1 d
	shift
	d=$(group_dir "$i")
	echo "=== start $(date +%s.%N)" >>"$d/mdnode.log"
	"$MDNODE" --listen "${MDR_REPLICA_ADDR[i]}:4791" --data-dir "$d" --device "1=$MDR_VBLK" \
		--admin-key "$GROUP_KEY" --io-hold-ms 2000 --host-auth optional --log-time utc \
		--group 7 --replica-id "$i" --etcd "$(group_etcd_url "$i")" --group-ttl-s "$GROUP_TTL" \
		"${GROUP_SET[@]}" "$@" >>"$d/mdnode.log" 2>&1 &
	GROUP_PIDS[i]=$!
	mdr_wait_listen "${GROUP_PIDS[i]}" "${MDR_REPLICA_ADDR[i]}:4791" "$d/mdnode.log"
}

group_stop() {
	local pid=${GROUP_PIDS[$1]:-}
	[ -n "$pid" ] || return 0
	GROUP_PIDS[$1]=
	mdr_stop_pid "$pid" "replica $1" "${2:-}"
}

# group_count_served I: sets served to how many times replica I, if it
# runs, logged "serving in epoch" since its last start: 0 when it does
# not lead. It starts no program and reads only what the log gained since
# the last call (mdr_follow, from the replica's start on): the failover
# tests poll it while the group elects, when a program started costs tens
# of ms of CPU and bash's read of a whole log of 100 lines 12 ms, under
# TCG.
declare -A _group_served
group_count_served() {
	local i=$1 pid=${GROUP_PIDS[$1]:-} line
	served=0
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	mdr_follow "group-served-$i" "$MDR_TMP/mdnode-$GROUP_TAG-$i/mdnode.log" "$pid"
	[ "$mdr_follow_new" = 0 ] || _group_served[$i]=0
	for line in "${mdr_lines[@]}"; do
		case $line in
		"=== start"*) _group_served[$i]=0 ;;
		*"serving in epoch"*) _group_served[$i]=$((_group_served[$i] + 1)) ;;
		esac
	done
	served=${_group_served[$i]}
}

group_served() { group_count_served "$1"; echo "$served"; }

# group_find_leader [BUT]: sets leader to a replica (other than BUT) that
# serves; fails when none does. Starts no program.
group_find_leader() {
	local i
	for ((i = 1; i <= 3 + ${GROUP_SPARE:-0}; i++)); do
		[ "$i" = "${1:-}" ] && continue
		group_count_served "$i"
		[ "$served" -gt 0 ] && { leader=$i; return 0; }
	done
	return 1
}

group_wait_leader() {
	leader=
	mdr_wait_for "group_find_leader ${1:-}" 60
	group_find_leader "${1:-}"
	mdr_log "replica $leader leads"
}

admin() { local i=$1; shift; "$GROUP_CLIENT" --node "${MDR_REPLICA_ADDR[i]}" --admin-key "$GROUP_KEY" "$@"; }
host() { local i=$1; shift; "$GROUP_CLIENT" --node "${MDR_REPLICA_ADDR[i]}" --tenant 1 --host-id 0x31 "$@"; }
# What a replica's state shows to admins: its volumes, each one's extents
# by device, its devices' use. Leases (open_count) are the leader's alone.
state() { admin "$1" list "${@:2}" devs 2>&1 | sed 's/ open_count=[0-9]*//'; }

# group_expect_acked FILE I [WAIT_S]: every allocation of volume v1 that
# the stream writing FILE saw acknowledged ("alloc: index=N ..." lines of
# the node client) is in replica I's table at its place, read by RDMA as
# a host reads it; with WAIT_S, the read waits up to that long to be
# answered (a new leader's AGAIN). One grep judges them all: a program
# per line would take most of a second each on the debug kernel.
group_expect_acked() {
	local acked=$1 i=$2 last missing rc=0
	local want=$MDR_TMP/acked-want.$i got=$MDR_TMP/acked-got.$i
	grep '^alloc: index=' "$acked" | sed 's/^alloc: /read: /' >"$want"
	[ -s "$want" ] || mdr_fail "no acknowledged allocation in $acked"
	last=$(tail -n 1 "$want" | sed 's/^read: index=\([0-9]*\) .*/\1/')
	[ -z "${3:-}" ] ||
		mdr_wait_for "host $i open:v1 read:v1:0:$((last + 1)) >/dev/null" "$3"
	mdr_expect_rc 0 host "$i" open:v1 "read:v1:0:$((last + 1))"
	printf '%s\n' "$MDR_OUT" >"$got"
	# grep -v: 0 when a line is missing, 1 when none is, 2 when it failed
	missing=$(grep -vxF -f "$got" "$want") || rc=$?
	[ "$rc" -le 1 ] || mdr_fail "grep of $want against $got failed ($rc)"
	[ -z "$missing" ] ||
		mdr_fail "acknowledged, not on replica $i: $(echo "$missing" | head -n 3)"
}

group_check_logs() {
	local i
	for i in $(group_ids); do
		! grep -q 'ERROR: AddressSanitizer\|runtime error' "$(group_dir "$i")/mdnode.log" ||
			mdr_fail "sanitizer report in replica $i's log"
	done
}
