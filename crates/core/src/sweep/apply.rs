//! Ready-to-paste lines that apply a configuration: the coretune command that repeats it, and
//! what other tools read (`taskset`, OpenMP's variables, rayon's and tokio's, systemd's
//! `CPUAffinity=`).

use super::config::Config;
use super::run::substitute_all;
use super::target::Target;
use crate::cpuset::format_list;
use crate::placement::Binding;
use crate::topology::{Topology, set_to_vec};
use crate::workload::Size;

/// The lines that apply `config` of a sweep of `target` on `topology` (empty when the
/// configuration cannot be placed there).
pub fn apply_lines(
    topology: &Topology,
    target: &Target,
    config: &Config,
    binding: Binding,
) -> Vec<String> {
    let Ok(placement) = config.placement(topology, binding) else {
        return Vec::new();
    };
    let n = config.threads;
    let cpus_flag = if config.cpus.is_all() {
        String::new()
    } else {
        format!(" --cpus '{}'", config.cpus)
    };
    let throttle_flag = if config.throttle.is_set() {
        format!(" --throttle {}", config.throttle)
    } else {
        String::new()
    };
    let list = format_list(&set_to_vec(&placement.union()));
    let restricted = config.is_restricted();
    let mut lines = Vec::new();
    match target {
        Target::Workload { spec, .. } => {
            let mut extra = String::new();
            if spec.size != Size::Default {
                extra.push_str(&format!(" --size {}", spec.size));
            }
            if let Some(r) = spec.rays {
                extra.push_str(&format!(" --rays {r}"));
            }
            lines.push(format!(
                "coretune bench {} --threads {n} --place {}{cpus_flag}{throttle_flag}{extra}",
                spec.name, config.place
            ));
        }
        Target::Command { argv, shell } => {
            let words = substitute_all(argv, config, &list);
            let cmd = if *shell {
                format!("sh -c '{}'", words.join(" "))
            } else {
                words.join(" ")
            };
            lines.push(format!(
                "coretune run --threads {n} --place {}{cpus_flag} -- {cmd}",
                config.place
            ));
            if restricted {
                lines.push(format!("taskset -c {list} {cmd}"));
            }
        }
    }
    let mut omp = format!("OMP_NUM_THREADS={n}");
    if let Some(places) = placement.omp_places() {
        omp.push_str(&format!(" OMP_PLACES='{places}'"));
    }
    omp.push_str(&format!(" OMP_PROC_BIND={}", placement.omp_proc_bind()));
    lines.push(omp);
    lines.push(format!("RAYON_NUM_THREADS={n} TOKIO_WORKER_THREADS={n}"));
    if restricted {
        lines.push(format!(
            "systemd unit: CPUAffinity={} (AllowedCPUs= for a slice)",
            list.replace(',', " ")
        ));
    }
    lines
}
