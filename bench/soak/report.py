#!/usr/bin/env python3
"""The soak's figures, verdict and report (run by bench/soak/run).

    report.py RAW.json META.tsv OUT_DIR

RAW.json is soak.py's output, META.tsv "key TAB value" lines (date,
command, machine, moonport). Writes OUT_DIR/SOAK.md (the RESULTS.md
section), OUT_DIR/soak.csv (one row per 10 s sample) and
OUT_DIR/soak-minutes.dat (errors per minute, for chart.gp).

Attribution of failed requests:

- to a killed worker: a mixed client's request that failed within 5 s
  after a kill, on a connection the killed worker held or had waiting in
  its accept queue when it was stopped (ss, by the client's port), or on
  one opened while it was stopped (or within 0.2 s after the kill) and
  never answered. These are upper bounds: the master holds every
  worker's listening socket, so its accept queue waits for the
  replacement, and a client reconnecting at once is not reset again. For wrk, which counts errors but not
  their connections, a run's socket errors are attributed up to twice the
  number of wrk connections the workers killed during that run held (the
  reset, and one reconnection reset); timeouts and non-2xx answers never
  are;
- to an upstream restart: a 502 from /upstream while the upstream was
  stopped or starting, or within a second after (the app answers 502 when
  its upstream cannot be reached, as it should);
- every other failure is unexplained, and fails the soak.
"""

import csv
import json
import os
import sys

KILL_WINDOW_S = 5
WRK_ERRORS_PER_KILLED_CONN = 2
UPSTREAM_MARGIN_S = 1
TREND_LIMIT_PCT = 1.0  # per 10 minutes, of the mean
MIN_TREND_MINUTES = 10  # shorter runs judge only a gross leak:
GROSS_LIMIT_PCT = 50  # warm-up and GC swings reach about 20% per 10 min there
ROLES = ("master", "worker1", "worker2", "upstream", "upstream-worker")


def fit_slope(points):
    """Least-squares slope of (x, y) points."""
    n = len(points)
    if n < 3:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def attribute(raw):
    """Each mixed-client failure gets .cause: 'killed', 'upstream' or
    'unexplained'; each wrk run its attributed and unexplained errors."""
    kills = raw["events"]["kill"]
    ups = raw["events"]["upstream"]
    for f in raw["mix"]["failures"]:
        f["cause"] = "unexplained"
        for k in kills:
            if not (k["t"] <= f["t"] <= k["t"] + KILL_WINDOW_S):
                continue
            opened_while_stopped = (f["opened_at"] is not None and not f["answered_before"]
                                    and k["t_stop"] <= f["opened_at"] <= k["t"] + 0.2)
            if f["port"] in k["ports"] or opened_while_stopped:
                f["cause"] = "killed"
                break
        if f["cause"] == "unexplained" and f["route"] == "/upstream" and f["status"] == 502:
            if any(u["t"] <= f["t"] <= u["t_ready"] + UPSTREAM_MARGIN_S for u in ups):
                f["cause"] = "upstream"
    for r in raw["wrk_runs"]:
        socket_errors = r["connect"] + r["read"] + r["write"]
        bound = WRK_ERRORS_PER_KILLED_CONN * sum(
            k["wrk_conns"] for k in kills if r["start"] <= k["t"] <= r["end"])
        r["killed"] = min(socket_errors, bound)
        r["unexplained"] = socket_errors - r["killed"] + r["status"] + r["timeout"]


def rows(raw):
    """One CSV row per sample, the load and failures of the 10 s before it."""
    t0 = raw["t0"]
    out = []
    prev = -1e9
    for s in raw["samples"]:
        t = s["t"]
        row = {"t_s": t}
        for role in ROLES:
            p = s["procs"].get(role, {})
            row[f"{role}_pid"] = p.get("pid", "")
            row[f"{role}_rss_kb"] = p.get("rss_kb", "")
            row[f"{role}_fds"] = p.get("fds", "")
        c = s["conns"]
        row["conn_estab"] = c.get("ESTAB", 0)
        row["conn_time_wait"] = c.get("TIME-WAIT", 0)
        row["conn_close_wait"] = c.get("CLOSE-WAIT", 0)
        row["conn_other"] = sum(v for k, v in c.items() if k not in ("ESTAB", "TIME-WAIT", "CLOSE-WAIT"))
        row["pool_upstream"] = s["pool_upstream"]
        row["pool_redis"] = s["pool_redis"]
        runs = [r for r in raw["wrk_runs"] if prev < r["end"] - t0 <= t]
        row["wrk_requests"] = sum(r["requests"] for r in runs)
        row["wrk_errors_killed"] = sum(r["killed"] for r in runs)
        row["wrk_errors_unexplained"] = sum(r["unexplained"] for r in runs)
        b = int(round(t / 10)) - 1
        row["mix_answers"] = sum(n for bb, _, n in raw["mix"]["counts"] if bb == b)
        fails = [f for f in raw["mix"]["failures"] if prev < f["t"] - t0 <= t]
        for cause in ("killed", "upstream", "unexplained"):
            row[f"mix_failed_{cause}"] = sum(f["n"] for f in fails if f["cause"] == cause)
        events = []
        for kind, evs in raw["events"].items():
            events += [kind for e in evs if prev < e["t"] - t0 <= t]
        row["events"] = " ".join(events)
        row["held_rotated_or_deleted"] = len(s["held"])
        out.append(row)
        prev = t
    return out


def fmt(n):
    return f"{n:,}"


def verdicts(raw, table):
    """[(criterion, threshold, figure, ok)], and the trend figures."""
    out = []
    minutes = raw["minutes"]
    start = minutes * 60 / 3
    trends = {}
    for role in ("master", "worker2"):
        pts = [(r["t_s"], r[f"{role}_rss_kb"]) for r in table
               if r["t_s"] >= start and r[f"{role}_rss_kb"] != ""]
        slope = fit_slope(pts)
        mean = sum(y for _, y in pts) / len(pts) if pts else 0
        pct = slope * 600 / mean * 100 if slope is not None and mean else None
        trends[role] = (slope, mean, pct)
        figure = "too few samples" if pct is None else \
            f"{pct:+.2f}% per 10 min ({slope * 60:+.1f} KiB/min, mean {mean / 1024:.1f} MiB)"
        limit = TREND_LIMIT_PCT if minutes >= MIN_TREND_MINUTES else GROSS_LIMIT_PCT
        ok = pct is not None and pct < limit
        if minutes < MIN_TREND_MINUTES and ok:
            ok = None  # too short to tell a slow leak from warm-up and GC swings
        out.append((f"RSS of {role.replace('worker2', 'worker 2')}, fit over the last 2/3",
                    f"< {limit:g}% per 10 min", figure, ok))
    qs, qe = raw["quiet_start"], raw["quiet_end"]
    for role in ("master", "worker2"):
        a, b = qs.get(role), qe.get(role)
        ok = a is not None and b is not None and a["fds"] == b["fds"]
        figure = f"{a['fds'] if a else '?'} → {b['fds'] if b else '?'}"
        if a and b and not ok:
            kinds = ", ".join(f"{k} {a[k]} → {b[k]}" for k in ("socket", "pipe", "anon", "file")
                              if a[k] != b[k])
            figure += f" ({kinds})"
        out.append((f"open files of {role.replace('worker2', 'worker 2')}, load stopped, start → end",
                    "equal", figure, ok))
    held = sum(len(e["held"]) for e in raw["events"]["usr1"]) + \
        sum(len(s["held"]) for s in raw["samples"])
    out.append(("rotated or deleted log files still open after SIGUSR1", "0", str(held), held == 0))
    left = qe.get("open_connections")
    cw = max((r["conn_close_wait"] for r in table), default=0)
    out.append(("connections on the port left open (any state but TIME-WAIT), load stopped",
                "0", f"{'?' if left is None else len(left)} (under load, CLOSE-WAIT at most {cw})",
                left == []))
    unexplained = sum(f["n"] for f in raw["mix"]["failures"] if f["cause"] == "unexplained") + \
        sum(r["unexplained"] for r in raw["wrk_runs"])
    out.append(("failed requests not attributed to a killed worker or an upstream restart",
                "0", fmt(unexplained), unexplained == 0))
    kills = raw["events"]["kill"]
    slow = [k for k in kills if k["replaced_s"] is None or k["replaced_s"] > 2]
    worst = max((k["replaced_s"] or 99 for k in kills), default=0)
    out.append(("killed workers replaced", "all, each within 2 s",
                f"{len(kills) - len(slow)} of {len(kills)}, slowest {worst:.2f} s", not slow and kills != []))
    saves = raw["events"]["save"]
    bad = [s for s in saves if s["reload_s"] is None or s["served_s"] is None]
    worst = max((s["reload_s"] + s["served_s"] for s in saves if s not in bad), default=0)
    out.append(("saves reloaded (new code served by every worker)", "all",
                f"{len(saves) - len(bad)} of {len(saves)}, slowest {worst:.2f} s", not bad and saves != []))
    usr1 = raw["events"]["usr1"]
    bad = [u for u in usr1 if u["reopen_s"] is None]
    out.append(("logs reopened on SIGUSR1 by every process", "all",
                f"{len(usr1) - len(bad)} of {len(usr1)}", not bad))
    ups = raw["events"]["upstream"]
    out.append(("upstream restarts", "done", f"{len(ups)}, each down "
                f"{max((u['t_ready'] - u['t'] for u in ups), default=0):.2f} s at most",
                all(u["exit"] == 0 for u in ups)))
    f = raw["final"]
    ok = (f["workers_answered"] == f["workers"] == 2 and f["version_served"] == 20
          and f["upstream_route"] == 200 and f["redis_route"] == 200
          and f["upstream_direct"] == 200 and f["sighup_reload_s"] is not None)
    out.append(("every process answers at the end",
                "both workers, the upstream and Redis answer; the master reloads on SIGHUP",
                f"workers {f['workers_answered']} of {f['workers']}, last save served "
                f"{f['version_served']} of 20, /upstream {f['upstream_route']}, /redis "
                f"{f['redis_route']}, SIGHUP reload "
                + ("yes" if f["sighup_reload_s"] is not None else "no"), ok))
    out.append(("master stops on SIGTERM", "exit status 0", str(f["stop_exit"]), f["stop_exit"] == 0))
    unexpected = unexpected_log_lines(raw)
    out.append(("error log lines other than the kills'", "0", str(len(unexpected)), not unexpected))
    out.append(("problems applying faults", "0", str(len(raw["problems"])), not raw["problems"]))
    return out, trends


def unexpected_log_lines(raw):
    out = []
    for line in raw["error_log"].splitlines():
        if "[error]" not in line and "[warn]" not in line:
            continue
        if "killed by signal 9" in line:
            continue
        out.append(line)
    return out


def minute_table(raw, table):
    lines = ["| minute | wrk requests | mixed answers | failed: killed worker | failed: upstream restart"
             " | failed: unexplained | RSS master (KiB) | RSS worker 2 (KiB) | open files master / worker 2 |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    dat = ["# minute killed upstream unexplained"]
    minutes = int(-(-raw["minutes"] // 1))
    for m in range(minutes):
        rs = [r for r in table if m * 60 < r["t_s"] <= (m + 1) * 60 + 0.5]
        if not rs:
            continue
        killed = sum(r["wrk_errors_killed"] + r["mix_failed_killed"] for r in rs)
        up = sum(r["mix_failed_upstream"] for r in rs)
        unex = sum(r["wrk_errors_unexplained"] + r["mix_failed_unexplained"] for r in rs)
        last = rs[-1]
        lines.append(f"| {m + 1} | {fmt(sum(r['wrk_requests'] for r in rs))} | "
                     f"{fmt(sum(r['mix_answers'] for r in rs))} | {killed} | {up} | {unex} | "
                     f"{fmt(last['master_rss_kb'] or 0)} | {fmt(last['worker2_rss_kb'] or 0)} | "
                     f"{last['master_fds']} / {last['worker2_fds']} |")
        dat.append(f"{m + 1} {killed} {up} {unex}")
    return "\n".join(lines), "\n".join(dat) + "\n"


def main():
    raw_path, meta_path, out_dir = sys.argv[1:4]
    with open(raw_path) as f:
        raw = json.load(f)
    meta = {}
    with open(meta_path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            meta[k] = v
    attribute(raw)
    table = rows(raw)
    with open(os.path.join(out_dir, "soak.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0].keys()))
        w.writeheader()
        w.writerows(table)
    checks, trends = verdicts(raw, table)
    minutes_md, dat = minute_table(raw, table)
    with open(os.path.join(out_dir, "soak-minutes.dat"), "w") as f:
        f.write(dat)

    passed = all(ok is not False for *_, ok in checks)
    unjudged = any(ok is None for *_, ok in checks)
    kills = raw["events"]["kill"]
    wrk_total = sum(r["requests"] for r in raw["wrk_runs"])
    mix_total = sum(n for *_, n in raw["mix"]["counts"])
    by_kind = {}
    for _, k, n in raw["mix"]["counts"]:
        by_kind[k] = by_kind.get(k, 0) + n
    fails = raw["mix"]["failures"]
    killed_mix = sum(f["n"] for f in fails if f["cause"] == "killed")
    killed_wrk = sum(r["killed"] for r in raw["wrk_runs"])
    bound_wrk = WRK_ERRORS_PER_KILLED_CONN * sum(k["wrk_conns"] for k in kills)
    up_fail = sum(f["n"] for f in fails if f["cause"] == "upstream")
    saves = raw["events"]["save"]
    T = raw["minutes"]
    md = [
        "## Soak with faults",
        "",
        f"Command: `{meta['command']}`, {meta['date']}; {meta['machine']}; {meta['moonport']}.",
        f"{T:g} minutes: 2 workers serving `bench/soak/app.lua` (the reference API of "
        "`scripts/api.lua` and routes to an upstream moonport and Redis), with access and error "
        f"logs; wrk at about {fmt(raw['rate'])} requests per second over {raw['wrk_connections']} "
        "connections, beside slow, pipelining, uploading and disconnecting clients (see "
        "bench/README.md). Faults: worker 1 SIGKILLed every 30 s, the app saved every 20 s, "
        "the logs rotated with SIGUSR1 every minute, the upstream restarted every 2 minutes. "
        "Nothing pinned; the machine's other load shares the cores."
        + (" A run this short proves the pipeline; the full run is `bench/soak/run` (30 minutes)."
           if T < 30 else ""),
        "",
        f"**Verdict: {'pass' if passed else 'FAIL'}**"
        + (f" (under {MIN_TREND_MINUTES} minutes the RSS trend is held to {GROSS_LIMIT_PCT}% per"
           " 10 min only, which catches a gross leak: over a few minutes warm-up and the garbage"
           " collector's swings outweigh a slow one)" if unjudged else ""),
        "",
        "| criterion | threshold | this run | |",
        "| --- | --- | --- | --- |",
    ]
    for crit, thr, fig, ok in checks:
        verdict = "met (gross leak only)" if ok is None else "met" if ok else "**not met**"
        md.append(f"| {crit} | {thr} | {fig} | {verdict} |")
    md += [
        "",
        f"Requests answered: {fmt(wrk_total)} by wrk, {fmt(mix_total)} by the mixed clients ("
        + ", ".join(f"{k} {fmt(v)}" for k, v in sorted(by_kind.items())) + "); "
        + f"{fmt(sum(raw['mix']['dropped'].values()))} connections dropped on purpose ("
        + ", ".join(f"{k} {fmt(v)}" for k, v in sorted(raw["mix"]["dropped"].items())) + "). "
        f"Lines in the access log: {fmt(raw['access_lines'])}.",
        "",
        f"Faults: {len(kills)} workers killed, holding {sum(len(k['ports']) for k in kills)} "
        f"connections in all ({sum(k['wrk_conns'] for k in kills)} of wrk's, {sum(k['mix_conns'] for k in kills)} of the "
        f"mixed clients'; each worker held stopped for at most "
        f"{max((k['t'] - k['t_stop'] for k in kills), default=0):.2f} s while `ss` listed them); "
        f"{len(saves)} saves ({sum(1 for s in saves if s['identical'])} identical); "
        f"{len(raw['events']['usr1'])} log rotations; {len(raw['events']['upstream'])} upstream "
        "restarts.",
        "",
        f"Failed requests: {killed_wrk + killed_mix} attributed to a killed worker ({killed_wrk} of "
        f"wrk's, at most {bound_wrk} allowed: two per killed connection; {killed_mix} of the mixed clients'); {up_fail} "
        "answered 502 by `/upstream` while the upstream restarted; "
        f"{sum(r['unexplained'] for r in raw['wrk_runs']) + sum(f['n'] for f in fails if f['cause'] == 'unexplained')}"
        " unexplained.",
        "",
        minutes_md,
        "",
        "![RSS, open files and failures over the soak](soak/soak.png)",
        "",
        "Every 10 s sample is in `soak/soak.csv`: RSS (KiB) and open files of each process "
        "(`master`, `worker1` with its pid changing at each kill, `worker2`, the upstream's), "
        "connections on the port by state, pooled connections to the upstream and Redis, the "
        "requests and failures of the 10 s before, and the faults applied.",
    ]
    unexpected = unexpected_log_lines(raw)
    unexplained = [f for f in fails if f["cause"] == "unexplained"]
    wrk_bad = [r for r in raw["wrk_runs"] if r["unexplained"]]
    left = raw["quiet_end"].get("open_connections") or []
    if unexplained or wrk_bad or unexpected or raw["problems"] or left:
        md += ["", "What went wrong (first lines):", "", "```"]
        for f in unexplained[:10]:
            md.append(f"{f['t'] - raw['t0']:.1f} s {f['kind']} {f['route']}: {f['error']} "
                      f"(port {f['port']}, answered before: {f['answered_before']})")
        for r in wrk_bad[:10]:
            md.append(f"wrk run {r['start'] - raw['t0']:.0f}-{r['end'] - raw['t0']:.0f} s: "
                      f"{r['unexplained']} errors unexplained (connect {r['connect']}, read "
                      f"{r['read']}, write {r['write']}, status {r['status']}, timeout {r['timeout']})")
        md += [f"left open: {c}" for c in left[:10]]
        md += unexpected[:10] + raw["problems"][:10] + ["```"]
    with open(os.path.join(out_dir, "SOAK.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("pass" if passed else "FAIL")


if __name__ == "__main__":
    main()
