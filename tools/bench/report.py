# SPDX-License-Identifier: GPL-2.0
"""report.py - report.json, report.md and the gnuplot input of
tools/bench/report, from the guest's bench-volume.json and
bench-disks.json. The keys of report.json are documented in
Documentation/performance.md; add keys, never rename them.
"""
import json
import os

import benchlib

SCHEMA = 1

# configuration key -> (label, where its rounds are, key in those rounds)
CONFIGS = [
    ("raw_null_blk", "raw null_blk", "volume", "raw"),
    ("dm_linear", "dm-linear on null_blk", "volume", "dm_linear"),
    ("mdroute_hot", "mdroute on null_blk, hot cache", "volume", "mdroute"),
    ("raw_nvme", "raw NVMe (QEMU, file-backed)", "disks", "raw_nvme"),
    ("mdroute_nvme", "mdroute on NVMe, hot cache", "disks", "mdroute_nvme"),
    ("raw_vblk", "raw virtio-blk (QEMU, file-backed)", "disks", "raw_vblk"),
    ("mdroute_vblk", "mdroute on virtio-blk, hot cache", "disks", "mdroute_vblk"),
]


def us(ns):
    return "-" if ns is None else f"{ns / 1000:.1f}"


def configs(vol, disks):
    out = {}
    for key, label, src, k in CONFIGS:
        runs = (vol if src == "volume" else disks)["runs"]
        out[key] = {
            "label": label,
            "p50_ns": benchlib.median([r["p50_ns"][k] for r in runs]),
            "p99_ns": benchlib.median([r["p99_ns"][k] for r in runs]),
            "qd32_iops": benchlib.median([r["qd32_iops"][k] for r in runs]),
        }
    return out


def side_ratios(vol, disks):
    """Ratios without a promise, for reading the others."""
    out = {"dm_linear_p50_vs_raw": benchlib.median(
        benchlib.per_round(vol["runs"], "p50_ns", "dm_linear", "raw"))}
    for d in ("nvme", "vblk"):
        out[f"mdroute_{d}_p50_vs_raw"] = benchlib.median(
            benchlib.per_round(disks["runs"], "p50_ns", f"mdroute_{d}", f"raw_{d}"))
        out[f"mdroute_{d}_iops_vs_raw"] = benchlib.median(
            benchlib.per_round(disks["runs"], "qd32_iops", f"mdroute_{d}", f"raw_{d}"))
    return {k: round(v, 3) for k, v in out.items()}


def markdown(rep):
    c, m, cond = rep["configs"], rep["miss"], rep["conditions"]
    lines = [
        f"Command: `{cond['command']}` (commit {cond['commit']}, started {cond['started']}, "
        f"{cond['wall_s']} s wall). Conditions: QEMU {cond['accel'].upper()}, {cond['guest_cpus']} guest CPUs "
        f"on {cond['host_cpus']} host cores, host load average {cond['host_loadavg_start']} at the start, "
        f"{cond['host_loadavg_end']} at the end; guest kernel {cond['guest_kernel']}; {cond['fio']}. "
        f"Medians of {rep['rounds']} interleaved rounds of {rep['runtime_s']} s per measurement.",
        "",
        "| configuration | QD1 4 KiB randread p50 (us) | p99 (us) | QD32 x 2 jobs 4 KiB randread IOPS |",
        "|---|---:|---:|---:|",
    ]
    for key, _, _, _ in CONFIGS:
        x = c[key]
        lines.append(f"| {x['label']} | {us(x['p50_ns'])} | {us(x['p99_ns'])} | {x['qd32_iops']:.0f} |")
    lines += [
        f"| mdroute on null_blk, cold cache (1 read per extent) | {us(m['cold_p50_ns'])} | - | - |",
        f"| mdroute on null_blk, hot cache (same reads) | {us(m['hot_p50_ns'])} | - | - |",
        f"| ib_read_lat -R 64 B on the same rxe link | {us(m['ib_read_lat_p50_ns'])} | - | - |",
        "",
        f"Miss penalty (cold p50 - hot p50, same volume, same reads): {us(m['penalty_ns'])} us.",
        "",
        "| promised ratio | value | target | met | per round |",
        "|---|---:|---:|---|---|",
    ]
    for r in rep["ratios"].values():
        lines.append(f"| {r['what']} | {r['value']:.2f} | {r['op']} {r['target']:.2f} | "
                     f"{'yes' if r['met'] else 'no'} | {', '.join(f'{x:.2f}' for x in r['rounds'])} |")
    s = rep["side_ratios"]
    lines += [
        "",
        f"Other ratios (p50 of QD1 reads; IOPS at QD32): dm-linear / raw null_blk {s['dm_linear_p50_vs_raw']:.2f}; "
        f"mdroute / raw NVMe p50 {s['mdroute_nvme_p50_vs_raw']:.2f}, IOPS {s['mdroute_nvme_iops_vs_raw']:.2f}; "
        f"mdroute / raw virtio-blk p50 {s['mdroute_vblk_p50_vs_raw']:.2f}, IOPS {s['mdroute_vblk_iops_vs_raw']:.2f}.",
    ]
    return "\n".join(lines) + "\n"


def gnuplot(res, rep):
    with open(os.path.join(res, "latency.dat"), "w") as f:
        f.write("# label p50_us p99_us\n")
        for key, label, _, _ in CONFIGS:
            x = rep["configs"][key]
            f.write(f'"{label}" {x["p50_ns"] / 1000:.1f} {x["p99_ns"] / 1000:.1f}\n')
        m = rep["miss"]
        f.write(f'"mdroute on null_blk, cold cache" {m["cold_p50_ns"] / 1000:.1f} NaN\n')
        f.write(f'"ib_read_lat -R 64 B" {m["ib_read_lat_p50_ns"] / 1000:.1f} NaN\n')
    cond = rep["conditions"]
    with open(os.path.join(res, "latency.gp"), "w") as f:
        f.write(f"""set terminal pngcairo size 1100,600 font ",10"
set output "{res}/latency.png"
set title "QD1 4 KiB random read latency ({cond['accel'].upper()}, {rep['rounds']} rounds x {rep['runtime_s']} s, {cond['started']})"
set ylabel "microseconds (log scale)"
set logscale y
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -25 scale 0
set key top left
set grid ytics
set bmargin 9
plot "{res}/latency.dat" using 2:xtic(1) title "p50", '' using 3 title "p99"
""")


def write(res, conditions):
    g = os.path.join(res, "guest")
    vol = json.load(open(os.path.join(g, "bench-volume.json")))
    disks = json.load(open(os.path.join(g, "bench-disks.json")))
    rep = {
        "schema": SCHEMA,
        "conditions": conditions,
        "rounds": vol["rounds"],
        "runtime_s": vol["runtime_s"],
        "configs": configs(vol, disks),
        "miss": benchlib.miss(vol),
        "ratios": benchlib.volume_ratios(vol),
        "side_ratios": side_ratios(vol, disks),
        "lookups_per_s": round(vol["lookups"]["count"] * 1000 / vol["lookups"]["ms"]),
        "volume": vol,
        "disks": disks,
    }
    with open(os.path.join(res, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
        f.write("\n")
    with open(os.path.join(res, "report.md"), "w") as f:
        f.write(markdown(rep))
    gnuplot(res, rep)
