# SPDX-License-Identifier: GPL-2.0
"""failover.py - the figures of tools/bench/failover from a guest's raw
results (failover-guest): runs (one line per kill: its time by the
guest's clock, and the ms from it until a new leader served, the host was
there, its first lookup and its first allocation completed there, as the
guest's shell polled them), trace (the module's events, a mark at each
kill), the cached reader's latency log (fio, one line per completion,
stamped with the guest's clock) and the CPU each task had around each
kill (cpu-N-before, cpu-N-after).

The host's times come from the trace: the shell's polls fork a process
or more each and are late by hundreds of ms under TCG (2026-12-05: the
host reopened at a new leader 0.6 to 1 s before the polls saw it). The
group's come from the replicas' logs, whose lines carry the time mdnode
logged them (--log-time utc): the steps of GROUP_STAGES, serving among
them; without stamps, "serving" is the poll's, an upper bound.
"""
import glob
import json
import os
import re
import statistics

import benchlib

# name -> (what, op, target)
TARGETS = {
    "pause_ms_p50": ("kill -9 of the leader to the first completed lookup "
                     "and allocation at the new leader, p50 (ms)", "<=", 1000),
    "pause_ms_max": ("the same, the longest (ms)", "<=", 1000),
    "cached_p50_ratio": ("cached 4 KiB reads' p50 during a failover / "
                         "before it", "<=", 1.1),
}

# The cached reads before a kill that are its baseline (ms).
BEFORE_MS = 5000


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def read_runs(res):
    runs = []
    for line in open(os.path.join(res, "runs")):
        t0, serving, moved, read, alloc = (int(x) for x in line.split())
        runs.append({"kill_ms": t0, "serving_ms": serving, "host_at_leader_ms": moved,
                     "first_lookup_ms": read, "first_allocation_ms": alloc,
                     "pause_ms": max(read, alloc),
                     "host_lookup_after_serving_ms": read - serving})
    return runs


MARK = re.compile(r"\s(\d+\.\d+): tracing_mark_write: run (\d+): replica \d+ killed at (\d+)")
EVENT = re.compile(r"\s(\d+\.\d+): (mdr_rpc|mdr_lookup): volume \d+ (?:op (\w+) .* err (-?\d+))?")


def read_trace(res):
    """{run: (mark's trace time in s, [(time in s, event, op, err)...] after it)}"""
    path = os.path.join(res, "trace")
    if not os.path.exists(path):
        return {}
    runs, cur = {}, None
    for line in open(path):
        m = MARK.search(line)
        if m:
            cur = int(m.group(2))
            runs[cur] = (float(m.group(1)), [])
            continue
        e = EVENT.search(line)
        if e and cur is not None:
            runs[cur][1].append((float(e.group(1)), e.group(2), e.group(3),
                                 int(e.group(4)) if e.group(4) else 0))
    return runs


# The group's steps in a failover, as the replicas log them: name -> what
# the first line after the kill holds (any replica's).
GROUP_STAGES = [
    ("hangup", "ended its log connection; probing"),
    ("proved_gone", "its process is gone"),
    ("deposed", "deposed: its leader key is gone"),
    ("won", "won the campaign for epoch"),
    ("leading", "leading in epoch"),
    ("follower_connected", "connected in epoch"),
    ("serving", "serving in epoch"),
]


def read_replica_logs(res):
    """[(realtime ms, line)] of every stamped line of the replicas' logs"""
    out = []
    for path in glob.glob(os.path.join(res, "replica-*.log")):
        for line in open(path, errors="replace"):
            t = benchlib.log_stamp(line)
            if t is not None:
                out.append((t * 1000, line))
    return sorted(out)


def read_clocks(res):
    """CLOCK_REALTIME - CLOCK_MONOTONIC in the guest (s), or None"""
    try:
        mono, real = (float(x) for x in open(os.path.join(res, "clocks")).read().split())
    except (OSError, ValueError):
        return None
    return real - mono


def from_logs(run, until_ms, lines, base_ms):
    """The group's steps of @run from the stamped lines before @until_ms
    (the next kill), in ms from @base_ms (realtime: the trace's mark, so
    that they compare with the host's times, else the kill's time the
    shell took); "serving" replaces the poll's."""
    stages = {name: None for name, _ in GROUP_STAGES}
    for t, line in lines:
        if t < run["kill_ms"] or t >= until_ms:
            continue
        for name, text in GROUP_STAGES:
            if stages[name] is None and text in line:
                stages[name] = round(t - base_ms, 1)
    run["group_stages_ms"] = stages
    if stages["serving"] is not None:
        run.setdefault("polled_ms", {})["serving"] = run["serving_ms"]
        run["serving_ms"] = round(stages["serving"])
        run["host_lookup_after_serving_ms"] = run["first_lookup_ms"] - run["serving_ms"]


def from_trace(run, traced):
    """The host's times of @run from its events: the first OPEN answered
    (only a serving leader answers one), then the first lookup and the
    first ALLOC answered after it. Left as polled when the trace lacks one."""
    k, events = traced
    opened = next((t for t, ev, op, err in events
                   if ev == "mdr_rpc" and op == "OPEN" and err == 0), None)
    if opened is None:
        return
    lookup = next((t for t, ev, _, _ in events if ev == "mdr_lookup" and t >= opened), None)
    alloc = next((t for t, ev, op, err in events
                  if ev == "mdr_rpc" and op == "ALLOC" and err == 0 and t >= opened), None)
    if lookup is None or alloc is None:
        return
    ms = lambda t: round((t - k) * 1000)  # noqa: E731
    run["polled_ms"] = {"host_at_leader": run["host_at_leader_ms"],
                        "first_lookup": run["first_lookup_ms"],
                        "first_allocation": run["first_allocation_ms"]}
    run["host_at_leader_ms"] = ms(opened)
    run["first_lookup_ms"] = ms(lookup)
    run["first_allocation_ms"] = ms(alloc)
    run["pause_ms"] = max(run["first_lookup_ms"], run["first_allocation_ms"])
    run["host_lookup_after_serving_ms"] = run["first_lookup_ms"] - run["serving_ms"]
    run["timed_by"] = "trace"


def read_lat(res, name="cached"):
    """(completion time in ms, latency in us) of each read of a reader:
    "cached" (through the volume) or "control" (the disk itself)."""
    out = []
    for path in glob.glob(os.path.join(res, f"{name}_lat.*.log")):
        for line in open(path):
            f = [x.strip() for x in line.split(",")]
            if len(f) >= 2 and f[0].isdigit():
                out.append((int(f[0]), int(f[1]) / 1000.0))
    return sorted(out)


def cached_windows(lat, run):
    t0, end = run["kill_ms"], run["kill_ms"] + run["pause_ms"]
    before = [v for t, v in lat if t0 - BEFORE_MS <= t < t0]
    during = [v for t, v in lat if t0 <= t <= end]
    return before, during


def target(name, value):
    what, op, t = TARGETS[name]
    met = value is not None and (value <= t if op == "<=" else value >= t)
    return {"what": what, "value": value, "target": t, "op": op, "met": met}


def med(xs):
    return round(statistics.median(xs), 3) if xs else None


def reader_p50s(runs, lat, name):
    """A reader's p50 before each kill and during its pause, kept in the
    run as <name>_p50_us_before and _during; the ratios and p50s of the
    kills that had reads in both windows."""
    ratios, p50b, p50d = [], [], []
    for r in runs:
        before, during = cached_windows(lat, r)
        if before and during:
            b, d = pct(before, 50), pct(during, 50)
            r[f"{name}_p50_us_before"] = round(b, 1)
            r[f"{name}_p50_us_during"] = round(d, 1)
            ratios.append(d / b)
            p50b.append(b)
            p50d.append(d)
    return ratios, p50b, p50d


def control_figures(runs, lat):
    """The control reader's p50 during each failover / before it, in the
    same windows as the cached reader's: what the failover does to reads
    of the same disk that do not go through mdroute (the emulated
    machine's share of the cached reader's ratio)."""
    ratios, p50b, p50d = reader_p50s(runs, lat, "control")
    quotients = []
    for r in runs:
        if r.get("cached_p50_us_before") and r.get("control_p50_us_before"):
            cached = r["cached_p50_us_during"] / r["cached_p50_us_before"]
            control = r["control_p50_us_during"] / r["control_p50_us_before"]
            r["cached_over_control"] = round(cached / control, 3)
            quotients.append(cached / control)
    return {
        "control_p50_ratio": med(ratios),
        "control_p50_us_before": med(p50b),
        "control_p50_us_during": med(p50d),
        "cached_over_control_ratio": med(quotients),
    }


def read_cpu(path):
    """(guest busy, guest idle, CPUs, {pid: (name, ticks)}) of a cpu_snap file:
    each task named by its role (the replicas, etcd, the fio streams, the
    shell) or its parent's, else by its command without a kernel thread's
    CPU or queue (kworker/1:2-events is kworker)."""
    roles, tasks, parents, guest, cpus = {}, {}, {}, (0, 0), 0
    for line in open(path, errors="replace"):
        if line.startswith("role "):
            _, name, pid = line.split()
            if int(pid) > 0:
                roles[int(pid)] = name
        elif line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:]]
            guest = (f[0] + f[1] + f[2] + f[5] + f[6] + f[7], f[3] + f[4])
        elif line.startswith("cpu"):
            cpus += 1
        elif line[:1].isdigit() and ") " in line:
            comm = line[line.index("(") + 1:line.rindex(")")]
            f = line[line.rindex(")") + 2:].split()
            pid = int(line.split()[0])
            parents[pid] = int(f[1])
            tasks[pid] = (re.split(r"[/:]", comm)[0], int(f[11]) + int(f[12]))
    named = {}
    for pid, (comm, ticks) in tasks.items():
        name = roles.get(pid) or roles.get(parents[pid]) or comm
        named[pid] = (name, ticks)
    return guest[0], guest[1], max(cpus, 1), named


def cpu_during(res, n):
    """What had the guest's CPU from just before kill @n to when the shell
    saw its first allocation: {"guest_busy_fraction", "window_ms" (that
    time: longer than the pause by the lateness of the shell's polls),
    "ms": {name: CPU ms, the largest first}} (ticks of 10 ms; a task that
    ended in between is not counted, one that started counts whole), or
    None without the snapshots."""
    try:
        b_busy, b_idle, _, before = read_cpu(os.path.join(res, f"cpu-{n}-before"))
        a_busy, a_idle, cpus, after = read_cpu(os.path.join(res, f"cpu-{n}-after"))
    except OSError:
        return None
    ms = {}
    for pid, (name, ticks) in after.items():
        was = before.get(pid)
        spent = ticks - (was[1] if was and was[0] == name else 0)
        if spent > 0:
            ms[name] = ms.get(name, 0) + spent * 10
    busy, idle = a_busy - b_busy, a_idle - b_idle
    return {"guest_busy_fraction": round(busy / (busy + idle), 2) if busy + idle else None,
            "window_ms": (busy + idle) * 10 // cpus,
            "ms": dict(sorted(ms.items(), key=lambda kv: -kv[1]))}


def figures(runs, lat):
    ratios, p50b, p50d = reader_p50s(runs, lat, "cached")
    p99d, maxd = [], []
    for r in runs:
        before, during = cached_windows(lat, r)
        r["cached_reads_before"] = len(before)
        r["cached_reads_during"] = len(during)
        if before and during:
            r["cached_p99_us_during"] = round(pct(during, 99), 1)
            r["cached_max_us_during"] = round(max(during), 1)
            p99d.append(pct(during, 99))
            maxd.append(max(during))
    pauses = [r["pause_ms"] for r in runs]
    cpu = [r["cpu_during"] for r in runs if r.get("cpu_during")]
    names = {name for c in cpu for name in c["ms"]}
    cpu_p50 = {name: med([c["ms"].get(name, 0) for c in cpu]) for name in names}
    return {
        "cpu_during_guest_busy_p50": med([c["guest_busy_fraction"] for c in cpu
                                          if c["guest_busy_fraction"] is not None]),
        "cpu_during_ms_p50": dict(sorted(cpu_p50.items(), key=lambda kv: -kv[1])[:12]),
        "pause_ms_p50": med(pauses),
        "pause_ms_max": max(pauses) if pauses else None,
        "pause_lookup_ms_p50": med([r["first_lookup_ms"] for r in runs]),
        "pause_lookup_ms_max": max(r["first_lookup_ms"] for r in runs) if runs else None,
        "pause_allocation_ms_p50": med([r["first_allocation_ms"] for r in runs]),
        "pause_allocation_ms_max": max(r["first_allocation_ms"] for r in runs) if runs else None,
        "serving_ms_p50": med([r["serving_ms"] for r in runs]),
        "group_stages_ms_p50": {
            name: med([r["group_stages_ms"][name] for r in runs
                       if r.get("group_stages_ms", {}).get(name) is not None])
            for name, _ in GROUP_STAGES},
        "host_lookup_after_serving_ms_p50": med([r["host_lookup_after_serving_ms"] for r in runs]),
        "host_lookup_after_serving_ms_max":
            max(r["host_lookup_after_serving_ms"] for r in runs) if runs else None,
        "cached_p50_ratio": med(ratios),
        "cached_p50_us_before": med(p50b),
        "cached_p50_us_during": med(p50d),
        "cached_p99_us_during": med(p99d),
        "cached_max_us_during": max(maxd) if maxd else None,
    }


def write(res, ttl_s, lease_ms, disk, host_nice):
    runs = read_runs(res)
    traced = read_trace(res)
    lines = read_replica_logs(res)
    offset = read_clocks(res)
    for n, r in enumerate(runs, 1):
        r["timed_by"] = "polls"
        base = r["kill_ms"]
        if n in traced:
            from_trace(r, traced[n])
            if offset is not None:
                base = (traced[n][0] + offset) * 1000
        until = runs[n]["kill_ms"] if n < len(runs) else float("inf")
        from_logs(r, until, lines, base)
        cpu = cpu_during(res, n)
        if cpu is not None:
            r["cpu_during"] = cpu
    b = figures(runs, read_lat(res))
    control = read_lat(res, "control")
    if control:
        b.update(control_figures(runs, control))
    b["targets"] = {k: target(k, b[k]) for k in TARGETS}
    b["settings"] = {"runs": len(runs), "ttl_s": ttl_s, "lease_ms": lease_ms,
                     "cached_baseline_ms": BEFORE_MS, "disk": disk, "host_nice": host_nice}
    b["runs"] = runs
    json.dump(b, open(os.path.join(res, "bench-failover.json"), "w"), indent=1)


def print_summary(b):
    s = b["settings"]
    print(f"failover: {s['runs']} kills -9 of the leader (etcd TTL {s['ttl_s']} s, "
          f"leases {s['lease_ms']} ms, the host's IO on {s.get('disk', 'vblk')} "
          f"at nice {s.get('host_nice', 0)})")
    for k, t in b["targets"].items():
        print(f"  {k:22} {t['value']} ({t['op']} {t['target']}: "
              f"{'met' if t['met'] else 'NOT met'}) - {t['what']}")
    print(f"  lookup p50 {b['pause_lookup_ms_p50']} ms (max {b['pause_lookup_ms_max']}), "
          f"allocation p50 {b['pause_allocation_ms_p50']} ms (max {b['pause_allocation_ms_max']})")
    print(f"  timed by: {', '.join(sorted(set(r['timed_by'] for r in b['runs'])))}")
    if b.get("group_stages_ms_p50"):
        print(f"  the group's steps from the kill, p50 (ms): " +
              ", ".join(f"{k} {v}" for k, v in b["group_stages_ms_p50"].items()))
    print(f"  the group's own failover (kill to a new leader serving) p50 {b['serving_ms_p50']} ms; "
          f"the host's share (new leader serving to its first lookup there) p50 "
          f"{b['host_lookup_after_serving_ms_p50']} ms, max {b['host_lookup_after_serving_ms_max']} ms")
    if b.get("cpu_during_ms_p50"):
        print(f"  the guest's CPU from just before a kill to when the shell saw its first "
              f"allocation (longer than the pause), p50: busy "
              f"{b['cpu_during_guest_busy_p50']}; ms: " +
              ", ".join(f"{k} {v}" for k, v in b["cpu_during_ms_p50"].items()))
    print(f"  cached reads: p50 {b['cached_p50_us_before']} us before, "
          f"{b['cached_p50_us_during']} us during (p99 {b['cached_p99_us_during']} us, "
          f"max {b['cached_max_us_during']} us)")
    if b.get("control_p50_ratio") is not None:
        print(f"  control, the same reads of the disk without mdroute: p50 "
              f"{b['control_p50_us_before']} us before, {b['control_p50_us_during']} us during, "
              f"ratio {b['control_p50_ratio']}; cached ratio / control ratio, per kill, median "
              f"{b['cached_over_control_ratio']}")
