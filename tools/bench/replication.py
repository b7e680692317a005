# SPDX-License-Identifier: GPL-2.0
"""replication.py - bench-replication.json of tools/bench/replication from
the raw results tools/bench/replication-guest leaves (loads/, metrics/,
failover/), and the summary printed from it. The keys are documented in
Documentation/performance.md; add keys, never rename them.
"""
import glob
import json
import os
import re

import benchlib

SCHEMA = 1
SIDES = ("single", "group")
FAILOVER_TARGET_MS = 1000


def parse_prom(path):
    """series (name and labels, as written) -> value of one scrape"""
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        out[series] = float(value)
    return out


def hist_delta(before, after, name, labels=""):
    """(sum, count) a histogram gained between two scrapes"""
    sel = "{" + labels + "}" if labels else ""
    return (after.get(f"{name}_sum{sel}", 0) - before.get(f"{name}_sum{sel}", 0),
            after.get(f"{name}_count{sel}", 0) - before.get(f"{name}_count{sel}", 0))


def counter_delta(before, after, num, den):
    """(num, den): what two counters gained between two scrapes"""
    return (after.get(num, 0) - before.get(num, 0), after.get(den, 0) - before.get(den, 0))


def mean_of(deltas, scale):
    s = sum(d[0] for d in deltas)
    n = sum(d[1] for d in deltas)
    return round(s / n * scale, 1) if n else None


def parse_cpu(path):
    """name -> clock ticks of one cpu_snap (replication-guest)"""
    out = {}
    for line in open(path):
        name, ticks = line.split()
        out[name] = int(ticks)
    return out


def cpu(res, tag, allocs, followers):
    """The CPU time a load took, per ALLOC, in us: the node that answered
    (single or leader), the followers together, etcd, and the whole guest;
    and how busy the guest's CPUs were (1.0: all of them, all the time).
    None where the snapshots are missing (a run from before they were)."""
    try:
        b = parse_cpu(f"{res}/metrics/{tag}-before.cpu")
        a = parse_cpu(f"{res}/metrics/{tag}-after.cpu")
    except FileNotFoundError:
        return {}
    hz = a["hz"]

    def per_alloc(names):
        ticks = sum(a[n] - b[n] for n in names if n in a and n in b)
        return round(ticks * 1e6 / hz / allocs, 1) if allocs else None
    replicas = [n for n in a if n.startswith("replica-")]
    fol = [f"replica-{w.split('-')[1]}" for w in followers]
    main = ["single"] if not followers else [n for n in replicas if n not in fol]
    busy = a["guest_busy"] - b["guest_busy"]
    idle = a["guest_idle"] - b["guest_idle"]
    out = {
        "cpu_us_per_alloc": per_alloc(main),
        "etcd_cpu_us_per_alloc": per_alloc([n for n in a if n.startswith("etcd-")]),
        "guest_cpu_us_per_alloc": per_alloc(["guest_busy"]),
        "guest_busy_fraction": round(busy / (busy + idle), 3) if busy + idle else None,
    }
    if followers:
        out["followers_cpu_us_per_alloc"] = per_alloc(fol)
    return out


def where(res, tag, allocs):
    """What the nodes of one load say of its ALLOCs: their own time per
    ALLOC (arrival to reply), their journal's time per write (submission
    to durable) and records per write; for a group, the followers'; and
    the CPU time each spent per ALLOC (cpu())."""
    def node(who):
        b = parse_prom(f"{res}/metrics/{tag}-before-{who}.prom")
        a = parse_prom(f"{res}/metrics/{tag}-after-{who}.prom")
        return {
            "alloc": hist_delta(b, a, "mdnode_request_duration_seconds", 'opcode="alloc"'),
            "sync": hist_delta(b, a, "mdnode_journal_sync_duration_seconds"),
            "batch": hist_delta(b, a, "mdnode_journal_batch_records"),
            "shipped": counter_delta(b, a, "mdnode_repl_shipped_records_total",
                                     "mdnode_repl_shipped_batches_total"),
        }
    whos = [os.path.basename(p)[len(tag) + len("-before-"):-len(".prom")]
            for p in glob.glob(f"{res}/metrics/{tag}-before-*.prom")]
    main = node("single" if "single" in whos else "leader")
    out = {
        "node_alloc_mean_us": mean_of([main["alloc"]], 1e6),
        "journal_sync_mean_us": mean_of([main["sync"]], 1e6),
        "journal_batch_records_mean": mean_of([main["batch"]], 1),
    }
    followers = [node(w) for w in sorted(whos) if w.startswith("follower-")]
    if followers:
        out["shipped_records_per_batch"] = mean_of([main["shipped"]], 1)
        out["followers_journal_sync_mean_us"] = mean_of([f["sync"] for f in followers], 1e6)
        out["followers_journal_batch_records_mean"] = mean_of([f["batch"] for f in followers], 1)
    out.update(cpu(res, tag, allocs, [w for w in whos if w.startswith("follower-")]))
    return out


def loads(res, rounds, depth):
    """rounds[r][qd][side] = the load's JSON with its "where"; qd is "qd1"
    or "depth" """
    out = []
    for r in range(1, rounds + 1):
        rnd = {}
        for qd, q in (("qd1", 1), ("depth", depth)):
            rnd[qd] = {}
            for side in SIDES:
                tag = f"{r}-qd{q}-{side}"
                b = json.load(open(f"{res}/loads/{tag}.json"))
                b["where"] = where(res, tag, b["ok"])
                rnd[qd][side] = b
        out.append(rnd)
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return benchlib.median(xs)


def summary(runs):
    """side -> qd -> medians over the rounds"""
    out = {}
    for side in SIDES:
        out[side] = {}
        for qd in ("qd1", "depth"):
            rs = [r[qd][side] for r in runs]
            s = {
                "updates_per_s": med([x["updates_per_s"] for x in rs]),
                "p50_us": med([x["lat_us"]["p50"] for x in rs]),
                "p99_us": med([x["lat_us"]["p99"] for x in rs]),
                "max_us": max(x["lat_us"]["max"] for x in rs),
                "mean_us": med([x["lat_us"]["mean"] for x in rs]),
                "errors": sum(x["errors"] for x in rs),
            }
            for k in rs[0]["where"]:
                s[k] = med([x["where"].get(k) for x in rs])
            out[side][qd] = s
    return out


def per_round(runs, qd, key):
    """group / single of one figure of each round"""
    def fig(x):
        return x["updates_per_s"] if key == "updates_per_s" else x["lat_us"][key]
    return [fig(r[qd]["group"]) / fig(r[qd]["single"]) for r in runs
            if fig(r[qd]["single"])]


# The failover's steps: name -> (events' source, what its line holds)
STAGES = [
    ("etcd_key_deleted", "etcd", lambda l: l == "DELETE"),
    ("etcd_key_created", "etcd", lambda l: l == "PUT"),
    ("won", "replica", lambda l: "won the campaign for epoch" in l),
    ("leading", "replica", lambda l: "leading in epoch" in l),
    ("follower_connected", "replica", lambda l: "connected in epoch" in l),
    ("serving", "replica", lambda l: "serving in epoch" in l),
    ("first_change", "change", lambda l: l.startswith("clock: ")),
    ("first_alloc", "alloc", lambda l: l.startswith("clock: ")),
]

# Where the failover's time goes: name -> (from, to, what it is)
SEGMENTS = [
    ("key_deleted", None, "etcd_key_deleted",
     "kill to etcd deleting the leader key: a follower's deposition of the dead leader "
     "(its hangup, a probe, the revoke), or its etcd lease running out"),
    ("campaign", "etcd_key_deleted", "won",
     "the key deleted to a replica having won it (its watch, its transaction)"),
    ("takeover", "won", "serving",
     "won to serving: connecting the others, a majority's logs heard, its EPOCH record committed"),
    ("first_change", "serving", "first_change",
     "serving to the probe's change answered (its commit, and the probe's 5 ms retry)"),
    ("old_leases", "first_change", "first_alloc",
     "the first change to the first ALLOC: the old leader's leases waited out (held_ms)"),
]


def failover_round(d):
    meta = json.load(open(f"{d}/meta.json"))
    t_kill = meta["kill_realtime_s"]
    new = meta["new_leader"]
    stages = {name: None for name, _, _ in STAGES}
    held = None
    deleted = False
    for line in open(f"{d}/events"):
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) < 3:
            continue
        t, src, text = float(parts[0]), parts[1], parts[2]
        if src.startswith("replica-"):
            # when mdnode logged it (--log-time utc), not when it was read
            stamped = benchlib.log_stamp(text)
            if stamped is not None:
                t = stamped
        if src.startswith(("change-", "alloc-")):
            # the probe's own clock, not the time its line was read
            m = re.match(r"clock: realtime_us=(\d+)$", text)
            if m:
                t = int(m.group(1)) / 1e6
        for name, kind, match in STAGES:
            own = src == kind if kind == "etcd" else src == f"{kind}-{new}"
            if stages[name] is None and own and match(text):
                # the key's PUT that counts is the new leader's, after the delete
                if name == "etcd_key_created" and not deleted:
                    continue
                stages[name] = round((t - t_kill) * 1000, 1)
                if name == "etcd_key_deleted":
                    deleted = True
                if name == "serving":
                    m = re.search(r"waited out for (\d+) ms", text)
                    held = int(m.group(1)) if m else None
    segs = {}
    for name, a, b, _ in SEGMENTS:
        ta = 0.0 if a is None else stages[a]
        tb = stages[b]
        segs[name] = None if ta is None or tb is None else round(tb - ta, 1)
    return {
        "round": meta["round"], "killed": meta["killed"], "new_leader": new,
        "stream_acked": meta["stream_acked"],
        "failover_ms": stages["first_change"], "alloc_resume_ms": stages["first_alloc"],
        "held_ms": held, "stages_ms": stages, "segments_ms": segs,
    }


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"median": None, "min": None, "max": None, "values": []}
    return {"median": round(benchlib.median(xs), 1), "min": min(xs), "max": max(xs), "values": xs}


def failover(res, ttl_s):
    rounds = [failover_round(d) for d in
              sorted(glob.glob(f"{res}/failover/*/"), key=lambda p: int(p.rstrip("/").split("/")[-1]))]
    f = spread([r["failover_ms"] for r in rounds])
    third = ttl_s * 1000 // 3
    earliest = ttl_s * 1000 - third
    deposed = sum(1 for r in rounds
                  if r["stages_ms"].get("etcd_key_deleted") is not None
                  and r["stages_ms"]["etcd_key_deleted"] < earliest)
    return {
        "rounds": rounds,
        "failover_ms": f,
        "alloc_resume_ms": spread([r["alloc_resume_ms"] for r in rounds]),
        "segments_ms": {name: med([r["segments_ms"][name] for r in rounds])
                        for name, _, _, _ in SEGMENTS},
        "segments_what": {name: what for name, _, _, what in SEGMENTS},
        "target_ms": FAILOVER_TARGET_MS,
        "met": f["median"] is not None and f["median"] <= FAILOVER_TARGET_MS,
        "bound": (f"{deposed} of {len(rounds)} kills had the key deleted before the dead "
                  f"leader's lease could lapse ({earliest} ms after the kill at the earliest: "
                  f"it renews every {third} ms, TTL/3): a follower proved its process gone "
                  "and revoked the lease (replication.md, 'A dead leader'). The failover is "
                  "then that deposition, the campaign and the takeover. When nothing proves "
                  f"the process gone (its host down), the lease runs out {earliest} to "
                  f"{ttl_s * 1000} ms after the kill, plus however late etcd finds it "
                  "expired."),
    }


def write(res, settings):
    """bench-replication.json in res from the guest's raw results"""
    depth = settings["depth"]
    runs = loads(res, settings["rounds"], depth)
    upd = benchlib.ratio("updates_ratio", per_round(runs, "depth", "updates_per_s"))
    p50 = benchlib.ratio("commit_p50_ratio", per_round(runs, "qd1", "p50"))
    fo = failover(res, settings["etcd_ttl_s"])

    def side(qd, key):
        v = med(per_round(runs, qd, key))
        return None if v is None else round(v, 3)
    b = {
        "schema": SCHEMA,
        "failover_ms": fo["failover_ms"]["median"],
        "updates_ratio": upd["value"],
        "commit_p50_ratio": p50["value"],
        "settings": settings,
        "ratios": {"updates_ratio": upd, "commit_p50_ratio": p50},
        "side_ratios": {
            "commit_p99_ratio": side("qd1", "p99"),
            "updates_ratio_qd1": side("qd1", "updates_per_s"),
            "commit_p50_ratio_at_depth": side("depth", "p50"),
            "commit_p99_ratio_at_depth": side("depth", "p99"),
        },
        "summary": summary(runs),
        "runs": runs,
        "failover": fo,
    }
    json.dump(b, open(f"{res}/bench-replication.json", "w"), indent=1)
    return b


def fnum(x, unit=""):
    return "-" if x is None else f"{x:.1f}{unit}" if isinstance(x, float) else f"{x}{unit}"


def print_summary(b):
    """What tools/bench/replication prints of a bench-replication.json"""
    s, st = b["summary"], b["settings"]
    print(f"{st['rounds']} rounds; ALLOCs of new 64 KiB extents, {st['count_qd1']} at QD1 and "
          f"{st['count_depth']} at QD{st['depth']} per round and side; journals on the "
          f"guest's {st['journal']}; etcd TTL {st['etcd_ttl_s']} s, host lease {st['lease_ms']} ms")
    print(f"{'':28}{'single node':>24}{'group of three':>24}")
    for qd, label in (("qd1", "QD1"), ("depth", f"QD{st['depth']}")):
        for key, what in (("updates_per_s", "ALLOCs/s"), ("p50_us", "p50 us"), ("p99_us", "p99 us"),
                          ("max_us", "max us"), ("node_alloc_mean_us", "node's time/ALLOC us"),
                          ("journal_sync_mean_us", "journal write us"),
                          ("journal_batch_records_mean", "records/journal write"),
                          ("shipped_records_per_batch", "records/shipped batch"),
                          ("followers_journal_sync_mean_us", "followers' journal write us"),
                          ("cpu_us_per_alloc", "node's CPU/ALLOC us"),
                          ("followers_cpu_us_per_alloc", "followers' CPU/ALLOC us"),
                          ("etcd_cpu_us_per_alloc", "etcd's CPU/ALLOC us"),
                          ("guest_cpu_us_per_alloc", "guest's CPU/ALLOC us"),
                          ("guest_busy_fraction", "guest's CPUs busy")):
            print(f"{label + ' ' + what:28}{fnum(s['single'][qd].get(key)):>24}"
                  f"{fnum(s['group'][qd].get(key)):>24}")
    errs = sum(s[side][qd]["errors"] for side in SIDES for qd in ("qd1", "depth"))
    if errs:
        print(f"ALLOCs that failed: {errs} (not in the figures)")
    print(f"updates ratio (replicated / single, QD{st['depth']} ALLOCs/s): "
          f"{benchlib.fmt_ratio(b['ratios']['updates_ratio'])}")
    print(f"commit p50 ratio (replicated / single, QD1): "
          f"{benchlib.fmt_ratio(b['ratios']['commit_p50_ratio'])}")
    sr = b["side_ratios"]
    print(f"other ratios: QD1 p99 {fnum(sr['commit_p99_ratio'])}, QD1 ALLOCs/s "
          f"{fnum(sr['updates_ratio_qd1'])}, QD{st['depth']} p50 {fnum(sr['commit_p50_ratio_at_depth'])}"
          f", p99 {fnum(sr['commit_p99_ratio_at_depth'])}")
    q1 = s["single"]["qd1"], s["group"]["qd1"]
    if None not in (q1[0]["node_alloc_mean_us"], q1[1]["node_alloc_mean_us"]):
        print(f"where a QD1 commit goes (means, us): single node {q1[0]['node_alloc_mean_us']:.0f} "
              f"in mdnode (journal write {fnum(q1[0]['journal_sync_mean_us'])}), "
              f"{q1[0]['mean_us'] - q1[0]['node_alloc_mean_us']:.0f} in the transport and client; "
              f"replicated {q1[1]['node_alloc_mean_us']:.0f} in the leader "
              f"({q1[1]['node_alloc_mean_us'] - q1[0]['node_alloc_mean_us']:+.0f} against the single "
              f"node: the log's shipping, the followers' journal writes "
              f"{fnum(q1[1].get('followers_journal_sync_mean_us'))}, their DURABLE), "
              f"{q1[1]['mean_us'] - q1[1]['node_alloc_mean_us']:.0f} in the transport and client")
    fo = b["failover"]
    f = fo["failover_ms"]
    print(f"failover, kill -9 of the leader to the first change the new leader answered: "
          f"median {fnum(f['median'])} ms (min {fnum(f['min'])}, max {fnum(f['max'])}; "
          f"target <= {fo['target_ms']} ms: {'met' if fo['met'] else 'NOT met'}); "
          f"rounds {', '.join(fnum(x) for x in f['values'])}")
    a = fo["alloc_resume_ms"]
    print(f"kill to the first ALLOC the new leader answered (the old leases waited out): "
          f"median {fnum(a['median'])} ms; rounds {', '.join(fnum(x) for x in a['values'])}")
    print("where the failover goes (medians, ms):")
    for name, ms in fo["segments_ms"].items():
        print(f"  {name:14}{fnum(ms):>10}  {fo['segments_what'][name]}")
    for r in fo["rounds"]:
        print(f"  round {r['round']}: replica {r['killed']} killed, {r['new_leader']} took over; "
              + ", ".join(f"{k} {fnum(v)}" for k, v in r["stages_ms"].items()))
    print(f"what bounds it: {fo['bound']}")
