# SPDX-License-Identifier: GPL-2.0
"""benchlib.py - the ratios of the benchmarks, computed in one place.

tools/bench/volume prints them; tools/bench/report puts them in its
report; tools/bench/replication's are the last two of TARGETS. Every
ratio is taken within one round (the configurations of a round ran back
to back) and the median over the rounds is the figure: the emulated
machine is noisy, and a ratio across rounds would measure its drift.
Also what the benches read alike: mdnode's log stamps.
"""
import datetime
import re
import statistics

# The promises: name -> (what, numerator, denominator, op, target)
TARGETS = {
    "hot_p50_vs_dm_linear": ("QD1 4 KiB randread p50, mdroute hot / dm-linear", "<=", 0.95),
    "qd32_iops_vs_dm_linear": ("QD32 4 KiB randread IOPS, mdroute / dm-linear", ">=", 1.05),
    "miss_penalty_vs_ib_read_lat": ("miss penalty / ib_read_lat -R 64 B p50", "<=", 1.30),
    # tools/bench/replication (issue 22): a group of three against one node
    "updates_ratio": ("ALLOCs per second at depth, replicated / single-node journal", ">=", 0.8),
    "commit_p50_ratio": ("QD1 ALLOC p50, replicated / single-node journal", "<=", 2.0),
}


def median(xs):
    return statistics.median(xs) if xs else None


# The stamp mdnode --log-time utc starts a line with.
LOG_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})Z ")


def log_stamp(line):
    """The time (s since the epoch) an mdnode log line says it was
    logged, or None for a line without a stamp."""
    m = LOG_STAMP.match(line)
    if not m:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def per_round(runs, metric, num, den):
    return [r[metric][num] / r[metric][den] for r in runs]


def miss(b):
    """Miss penalty of a bench-volume.json: cold p50 - hot p50 per
    measurement, and its ratio to the ib_read_lat measured right after it.
    A measurement is a chunk of a pass's cold reads (results from before
    chunks have one per pass, and older ones one ib_read_lat for all)."""
    m = b["miss"]
    pen = [c - h for c, h in zip(m["cold_p50_ns"], m["hot_p50_ns"])]
    irl = m.get("ib_read_lat_passes_ns", [m["ib_read_lat_p50_ns"]] * len(pen))
    return {
        "cold_p50_ns": median(m["cold_p50_ns"]),
        "hot_p50_ns": median(m["hot_p50_ns"]),
        "penalty_ns": median(pen),
        "penalty_passes_ns": pen,
        "ib_read_lat_p50_ns": m["ib_read_lat_p50_ns"],
        "ib_read_lat_passes_ns": irl,
        "ratio_passes": [p / i for p, i in zip(pen, irl)],
    }


def ratio(name, rounds):
    what, op, target = TARGETS[name]
    v = median(rounds)
    met = v <= target if op == "<=" else v >= target
    return {"what": what, "value": round(v, 3), "target": target, "op": op,
            "met": met, "rounds": [round(x, 3) for x in rounds]}


def volume_ratios(b):
    """The promised ratios of a bench-volume.json."""
    runs = b["runs"]
    m = miss(b)
    return {
        "hot_p50_vs_dm_linear": ratio("hot_p50_vs_dm_linear",
                                      per_round(runs, "p50_ns", "mdroute", "dm_linear")),
        "qd32_iops_vs_dm_linear": ratio("qd32_iops_vs_dm_linear",
                                        per_round(runs, "qd32_iops", "mdroute", "dm_linear")),
        "miss_penalty_vs_ib_read_lat": ratio("miss_penalty_vs_ib_read_lat", m["ratio_passes"]),
    }


def fmt_ratio(r):
    return (f"{r['value']:.2f} (target {r['op']} {r['target']:.2f}: "
            f"{'met' if r['met'] else 'NOT met'}; rounds {', '.join(f'{x:.3f}' for x in r['rounds'])})")


def print_volume(b):
    """What tools/bench/volume prints of a bench-volume.json."""
    runs = b["runs"]
    for i, r in enumerate(runs):
        print(f"round {i + 1}: p50 ns raw {r['p50_ns']['raw']:.0f} dm-linear {r['p50_ns']['dm_linear']:.0f} "
              f"mdroute {r['p50_ns']['mdroute']:.0f}; QD32 IOPS raw {r['qd32_iops']['raw']} "
              f"dm-linear {r['qd32_iops']['dm_linear']} mdroute {r['qd32_iops']['mdroute']}")
    rat = volume_ratios(b)
    print(f"p50 ratio mdroute/dm-linear: {fmt_ratio(rat['hot_p50_vs_dm_linear'])}")
    print(f"QD32 IOPS ratio mdroute/dm-linear: {fmt_ratio(rat['qd32_iops_vs_dm_linear'])}")
    raw = per_round(runs, "p50_ns", "dm_linear", "raw")
    print(f"p50 ratio dm-linear/raw: median {median(raw):.3f}")
    m = miss(b)
    print(f"miss penalty (cold p50 - hot p50, one read per extent at QD1): median {m['penalty_ns']:.0f} ns "
          f"(passes {', '.join(f'{x:.0f}' for x in m['penalty_passes_ns'])}); "
          f"ib_read_lat -R 64 B p50 median {m['ib_read_lat_p50_ns']} ns "
          f"(passes {', '.join(str(x) for x in m['ib_read_lat_passes_ns'])})")
    print(f"miss penalty / ib_read_lat p50: {fmt_ratio(rat['miss_penalty_vs_ib_read_lat'])}")
    lk = b["lookups"]
    print(f"lookups per second, cold cache, {lk['jobs']} jobs at QD{lk['iodepth']}: "
          f"{lk['count'] * 1000 / lk['ms']:.0f} ({lk['count']} in {lk['ms']} ms)")
    xa = b["radix_tree_nodes_added"] * 576 / b["mem_extents"]
    print(f"cache memory per cached extent: {b['entry_slab_bytes']} B entry (object {b['entry_object_bytes']} B) + "
          f"{b['radix_tree_nodes_added']} XArray nodes of 576 B over {b['mem_extents']} extents ({xa:.1f} B) = "
          f"{b['entry_slab_bytes'] + xa:.1f} B")
