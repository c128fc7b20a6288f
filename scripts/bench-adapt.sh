#!/usr/bin/env bash
# `coretune adapt` from a bad start, against an offline `coretune tune` of the same program in
# the same conditions (BENCHMARKS.md, "Adapting a running program").
#
#   flock -x /work/wt/quiet.lock scripts/bench-adapt.sh          both, 240 s of adapt each
#   SECONDS_EACH=180 scripts/bench-adapt.sh builtin                 the built-in workload only
#   BIN=/path/to/coretune scripts/bench-adapt.sh nginx              another build
#
# builtin: two busy processes (`sh -c 'probe spin & probe spin; wait'`) started by adapt on CPU 0 of
#   two (the bad start), adapt's default interval (2 s) and figure (CPU progress: CPU seconds per
#   second of the tree); the offline tune runs the same program for 6 s on CPU 0 and on CPUs
#   0-1 (3 runs each), its figure the same: (user + sys) / wall of each run.
# nginx: nginx (2 workers) started by adapt --server with a quota of a tenth of a CPU (the bad
#   start), probed by a wrk burst after each 1 s interval (`wrk -t1 -c8 -d1s`, requests/s); the
#   offline tune measures nginx under the same wrk burst with no quota, 1 and 2 workers, 5 runs.
#
# From each adapt log: the time of the first accept (convergence), the figure at the end
# (median of the incumbent's hold intervals in the last minute) against the offline best, the
# settings changes per minute after the first accept, and the probe cost: the mean figure of
# every interval after convergence against that of the hold intervals alone (1 - ratio).
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_EACH=${SECONDS_EACH:-240}
WHICH=${1:-all}
for tool in python3 taskset; do
  command -v "$tool" >/dev/null || {
    echo "bench-adapt: $tool is not installed" >&2
    exit 1
  }
done
if [ -z "${BIN:-}" ]; then
  cargo build -q -p coretune --example probe >&2
  cargo build -q -p coretune >&2
  BIN=${CARGO_TARGET_DIR:-target}/debug/coretune
fi
PROBE=$(dirname "$BIN")/examples/probe
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The logs are kept: target/bench-adapt/{builtin,nginx}.jsonl and the tune folders.
keep=${CARGO_TARGET_DIR:-target}/bench-adapt
mkdir -p "$keep"

echo "commit $(git rev-parse --short HEAD), $(nproc) CPUs, loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The summary of an adapt log: convergence, the end's figure, changes per minute after it,
# the probe cost. Args: LOG OFFLINE_BEST LABEL.
summarise() {
  python3 - "$@" <<'EOF'
import json, statistics, sys
log, best, label = sys.argv[1], float(sys.argv[2]), sys.argv[3]
lines = [json.loads(l) for l in open(log)]
accepts = [l for l in lines if l["decision"] == "accept"]
first = accepts[0]["t_s"] if accepts else None
end = lines[-1]["t_s"]
inc = lines[-1]["incumbent"]
tail = [l["figure"] for l in lines
        if l["t_s"] > end - 60 and l["setting"] == inc and l["figure"] is not None]
final = statistics.median(tail) if tail else float("nan")
after = [l for l in lines if first is not None and l["t_s"] > first]
minutes = (end - first) / 60 if first is not None else 0
changes = len(accepts) - 1
per_min = changes / minutes if minutes > 0 else float("nan")
every = [l["figure"] for l in after if l["figure"] is not None]
hold = [l["figure"] for l in after if l["figure"] is not None and l["setting"] == l["incumbent"]]
probes = sum(1 for l in after if l["setting"] != l["incumbent"])
cost = 1 - statistics.mean(every) / statistics.mean(hold) if every and hold else float("nan")
start = lines[0]["setting"]
print(f"| {label} | {json.dumps(start)} | {first if first is None else round(first, 1)} s "
      f"| {json.dumps(inc)} | {final:.4g} | {best:.4g} | {final / best:.3f} "
      f"| {changes} in {minutes:.1f} min ({per_min:.2f}/min) "
      f"| {probes} of {len(after)} intervals, cost {cost * 100:.1f}% |")
EOF
}

header() {
  echo
  echo "| workload | bad start | first accept | incumbent at the end | its figure (last minute) | offline tune's best | ratio | changes after the first accept | probes after it, cost |"
  echo "|---|---|---|---|---|---|---|---|---|"
}

builtin() {
  # Offline: the same program, 6 s a run, on each CPU set; figure = CPU s per wall s.
  "$BIN" tune --cpus 0 --cpus 0-1 --place os --threads 2 --exhaustive --runs 3 --warmup 0 \
    --quiet --out "$work/tune-builtin" -- sh -c "$PROBE spin 6000 & $PROBE spin 6000; wait" \
    >/dev/null
  best=$(python3 - "$work/tune-builtin/runs.jsonl" <<'EOF'
import json, statistics, sys, collections
by = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    rec = r.get("record") or {}
    if r.get("status") != "ok":
        continue
    cfg = f"CPUs {r['cpus']} {r['place']}"
    by[cfg].append((rec["user_s"] + rec["sys_s"]) / rec["wall_s"])
for cfg, v in by.items():
    print(f"offline {cfg}: median {statistics.median(v):.3f} of {len(v)}", file=sys.stderr)
print(max(statistics.median(v) for v in by.values()))
EOF
)
  "$BIN" adapt --cpus 0 --duration "$SECONDS_EACH" --log "$work/builtin.jsonl" \
    -- sh -c "$PROBE spin 900000 & $PROBE spin 900000; wait" 2>"$work/builtin.err" || true
  grep -v '^ ' "$work/builtin.err" >&2 || true
  rm -rf "$keep/tune-builtin" && cp -r "$work/builtin.jsonl" "$work/tune-builtin" "$keep/"
  header
  summarise "$work/builtin.jsonl" "$best" "2 busy processes (CPU progress)"
}

nginx_bench() {
  command -v nginx >/dev/null && command -v wrk >/dev/null || {
    echo "bench-adapt: nginx and wrk are needed" >&2
    return 1
  }
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$work/nginx"
  cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
pid nginx.pid;
error_log stderr;
events {}
http {
access_log off;
client_body_temp_path body;
proxy_temp_path proxy;
fastcgi_temp_path fastcgi;
uwsgi_temp_path uwsgi;
scgi_temp_path scgi;
server { listen 127.0.0.1:$port; location / { return 200 "hello\n"; } }
}
EOF
  wrk="wrk -t1 -c8 -d1s http://127.0.0.1:$port/"
  rps='rps=Requests/sec:\s+([0-9.]+)'
  "$BIN" tune --server "nginx -p $work/nginx -c nginx.conf -g 'worker_processes {threads};'" \
    --ready "tcp:127.0.0.1:$port" --client "$wrk" --metric "$rps" --higher-is-better rps \
    --threads 1,2 --place os --exhaustive --runs 5 --warmup 1 --quiet \
    --out "$work/tune-nginx" >/dev/null
  best=$(python3 - "$work/tune-nginx/runs.jsonl" <<'EOF'
import json, statistics, sys, collections
by = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("status") != "ok":
        continue
    rec = r["record"]
    cfg = f"{r['threads']} workers {r['place']}"
    by[cfg].append(rec["metrics"]["rps"])
for cfg, v in by.items():
    print(f"offline {cfg}: median {statistics.median(v):.0f} of {len(v)}", file=sys.stderr)
print(max(statistics.median(v) for v in by.values()))
EOF
)
  "$BIN" adapt --server "nginx -p $work/nginx -c nginx.conf -g 'worker_processes 2;'" \
    --ready "tcp:127.0.0.1:$port" --quota 0.1 --probe "$wrk" --metric "$rps" \
    --interval 1 --duration "$SECONDS_EACH" --log "$work/nginx.jsonl" 2>"$work/nginx.err" || true
  grep -v '^ ' "$work/nginx.err" >&2 || true
  rm -rf "$keep/tune-nginx" && cp -r "$work/nginx.jsonl" "$work/tune-nginx" "$keep/"
  header
  summarise "$work/nginx.jsonl" "$best" "nginx under wrk (requests/s)"
}

case $WHICH in
  builtin) builtin ;;
  nginx) nginx_bench ;;
  all)
    builtin
    nginx_bench
    ;;
  *)
    echo "bench-adapt: builtin, nginx or all" >&2
    exit 2
    ;;
esac
echo
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
