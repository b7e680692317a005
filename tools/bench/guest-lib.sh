# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# guest-lib.sh - measurements the benchmark guests share (volume-guest,
# report-guest). Source it after tools/vm/common.sh. The fio jobs are the
# ones of fio-jobs/, so a figure here means what the job file says.
#
# bench_lat DEV SIZE RUNTIME   -> "P50 P99" latency in ns of 4 KiB random
#                                 reads at QD1 (fio-jobs/lat-qd1.fio randread)
# bench_iops DEV SIZE RUNTIME  -> IOPS of 4 KiB random reads, 2 jobs at QD32
#                                 (fio-jobs/throughput.fio randread-4k)
# bench_rounds ROUNDS SIZE RUNTIME NAME=DEV...
#       interleaved rounds: in each round every NAME is measured once
#       (bench_lat, then bench_iops), in an order that rotates from round
#       to round, so that drift of the emulated machine hits all alike and
#       each ratio can be taken within one round. Fills the associative
#       arrays BENCH_P50[NAME,ROUND], BENCH_P99[NAME,ROUND] and
#       BENCH_IOPS[NAME,ROUND].

bench_fio() {	# bench_fio JOB SECTION DEV SIZE RUNTIME: fio's JSON on stdout
	DEV=$3 SIZE=$4 RUNTIME=$5 fio --section="$2" --output-format=json \
		"$MDR_TOP/fio-jobs/$1.fio" || mdr_fail "fio $1 $2 on $3"
}

bench_lat() {
	bench_fio lat-qd1 randread "$@" |
		jq -r '.jobs[0].read.lat_ns.percentile | "\(.["50.000000"]) \(.["99.000000"])"'
}

bench_iops() {
	bench_fio throughput randread-4k "$@" | jq '.jobs[0].read.iops | floor'
}

declare -A BENCH_P50 BENCH_P99 BENCH_IOPS
bench_rounds() {
	local rounds=$1 size=$2 runtime=$3 r k n lat line
	shift 3
	local -a what=("$@")
	n=${#what[@]}
	for r in $(seq 1 "$rounds"); do
		line=
		for k in $(seq 0 $((n - 1))); do
			local name=${what[$(((r + k) % n))]%%=*}
			local dev=${what[$(((r + k) % n))]#*=}
			lat=$(bench_lat "$dev" "$size" "$runtime")
			BENCH_P50[$name,$r]=${lat% *}
			BENCH_P99[$name,$r]=${lat#* }
			BENCH_IOPS[$name,$r]=$(bench_iops "$dev" "$size" "$runtime")
			line+=" $name p50 ${BENCH_P50[$name,$r]} ns IOPS ${BENCH_IOPS[$name,$r]};"
		done
		mdr_log "round $r:$line"
	done
}

# bench_runs_json ROUNDS NAME:KEY...: the "runs" array of the results,
# one object per round with p50_ns, p99_ns and qd32_iops keyed by KEY.
bench_runs_json() {
	local rounds=$1 r m sep=
	shift
	echo " ["
	for r in $(seq 1 "$rounds"); do
		local p50='' p99='' iops='' s=''
		for m in "$@"; do
			p50+="$s\"${m#*:}\": ${BENCH_P50[${m%%:*},$r]}"
			p99+="$s\"${m#*:}\": ${BENCH_P99[${m%%:*},$r]}"
			iops+="$s\"${m#*:}\": ${BENCH_IOPS[${m%%:*},$r]}"
			s=", "
		done
		echo "$sep {\"p50_ns\": {$p50}, \"p99_ns\": {$p99},"
		echo "   \"qd32_iops\": {$iops}}"
		sep=,
	done
	echo " ]"
}

# bench_ib_read_lat: p50 ("typical") in ns of a 64 B one-sided RDMA READ
# from rxe0 to rxe1 (ib_read_lat -R, over rdma_cm like mdroute), the
# floor of one cache miss on this link. A run is taken again, 3 times at
# most, when its client fails (on a busy guest it can connect before the
# server listens: "Unexpected CM event") or its typical latency is above
# 1 s (once in 36 runs it came out above 2 s) or not a number ("inf",
# once on 2026-12-06).
bench_ib_read_lat() {
	local out=$MDR_TMP/irl.out srv p50 try
	for try in 1 2 3; do
		ib_read_lat -R -d rxe1 -s 64 -n 5000 -F >"$MDR_TMP/irl-server.out" 2>&1 &
		srv=$!
		sleep "$try"
		if ! ib_read_lat -R -d rxe0 -s 64 -n 5000 -F "$MDR_NODE_ADDR" >"$out" 2>&1; then
			kill "$srv" 2>/dev/null
			wait "$srv" 2>/dev/null
			mdr_log "ib_read_lat failed (try $try): $(tr '\n' ' ' <"$out")" >&2
			continue
		fi
		wait "$srv"
		# columns: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
		p50=$(awk '$1 == 64 && NF >= 9 { printf "%.0f", $5 * 1000 }' "$out")
		[ -n "$p50" ] || mdr_fail "no result from ib_read_lat: $(cat "$out")"
		# perftest prints "inf" when its clock went wrong: taken again too
		if [[ $p50 =~ ^[0-9]+$ ]] && [ "$p50" -le 1000000000 ]; then
			echo "$p50"
			return
		fi
		mdr_log "ib_read_lat gave a typical latency of $p50 ns (try $try)" >&2
	done
	mdr_fail "ib_read_lat gave no result in 3 tries: $(cat "$out" "$MDR_TMP/irl-server.out")"
}
