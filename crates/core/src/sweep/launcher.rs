//! MPI ranks × OpenMP threads through the real launcher (`tune --launcher mpirun|srun`):
//! coretune does not start the copies itself but builds the launcher's command line for each
//! configuration — `--instances` ranks of `--threads` threads each — and times the whole launch.
//!
//! - **Open MPI's `mpirun`** places and binds the ranks: `-np P`, each rank on `T` cores of its own
//!   (`PE=T`) with `--bind-to core`, the ranks mapped `ppr:K:numa` (K per NUMA node) when P is a
//!   multiple of the nodes under the configuration's CPUs and the placement is left to the OS,
//!   round-robin over the nodes (`numa`) for `spread`, else one after another (`slot`); each rank's
//!   OpenMP threads on its cores (`-x OMP_NUM_THREADS=T -x OMP_PLACES=cores -x
//!   OMP_PROC_BIND=close`). Open MPI refuses to start as root unless told: coretune sets
//!   `OMPI_ALLOW_RUN_AS_ROOT=1` and `OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` for its runs when it is
//!   root (the apply line says so; it does not set them for you).
//! - **Slurm's `srun`**, inside an allocation: `--ntasks=P --cpus-per-task=T --cpu-bind=cores`,
//!   tasks in blocks on the sockets (`--distribution=block:block`, `block:cyclic` for `spread`),
//!   the same OpenMP variables through `--export=ALL,…`.
//!
//! A configuration that asks for more cores than there are is measured as the launcher runs it:
//! Open MPI refuses to bind more ranks than cores, and the run fails with its message.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::grid::{Config, ConfigError};
use crate::placement::Policy;
use crate::topology::{ObjKind, Topology};

/// Who starts a configuration's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// Open MPI's `mpirun`.
    Mpirun,
    /// Slurm's `srun`, inside an allocation.
    Srun,
}

impl Launcher {
    /// Every launcher, as the command line names them.
    pub const ALL: [&'static str; 2] = ["mpirun", "srun"];

    /// The launcher's words for configuration `c` on `topology` (before the program's), as a
    /// user would type them.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Launcher`] for a placement the launcher has no mapping for (round-robin,
    /// a CPU list), and the configuration's CPU set not resolving here.
    pub fn words(self, topology: &Topology, c: &Config) -> Result<Vec<String>, ConfigError> {
        let (p, t) = (c.instances.max(1), c.threads.max(1));
        let omp = [
            format!("OMP_NUM_THREADS={t}"),
            "OMP_PLACES=cores".to_owned(),
            "OMP_PROC_BIND=close".to_owned(),
        ];
        let spread = match c.place {
            Policy::Os | Policy::Compact | Policy::Cores => false,
            Policy::Spread => true,
            other => {
                return Err(ConfigError::Launcher(format!(
                    "{self} has no mapping for --place {other}: use os, compact, cores or spread"
                )));
            }
        };
        let mut words: Vec<String> = match self {
            Launcher::Mpirun => {
                let (cpus, _) = c
                    .cpus
                    .resolve(topology)
                    .map_err(|error| ConfigError::Cpus {
                        cpus: c.cpus.to_string(),
                        error,
                    })?;
                let set = cpus.unwrap_or_else(|| topology.cpuset());
                let nodes = topology
                    .indexes_intersecting(ObjKind::Numa, &set, false)
                    .len();
                let map = if spread {
                    format!("numa:PE={t}")
                } else if c.place == Policy::Os && nodes > 1 && p % nodes == 0 {
                    format!("ppr:{}:numa:PE={t}", p / nodes)
                } else {
                    format!("slot:PE={t}")
                };
                let mut w: Vec<String> = [
                    "mpirun",
                    "-np",
                    &p.to_string(),
                    "--map-by",
                    &map,
                    "--bind-to",
                    "core",
                ]
                .map(str::to_owned)
                .into();
                for v in omp {
                    w.push("-x".into());
                    w.push(v);
                }
                w
            }
            Launcher::Srun => {
                let distribution = if spread {
                    "block:cyclic"
                } else {
                    "block:block"
                };
                vec![
                    "srun".into(),
                    format!("--ntasks={p}"),
                    format!("--cpus-per-task={t}"),
                    "--cpu-bind=cores".into(),
                    format!("--distribution={distribution}"),
                    format!("--export=ALL,{}", omp.join(",")),
                ]
            }
        };
        words.shrink_to_fit();
        Ok(words)
    }

    /// The environment the launcher needs to start here: Open MPI's consent to run as root
    /// when coretune is root.
    pub fn env(self) -> Vec<(&'static str, &'static str)> {
        if self == Launcher::Mpirun && crate::sys::effective_uid() == 0 {
            vec![
                ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
            ]
        } else {
            Vec::new()
        }
    }
}

impl FromStr for Launcher {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mpirun" => Ok(Launcher::Mpirun),
            "srun" => Ok(Launcher::Srun),
            other => Err(format!("'{other}' is not a launcher: mpirun or srun")),
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Mpirun => "mpirun",
            Launcher::Srun => "srun",
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::grid::{Cpus, Mem, ThrottleSpec};
    use crate::topology::TopologySource;

    fn config(instances: usize, threads: usize, place: Policy, cpus: &str) -> Config {
        Config {
            threads,
            place,
            cpus: cpus.parse().unwrap_or(Cpus::All),
            throttle: ThrottleSpec::None,
            mem: Mem::Default,
            instances,
        }
    }

    #[test]
    fn each_configuration_gets_its_launchers_line() {
        let t = Topology::load(&TopologySource::Synthetic(
            "pack:2 numa:1 core:4 pu:2".into(),
        ))
        .unwrap();
        let line = |l: Launcher, c: &Config| l.words(&t, c).unwrap().join(" ");
        let omp = "-x OMP_NUM_THREADS=4 -x OMP_PLACES=cores -x OMP_PROC_BIND=close";
        // 2 ranks on 2 nodes: one per node.
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 4, Policy::Os, "all")),
            format!("mpirun -np 2 --map-by ppr:1:numa:PE=4 --bind-to core {omp}")
        );
        // 1 rank, or ranks within one node: one after another; spread: round-robin over nodes.
        assert_eq!(
            line(Launcher::Mpirun, &config(1, 4, Policy::Os, "all")),
            format!("mpirun -np 1 --map-by slot:PE=4 --bind-to core {omp}")
        );
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 4, Policy::Os, "numa:0")),
            format!("mpirun -np 2 --map-by slot:PE=4 --bind-to core {omp}")
        );
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 4, Policy::Spread, "all")),
            format!("mpirun -np 2 --map-by numa:PE=4 --bind-to core {omp}")
        );
        assert_eq!(
            line(Launcher::Srun, &config(2, 4, Policy::Os, "all")),
            "srun --ntasks=2 --cpus-per-task=4 --cpu-bind=cores --distribution=block:block \
             --export=ALL,OMP_NUM_THREADS=4,OMP_PLACES=cores,OMP_PROC_BIND=close"
        );
        let err = Launcher::Mpirun
            .words(&t, &config(2, 4, Policy::RoundRobin, "all"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mpirun has no mapping for --place round-robin"),
            "{err}"
        );
        assert_eq!("srun".parse::<Launcher>(), Ok(Launcher::Srun));
        assert!("mpiexec".parse::<Launcher>().is_err());
    }
}
