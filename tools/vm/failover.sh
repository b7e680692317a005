# SPDX-License-Identifier: GPL-2.0
#
# failover.sh - a host of a replica group, for the VM tests of
# tools/vm/tests/failover/: the group of group.sh (three replicas, etcd),
# the host registered there with a key, the module loaded with the
# replicas' device bound, and volumes attached with the group's replicas
# so that the host follows the leader. Source it, then:
#
#	failover_init TAG TTL_S LEASE_MS	the group, a leader, the host
#						(FAILOVER_DISK, when set: the
#						host's disk for the replicas'
#						device 1, in place of theirs)
#	failover_start I			replica I with the lease
#	failover_attach NAME I			attach volume NAME, asking
#						replica I first: sets dev
#						and sysfs
#	fconn KEY				a field of the host's
#						connection (debugfs)
#						(failover_conn KEY: sets val)
#	failover_now_ms				the guest's clock, in ms
#	failover_since LIMIT_S WHAT CMD...	sets ms: from $t0 (the kill)
#						until CMD succeeds (LIMIT_S
#						times MDR_SLOW)
#	failover_at_leader			the host's volume ($sysfs)
#						is asked at $leader
#	failover_grown KEY N			fconn KEY is above N
. "$MDR_TOP/tools/vm/group.sh"

failover_start() { group_start "$1" --lease-ms "$FAILOVER_LEASE_MS"; }

failover_init() {
	local i
	FAILOVER_LEASE_MS=$3
	mdr_require_file "$MDCTL"
	group_init "$1" "$2"
	for i in 1 2 3; do failover_start "$i"; done
	group_wait_leader
	export MDCTL_CONFIG=$MDR_TMP/$1-mdctl.conf
	FAILOVER_HKEY=$MDR_TMP/$1-host.key
	echo "admin-key = $GROUP_KEY" >"$MDCTL_CONFIG"
	mdr_on_exit "rm -f '$MDCTL_CONFIG' '$FAILOVER_HKEY'"
	mdr_expect_rc 0 "$MDCTL" host gen-key "$FAILOVER_HKEY"
	mdr_expect_rc 0 "$MDCTL" host add 0x51 --tenant 1 --host-key-file "$FAILOVER_HKEY" \
		--node "${MDR_REPLICA_ADDR[leader]}"
	mdr_module_load
	FAILOVER_DISK=${FAILOVER_DISK:-$MDR_VBLK}
	mdr_expect_rc 0 "$MDCTL" bind "1=$FAILOVER_DISK"
	# The disk of the serial the replicas report is not the one bound.
	FAILOVER_BIND=()
	[ "$FAILOVER_DISK" = "$MDR_VBLK" ] || FAILOVER_BIND=(--bind "1=$FAILOVER_DISK")
	FAILOVER_REPLICAS=()
	for i in 1 2 3; do FAILOVER_REPLICAS+=(--replica "${MDR_REPLICA_ADDR[i]}:4791"); done
}

failover_attach() {
	mdr_expect_rc 0 "$MDCTL" attach "$1" --node "${MDR_REPLICA_ADDR[$2]}" --host-id 0x51 \
		--host-key-file "$FAILOVER_HKEY" --group 7 "${FAILOVER_BIND[@]}" \
		"${FAILOVER_REPLICAS[@]}"
	dev=$(echo "$MDR_OUT" | grep -o '/dev/mdr[0-9]*' | head -n 1)
	[ -n "$dev" ] || mdr_fail "attach printed no device: $MDR_OUT"
	mdr_wait_for "[ -b $dev ]" 10
	sysfs=/sys/block/${dev#/dev/}/mdroute
	mdr_on_exit "$MDCTL detach --force $dev >/dev/null 2>&1"
}

# failover_conn KEY: sets val to a field of the host's connection, without
# starting a program (mdr_nap says why); fconn prints it. The file is
# taken in one read (mapfile): read(1) would seek back after each line,
# and a seq_file makes its text again at each seek, so a line could be
# cut where an earlier one changed length.
failover_conn() {
	local f=(/sys/kernel/debug/mdroute/connections/*) line
	local -a lines
	[ "${#f[@]}" -eq 1 ] && [ -f "${f[0]}" ] || mdr_fail "not one connection in debugfs: ${f[*]}"
	mapfile -t lines <"${f[0]}"
	val=
	# "KEY: VALUE" (mdr_conn_show()), the value up to its first space
	for line in "${lines[@]}"; do
		case $line in
		"$1: "*)
			val=${line#"$1: "}
			val=${val%% *}
			return 0
			;;
		esac
	done
}

fconn() { failover_conn "$1"; echo "$val"; }

failover_now_ms() { mdr_now_ms; echo "$now_ms"; }

# Polled every FAILOVER_POLL_S (50 ms), and not in a subshell:
# group_find_leader, a CMD of it, sets leader. Neither the poll nor the
# CMDs start a program, and the poll is not more frequent: under TCG it
# would take the CPU from the failover it times (mdr_nap). In an idle
# guest, with group_find_leader as CMD, this poll keeps 0.2 of a CPU busy
# at 50 ms and 0.34 at 20 ms; the poll before it, which started four
# programs a round at 20 ms, 0.82 (2026-12-06).
failover_since() {
	local limit=$(($1 * MDR_SLOW)) what=$2
	shift 2
	until "$@"; do
		mdr_now_ms
		[ $((now_ms - t0)) -lt $((limit * 1000)) ] ||
			mdr_fail "$what ${limit} s after the kill"
		mdr_nap "${FAILOVER_POLL_S:-0.05}"
	done
	mdr_now_ms
	ms=$((now_ms - t0))
}

failover_at_leader() {
	local at
	read -r at <"$sysfs/replica"
	[ "$at" = "${MDR_REPLICA_ADDR[leader]}:4791" ]
}

failover_grown() { failover_conn "$1"; [ "$val" -gt "$2" ]; }
