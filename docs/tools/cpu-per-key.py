#!/usr/bin/env python3
"""Server CPU per key of dedupd and of its raw SQL baseline (docs/performance.md).

    docs/tools/cpu-per-key.py BINDIR DATABASE [DURATION] [SCENARIOS] ["EXTRA DEDUPD FLAGS"]

Starts BINDIR/dedupd on the PostgreSQL database DATABASE (127.0.0.1:5432,
user postgres, migrated first), runs BINDIR/dedupctl bench one scenario at a
time (32 callers, --batch-size 100, with the baseline on the same database)
and prints one JSON line per scenario: keys/s of both sides, and the CPU per
key of each side's servers, read from /proc: dedupd's process plus the
PostgreSQL backends serving it (application_name=dedupd), and the backends of
the baseline (application_name=baseline). The load generator's CPU, and
PostgreSQL's background processes (WAL writer, checkpointer), are not
counted. Linux only."""
import json, os, subprocess, sys, time, re

BIN = sys.argv[1]
DB = sys.argv[2]
DUR = sys.argv[3] if len(sys.argv) > 3 else "10s"
SCEN = (sys.argv[4] if len(sys.argv) > 4 else "claim-new,replay,claim-batch,cycle-batch,replay-batch").split(",")
EXTRA = sys.argv[5].split() if len(sys.argv) > 5 else []
HZ = os.sysconf("SC_CLK_TCK")
base = f"postgres://postgres@127.0.0.1:5432/{DB}"

def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / HZ
    except FileNotFoundError:
        return None

def backends(app):
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", DB, "-Atc",
        f"SELECT pid FROM pg_stat_activity WHERE application_name = '{app}'"], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]

class Sampler:
    """Tracks the CPU of the backends of one application_name: a backend
    first seen during the run counts from 0, and its last reading stands
    after it exits."""
    def __init__(self, app):
        self.app, self.start, self.last = app, {}, {}
        for p in backends(app):
            self.start[p] = self.last[p] = cpu(p) or 0.0
    def sample(self):
        for p in backends(self.app):
            self.start.setdefault(p, 0.0)
        for p in self.start:
            c = cpu(p)
            if c is not None:
                self.last[p] = c
    def used(self):
        return sum(self.last.get(p, self.start[p]) - self.start[p] for p in self.start)

subprocess.run([f"{BIN}/dedupd", "migrate", "--database-url", base], check=True, capture_output=True)
ready = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"cpu-per-key-ready-{os.getpid()}")
srv = subprocess.Popen([f"{BIN}/dedupd", "serve", "--database-url", base + "?application_name=dedupd",
    "--listen", "127.0.0.1:0", "--log-level", "warn", "--ready-file", ready] + EXTRA,
    stderr=subprocess.DEVNULL)
while not os.path.exists(ready):
    time.sleep(0.2)
addr = open(ready).readline().strip()
results = []
try:
    for s in SCEN:
        svc, bas = Sampler("dedupd"), Sampler("baseline")
        d0 = cpu(srv.pid)
        proc = subprocess.Popen([f"{BIN}/dedupctl", "--server", addr, "bench", "--scenarios", s, "-c", "32",
            "--batch-size", "100", "-d", DUR, "--baseline-database-url", base + "?application_name=baseline", "-o", "json"],
            stdout=subprocess.PIPE, stderr=open(os.devnull, "w"), text=True)
        d1 = d0
        while proc.poll() is None:
            svc.sample(); bas.sample(); d1 = cpu(srv.pid)
            time.sleep(0.25)
        out_text = proc.stdout.read()
        if proc.returncode != 0:
            print("dedupctl failed", file=sys.stderr); sys.exit(1)
        svc.sample(); d1 = cpu(srv.pid)
        pg_svc, pg_base = svc.used(), bas.used()
        r = json.loads(out_text)["scenarios"][0]
        k = r["keys_per_op"]
        sk = r["service"]["ops"] * k; bk = r["baseline"]["ops"] * k
        row = dict(scenario=s, keys_per_op=k,
            dedupd_keys_s=r["service"]["per_second"] * k, baseline_keys_s=r["baseline"]["per_second"] * k,
            dedupd_cpu_us_per_key=1e6 * ((d1 - d0) + pg_svc) / sk, dedupd_proc_us=1e6 * (d1 - d0) / sk,
            dedupd_pg_us=1e6 * pg_svc / sk, baseline_cpu_us_per_key=1e6 * pg_base / bk,
            p50_ms=r["service"]["p50_ms"], base_p50_ms=r["baseline"]["p50_ms"],
            errors=r["service"]["errors"] + r["baseline"]["errors"])
        results.append(row)
        print(json.dumps(row), flush=True)
finally:
    srv.terminate(); srv.wait()
    if os.path.exists(ready):
        os.remove(ready)
