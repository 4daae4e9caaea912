#!/usr/bin/env bash
# A real single-node SLURM for tests, from Debian's packages (slurmctld, slurmd,
# slurm-client, munge): the machine's CPUs and memory, one fake GPU declared through
# gres.conf, no cgroups, no accounting (jobs are queried with squeue).
#
#   tests/slurm/local_slurm.sh start  DIR   # writes DIR/slurm.conf, starts munged, slurmctld, slurmd
#   tests/slurm/local_slurm.sh status DIR   # sinfo of the running cluster
#   tests/slurm/local_slurm.sh stop   DIR   # cancels its jobs, stops the three daemons by PID
#
# Clients find the cluster through `export SLURM_CONF=DIR/slurm.conf` (printed by start).
# Keep DIR short (the munge socket path must fit in 107 bytes), e.g. `mktemp -d /tmp/slurm.XXXX`.
set -euo pipefail

usage() { echo "usage: $0 start|status|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
export SLURM_CONF=$dir/slurm.conf
daemons=(slurmd slurmctld munged)  # stop order
# Job steps launched inside a job lose SLURM_CONF (snakemake-executor-plugin-slurm-jobstep
# drops SLURM_* variables before its srun): srun then reads the slurmd's config cache,
# /run/slurm/conf, which this script points at DIR while the cluster runs.
conf_cache=/run/slurm/conf

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

write_config() {
  local node cpus sockets cores threads mem ctld_port slurmd_port
  node=$(hostname -s)
  # The machine's real topology and memory, as slurmd itself reports them.
  read -r cpus sockets cores threads mem < <(slurmd -C | awk '
    /^NodeName/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                  print v["CPUs"], v["SocketsPerBoard"], v["CoresPerSocket"], v["ThreadsPerCore"], v["RealMemory"] }')
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  cat > "$dir/slurm.conf" <<CONF
ClusterName=tprepro-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# A container has no usable cgroups: track processes through /proc, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
GresTypes=gpu
ReturnToService=2
# Completed jobs stay queryable by scontrol for a day, longer than the cluster lives (a slow run
# under load outlived 600 s). Not 0 (never purged): Snakemake then takes MinJobAge for too low and
# queries sacct, which a cluster without accounting cannot answer.
MinJobAge=86400
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus Boards=1 SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=$node Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$node Default=NO MaxTime=INFINITE State=UP
CONF
  # One fake GPU: no detection, a device file that exists everywhere.
  cat > "$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=$node Name=gpu File=/dev/null
CONF
}

alive() { [[ -s $dir/$1.pid ]] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

start() {
  for tool in munged mungekey slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || { echo "$tool not found: run \`make system-deps\`" >&2; exit 1; }
  done
  alive slurmctld && { echo "already running in $dir" >&2; exit 1; }
  if [[ -L $conf_cache ]] && ! kill -0 "$(cat "$(readlink "$conf_cache")/slurmctld.pid" 2>/dev/null)" 2>/dev/null; then
    rm -f "$conf_cache"  # left behind by a cluster that is gone
  fi
  if [[ -e $conf_cache || -L $conf_cache ]]; then
    echo "$conf_cache exists: another SLURM runs on this machine" >&2; exit 1
  fi
  write_config
  [[ -f $dir/munge.key ]] || mungekey --create --keyfile="$dir/munge.key"
  chmod 600 "$dir/munge.key"
  # --force: /tmp is world-writable, which munged would otherwise refuse.
  munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" --pid-file="$dir/munged.pid" \
         --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"
  mkdir -p "$(dirname "$conf_cache")"
  ln -s "$dir" "$conf_cache"
  slurmctld -i
  slurmd -N "$(hostname -s)"
  for _ in $(seq 60); do
    if [[ $(sinfo -h -o %t 2>/dev/null | sort -u) == idle ]]; then
      echo "export SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.5
  done
  echo "local SLURM did not become idle; logs in $dir/log" >&2
  sinfo -N -l >&2 || true
  stop
  exit 1
}

stop() {
  if alive slurmctld; then
    scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 20); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.5; done
  fi
  for daemon in "${daemons[@]}"; do
    alive "$daemon" || continue
    pid=$(cat "$dir/$daemon.pid")
    kill -TERM "$pid"
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  done
  rm -f "$dir"/{slurmd,slurmctld,munged}.pid
  [[ $(readlink "$conf_cache" 2>/dev/null) == "$dir" ]] && rm -f "$conf_cache"
  return 0
}

case $action in
  start) start ;;
  stop) stop ;;
  status) sinfo -N -o "%N %P %t %c %m %G" ;;
  *) usage ;;
esac
