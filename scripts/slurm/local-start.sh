#!/bin/bash
# A real one-node Slurm cluster on 127.0.0.1, for the tests of `coretune tune --slurm`.
#
#   scripts/slurm/local-start.sh DIR [SLURMCTLD_PORT SLURMD_PORT]
#
# DIR (absolute) gets the configuration, munge key, state, spool and logs; clients then need
# SLURM_CONF=DIR/slurm.conf. The ports (default 16817, 16818) listen on localhost only. Two
# partitions, alpha (the default) and beta, cover the one node: they stand for two node types.
# No accounting (no sacct): jobs are followed with squeue / scontrol. Needs root and Debian 12's
# slurmctld, slurmd, slurm-client and munge (scripts/setup.sh --test installs them). Stop it with
# scripts/slurm/local-stop.sh DIR.
set -euo pipefail
D=${1:?usage: local-start.sh DIR [SLURMCTLD_PORT SLURMD_PORT]}
CTLD_PORT=${2:-16817}
SLURMD_PORT=${3:-16818}
case $D in /*) ;; *) echo "local-start.sh: DIR must be absolute" >&2; exit 2 ;; esac
mkdir -p "$D"/{munge,state,spool,log}
chmod 755 "$D" "$D/munge"
NCPU=$(nproc)
[ -f "$D/munge/munge.key" ] || {
  dd if=/dev/urandom of="$D/munge/munge.key" bs=1 count=128 status=none
  chmod 400 "$D/munge/munge.key"
}
cat > "$D/slurm.conf" <<CONF
ClusterName=coretune-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pidfile
SlurmdPidFile=$D/slurmd.pidfile
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$NCPU Sockets=1 CoresPerSocket=$NCPU ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=alpha Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=beta Nodes=localhost MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf
munged -F --key-file="$D/munge/munge.key" --socket="$D/munge/munge.sock" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/seed" \
  >"$D/log/munged.out" 2>&1 &
echo $! > "$D/munged.pid"
for _ in $(seq 50); do [ -S "$D/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 &
echo $! > "$D/slurmctld.pid"
slurmd -D -N localhost -f "$SLURM_CONF" >"$D/log/slurmd.out" 2>&1 &
echo $! > "$D/slurmd.pid"
for _ in $(seq 150); do
  sinfo -h -o %t 2>/dev/null | grep -qx idle && exit 0
  sleep 0.2
done
echo "local-start.sh: the cluster did not become idle; see $D/log/" >&2
exit 1
