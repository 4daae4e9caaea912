#!/bin/bash
# A `tprepro` that records each job's wall and CPU seconds, for benchmarks/stage_rates.py: put a link
# named `tprepro` to this file first on PATH, name the real one in TPREPRO_REAL and the record file in
# TPREPRO_JOB_TIMES, then run the pipeline (`snakemake --cores 2`). One JSON line per job: its arguments,
# wall seconds, and CPU seconds of the job and every process it started. Those come from a cgroup-v1
# cpuacct group of its own where one can be made (root; it counts processes nobody waits for, such as
# the Mathematics generator's forkserver workers), else from the shell's `times` (waited-for children only).
set -u
group=/sys/fs/cgroup/cpuacct/tprepro-job-$$
if mkdir "$group" 2>/dev/null && echo $$ > "$group/tasks" 2>/dev/null; then counter=cgroup; else counter=times; fi
start=$(date +%s.%N)
"$TPREPRO_REAL" "$@"
status=$?
end=$(date +%s.%N)
if [ "$counter" = cgroup ]; then
    cpu=$(awk '{printf "%.3f", $1 / 1e9}' "$group/cpuacct.usage")
    echo $$ > /sys/fs/cgroup/cpuacct/tasks
    rmdir "$group" 2>/dev/null
else
    record=$(mktemp)
    times > "$record"  # in this shell: line 2 is "<user>m<s>s <system>m<s>s" of its waited-for children
    cpu=$(tail -n 1 "$record" | python3 -c 'import re, sys; print(sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", sys.stdin.read())))')
    rm -f "$record"
fi
python3 -c 'import json, sys; s, e, st, cpu, how, *argv = sys.argv[1:]; print(json.dumps({"argv": argv, "wall_s": round(float(e) - float(s), 3), "cpu_s": float(cpu), "cpu_from": how, "status": int(st)}))' \
    "$start" "$end" "$status" "$cpu" "$counter" "$@" >> "$TPREPRO_JOB_TIMES"
exit $status
