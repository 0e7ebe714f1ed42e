#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine for the Slurm executor's
# tests (tests/slurm.rs), as root: munge, slurmctld and slurmd from Debian's
# packages (installed when missing), with a minimal slurm.conf written to
# /etc/slurm/slurm.conf only where the machine has none. Does nothing that is
# already done, so it is safe to run before every test run.
#
# The cluster: this machine as node `$(hostname -s)` at 127.0.0.1 (no DNS
# lookup is ever needed), one partition `debug` holding it, no accounting
# database (the executor does not need one), processes tracked without
# cgroups (proctrack/linuxproc, task/none: these VMs have no writable
# cgroup tree for slurmd), and memory enforced by jobacct_gather's
# OverMemoryKill, which ends a step over its --mem as OUT_OF_MEMORY.
# docs/slurm.md says how to point Jobdeck at an existing cluster instead.
set -euo pipefail
say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for tool in munged:munge slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if [ "${#missing[@]}" != 0 ]; then
  say "installing ${missing[*]} (a one-node Slurm for the tests)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

host="$(hostname -s)"
if [ ! -e /etc/slurm/slurm.conf ]; then
  say "writing /etc/slurm/slurm.conf (one node: $host)"
  cpus="$(nproc)"
  # What slurmd sees, less a little so the node is never "low memory".
  memory="$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')"
  memory=$((memory * 9 / 10))
  as_root mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
  as_root tee /etc/slurm/slurm.conf >/dev/null <<CONF
# Written by Jobdeck's scripts/slurm-up.sh for its tests: one node, no
# accounting database, no cgroups.
ClusterName=jobdeck-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
JobAcctGatherParams=OverMemoryKill
MinJobAge=600
KillWait=5
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
fi

if ! pgrep -x munged >/dev/null; then
  say "starting munged"
  as_root mkdir -p /run/munge
  as_root chown munge:munge /run/munge /etc/munge /var/lib/munge /var/log/munge
  as_root chmod 0755 /run/munge
  [ -e /etc/munge/munge.key ] || as_root runuser -u munge -- mungekey --create
  as_root runuser -u munge -- munged
fi
if ! pgrep -x slurmctld >/dev/null; then
  say "starting slurmctld"
  as_root mkdir -p /var/spool/slurmctld /var/log/slurm
  as_root slurmctld
fi
if ! pgrep -x slurmd >/dev/null; then
  say "starting slurmd"
  as_root mkdir -p /var/spool/slurmd /var/log/slurm
  as_root slurmd
fi

# Ready when the node takes jobs.
for _ in $(seq 150); do
  state="$(sinfo -h -n "$host" -o %T 2>/dev/null || true)"
  case "$state" in
    idle*|mixed*|allocated*) exit 0 ;;
    down*|drain*) as_root scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true ;;
  esac
  sleep 0.2
done
echo "slurm-up: node $host is not up (sinfo says '${state:-nothing}'); see /var/log/slurm/" >&2
exit 1
