//! Ready-to-paste lines that apply a configuration: the coretune command that repeats it, what
//! other tools read (`taskset`, OpenMP's variables, rayon's, tokio's, Go's and the BLAS
//! libraries', the JVM's `-XX:ActiveProcessorCount` for `java`, nginx's `worker_processes` and
//! `worker_cpu_affinity` for `nginx`, systemd's `CPUAffinity=`), and what schedulers and containers take (Slurm's `#SBATCH` and `srun`,
//! Kubernetes' CPU resources, `docker run`).
//!
//! # Schedulers and containers
//!
//! A configuration needs *C* CPUs: the CPUs its threads are pinned to or limited to, or — left
//! to the OS on the whole machine — as many CPUs as it has threads (at most the machine's PUs).
//!
//! - **Slurm** allocates `--cpus-per-task=C` to one task; `--hint=nomultithread` when the
//!   configuration keeps to one PU per core on a machine with SMT, `--hint=multithread` when it
//!   uses siblings (no hint without SMT). A configuration left to the OS is bound with
//!   `srun --cpu-bind=cores` (the task may use the cores it was given, the kernel places its
//!   threads). One that names CPUs is bound with `mask_cpu:` (one process, its threads on those
//!   CPUs, OpenMP's places inside) or `map_cpu:` (one single-threaded process per thread, as
//!   MPI ranks are). Slurm refuses a bind outside the CPUs the *step* owns ("CPU binding outside
//!   of job step allocation"), so those lines ask for the whole node (`--exclusive`) and give
//!   the step every CPU of the job (`srun --whole`).
//! - **Kubernetes** with the kubelet's *static* CPU manager policy gives a container of a
//!   Guaranteed pod (requests equal to limits, for memory too) that asks for a whole number of
//!   CPUs that many CPUs of its own, which no other container uses; the kubelet chooses which,
//!   so CPU numbers do not carry over, the count and the threads do.
//! - **Docker** pins a container with `--cpuset-cpus` (the CPU numbers of the host), or limits
//!   its CPU time with `--cpus` for a configuration left to the OS.
//!
//! # Windows
//!
//! A sweep made on Windows (its topology is a Windows machine's) gets Windows lines instead of
//! the Linux and cluster ones: `coretune run`, `start /affinity` and PowerShell's
//! `ProcessorAffinity` within processor group 0, `coretune run --cpus 'win:…'` for another group
//! or across groups ([`crate::topology::groups::windows_lines`]), and the runtimes' variables set the
//! PowerShell way (`$env:NAME=VALUE`).

use super::launcher::Launcher;
use super::run::{substitute_all, substitute_copy};
use super::target::{RunSettings, Target};
use crate::cpuset::Format;
use crate::grid::Config;
use crate::placement::{Binding, Placement};
use crate::sys::format_list;
use crate::sys::set_to_vec;
use crate::topology::ObjKind;
use crate::topology::Topology;
use crate::workload::{Size, WorkloadSpec};

/// The lines that apply `config` of a sweep made with `settings`: [`apply_lines`], or under a
/// launcher (`--launcher`) its command lines, Open MPI's and Slurm's.
pub fn apply_lines_for(
    topology: &Topology,
    target: &Target,
    config: &Config,
    settings: &RunSettings,
) -> Vec<String> {
    match (settings.launcher, target) {
        (Some(launcher), Target::Command { argv, shell }) => {
            let list = format_list(&set_to_vec(&topology.cpuset()));
            let words = substitute_all(argv, config, &list);
            let program = if *shell {
                sh_c(&words.join(" "))
            } else {
                shell_words(&words)
            };
            let mut lines = Vec::new();
            // The sweep's launcher first, then the other one's line for the same split.
            let order = match launcher {
                Launcher::Mpirun => [Launcher::Mpirun, Launcher::Srun],
                Launcher::Srun => [Launcher::Srun, Launcher::Mpirun],
            };
            for l in order {
                if let Ok(mut words) = l.words(topology, config) {
                    // As root, the line says Open MPI may start (coretune's own runs get the
                    // same consent through the environment).
                    if let Some(consent) = l.consent() {
                        words.insert(1, consent.to_owned());
                    }
                    if l == Launcher::Srun {
                        lines.push(format!(
                            "#SBATCH --nodes=1 --ntasks={} --cpus-per-task={}",
                            config.family.instances, config.threads
                        ));
                    }
                    lines.push(format!("{} {program}", shell_words(&words)));
                }
            }
            lines
        }
        _ => apply_lines(topology, target, config, settings.binding),
    }
}

/// The lines that apply `config` of a sweep of `target` on `topology` (empty when the
/// configuration cannot be placed there).
pub fn apply_lines(
    topology: &Topology,
    target: &Target,
    config: &Config,
    binding: Binding,
) -> Vec<String> {
    if config.family.instances > 1 {
        return instance_lines(topology, target, config, binding);
    }
    let Ok(placement) = config.placement(topology, binding) else {
        return Vec::new();
    };
    let n = config.threads;
    let cpus_flag = if config.family.cpus.is_all() {
        String::new()
    } else {
        format!(" --cpus '{}'", config.family.cpus)
    };
    let throttle_flag = if config.family.throttle.is_set() {
        format!(" --throttle {}", config.family.throttle)
    } else {
        String::new()
    };
    let list = format_list(&set_to_vec(&placement.union()));
    let restricted = config.is_restricted();
    let windows = crate::topology::groups::is_windows(topology);
    let mut lines = Vec::new();
    // The memory policy: `coretune run --mem`, and numactl's form (the whole process's policy,
    // which a built-in workload's workers inherit as well).
    let mem = config
        .family
        .mem
        .policy()
        .and_then(|p| p.plan(topology, &placement.union(), false).ok());
    let mem_flag = if config.family.mem.is_default() {
        String::new()
    } else {
        format!(" --mem {}", config.family.mem)
    };
    let cmd = match target {
        Target::Workload { spec, .. } => {
            let extra = workload_flags(spec);
            let cmd = format!(
                "coretune bench {} --threads {n} --place {}{cpus_flag}{throttle_flag}{extra}",
                spec.name, config.family.place
            );
            lines.push(cmd.clone());
            if let Some(mem) = &mem {
                lines.push(format!("numactl {} {cmd}", mem.numactl()));
            }
            cmd
        }
        Target::Command { argv, shell } => {
            let words = substitute_all(argv, config, &list);
            let cmd = match (*shell, windows) {
                (true, false) => sh_c(&words.join(" ")),
                (true, true) => format!("cmd /C \"{}\"", words.join(" ")),
                (false, false) => shell_words(&words),
                (false, true) => words.join(" "),
            };
            lines.push(format!(
                "coretune run --threads {n} --place {}{cpus_flag}{mem_flag} -- {cmd}",
                config.family.place
            ));
            match &mem {
                Some(mem) if restricted => lines.push(format!(
                    "numactl --physcpubind={list} {} {cmd}",
                    mem.numactl()
                )),
                Some(mem) => lines.push(format!("numactl {} {cmd}", mem.numactl())),
                None if restricted && !windows => lines.push(format!("taskset -c {list} {cmd}")),
                None => {}
            }
            cmd
        }
    };
    if windows {
        lines.extend(windows_lines(topology, config, &placement, &cmd));
        return lines;
    }
    let mut omp = format!("OMP_NUM_THREADS={n}");
    if let Some(places) = placement.omp_places() {
        omp.push_str(&format!(" OMP_PLACES='{places}'"));
    }
    omp.push_str(&format!(" OMP_PROC_BIND={}", placement.omp_proc_bind()));
    lines.push(omp);
    lines.push(format!("RAYON_NUM_THREADS={n} TOKIO_WORKER_THREADS={n}"));
    lines.push(format!(
        "GOMAXPROCS={n} OPENBLAS_NUM_THREADS={n} MKL_NUM_THREADS={n}"
    ));
    if let Target::Command { argv, .. } = target {
        lines.extend(runtime_lines(argv, n, &placement, restricted));
    }
    if restricted {
        lines.push(format!(
            "systemd unit: CPUAffinity={} (AllowedCPUs= for a slice)",
            list.replace(',', " ")
        ));
    }
    lines.extend(scheduler_lines(topology, config, &placement, &cmd));
    let union = placement.union();
    let pus = union.weight().unwrap_or(0);
    let usable = topology.cpuset().weight().unwrap_or(0);
    if restricted && union.is_set(0) && pus < usable {
        // CPU 0 was a choice here, not a given: say what it costs, as `cpus` warns.
        lines.push(
            "note: these CPUs include CPU 0, where the kernel runs much of its housekeeping and \
             many interrupts; to keep it free, measure --cpus 'all ~pu:0' too"
                .to_owned(),
        );
    }
    if n > pus {
        lines.push(format!(
            "note: {n} threads on {pus} PU{}: oversubscribed — it measured fastest, with the \
             threads taking turns on the PUs; fewer threads within the tolerance would be \
             recommended instead",
            if pus == 1 { "" } else { "s" }
        ));
    }
    lines
}

/// The lines for a configuration of several instances, each on its part of the CPUs
/// ([`Config::parts`]): every instance started in the background and waited for, the way
/// `coretune run`, `numactl` or `taskset` would each start one; the runtimes' variables (per
/// instance); Slurm's tasks, one per instance on its part's CPUs (`--cpu-bind=mask_cpu:` lists
/// a mask per task); a systemd template unit, an instance per part with its `CPUAffinity=`
/// (and `NUMAPolicy=`/`NUMAMask=` for a memory policy).
fn instance_lines(
    topology: &Topology,
    target: &Target,
    config: &Config,
    binding: Binding,
) -> Vec<String> {
    let Ok(placements) = config.placements(topology, binding) else {
        return Vec::new();
    };
    let (n, p) = (config.threads, config.family.instances);
    let throttle_flag = if config.family.throttle.is_set() {
        format!(" --throttle {}", config.family.throttle)
    } else {
        String::new()
    };
    let mem_flag = if config.family.mem.is_default() {
        String::new()
    } else {
        format!(" --mem {}", config.family.mem)
    };
    let windows = crate::topology::groups::is_windows(topology);
    let mut coretune = Vec::new();
    let mut numactl = Vec::new();
    let mut units = Vec::new();
    for (k, placement) in placements.iter().enumerate() {
        let union = placement.union();
        let list = format_list(&set_to_vec(&union));
        let mem = config
            .family
            .mem
            .policy()
            .and_then(|m| m.plan(topology, &union, false).ok());
        let cmd = match target {
            // The copy's threads and placement; its CPUs are the taskset's or numactl's.
            Target::Workload { spec, .. } => format!(
                "coretune bench {} --threads {n} --place {}{throttle_flag}{}",
                spec.name,
                config.family.place,
                workload_flags(spec)
            ),
            Target::Command { argv, shell } => {
                let words: Vec<String> = argv
                    .iter()
                    .map(|a| substitute_copy(a, config, &list, k))
                    .collect();
                match (*shell, windows) {
                    (true, false) => sh_c(&words.join(" ")),
                    (true, true) => format!("cmd /C \"{}\"", words.join(" ")),
                    (false, false) => shell_words(&words),
                    (false, true) => words.join(" "),
                }
            }
        };
        match target {
            Target::Workload { spec, .. } => coretune.push(format!(
                "coretune bench {} --threads {n} --place {} --cpus '{list}'{throttle_flag}{} &",
                spec.name,
                config.family.place,
                workload_flags(spec)
            )),
            Target::Command { .. } => coretune.push(format!(
                "coretune run --threads {n} --place {} --cpus '{list}'{mem_flag} -- {cmd} &",
                config.family.place
            )),
        }
        let mem_numactl = mem.as_ref().map(|m| format!(" {}", m.numactl()));
        numactl.push(match &mem_numactl {
            Some(m) => format!("numactl --physcpubind={list}{m} {cmd} &"),
            None => format!("taskset -c {list} {cmd} &"),
        });
        let mut unit = format!("CPUAffinity={}", list.replace(',', " "));
        if let Some(mem) = &mem {
            unit.push_str(&mem.systemd());
        }
        units.push(format!("systemd unit instance @{k}: {unit}"));
    }
    let mut lines = vec![parts_note(topology, &placements)];
    lines.extend(coretune);
    lines.push("wait   # all instances at once, as measured".to_owned());
    if !windows {
        lines.extend(numactl);
        lines.push("wait".to_owned());
    }
    lines.push(format!(
        "OMP_NUM_THREADS={n} OMP_PROC_BIND={} RAYON_NUM_THREADS={n} GOMAXPROCS={n}   # in each instance",
        placements[0].omp_proc_bind()
    ));
    if windows {
        return lines;
    }
    lines.extend(units);
    lines.push(format!(
        "systemd: a template unit APP@.service started as APP@0 … APP@{}, each with its drop-in \
         (systemctl edit APP@K) setting the line above",
        p - 1
    ));
    let per_task = placements
        .iter()
        .map(|pl| pl.union().weight().unwrap_or(0))
        .max()
        .unwrap_or(1)
        .max(1);
    let masks: Vec<String> = placements
        .iter()
        .map(|pl| {
            Format::Taskset
                .render(&pl.union())
                .unwrap_or_else(|_| "0x0".to_owned())
        })
        .collect();
    lines.push(format!(
        "#SBATCH --nodes=1 --ntasks={p} --cpus-per-task={per_task} --exclusive"
    ));
    let program = match target {
        Target::Workload { spec, .. } => format!(
            "coretune bench {} --threads {n} --place {}{}",
            spec.name,
            config.family.place,
            workload_flags(spec)
        ),
        Target::Command { argv, shell: true } => {
            // A script: run by a shell of each task's own, which expands $SLURM_PROCID and the
            // task's CPU list.
            let script = argv
                .join(" ")
                .replace("{instance}", "$SLURM_PROCID")
                .replace("{cpus}", TASK_CPUS);
            sh_c(&substitute_copy(&script, config, "", 0))
        }
        Target::Command { argv, shell: false } => {
            // Each task is told its index and its CPUs by Slurm and by the kernel, not by
            // coretune: `{instance}` is $SLURM_PROCID, `{cpus}` its affinity list, expanded by
            // a shell of each task's own.
            let mut dynamic = false;
            let words: Vec<String> = argv
                .iter()
                .map(|a| {
                    let marked = a.replace("{instance}", "\0I").replace("{cpus}", "\0C");
                    let word = substitute_copy(&marked, config, "", 0);
                    if word.contains('\0') {
                        dynamic = true;
                        format!(
                            "\"{}\"",
                            word.replace('"', "\\\"")
                                .replace("\0I", "$SLURM_PROCID")
                                .replace("\0C", TASK_CPUS)
                        )
                    } else {
                        crate::program::shell_quote(&word)
                    }
                })
                .collect();
            let line = words.join(" ");
            if dynamic {
                format!("sh -c {}", crate::program::shell_quote(&line))
            } else {
                line
            }
        }
    };
    lines.push(format!(
        "srun --whole --ntasks={p} --cpus-per-task={per_task} --cpu-bind=mask_cpu:{} {program}   \
         # {p} tasks, each on its part",
        masks.join(",")
    ));
    lines
}

/// What a Slurm task's shell expands to its CPU list (`{cpus}` in an srun line).
const TASK_CPUS: &str = "$(taskset -cp $$ | cut -d: -f2 | tr -d ' ')";

/// `sh -c '…'` running `script`, its single quotes escaped.
fn sh_c(script: &str) -> String {
    format!("sh -c '{}'", script.replace('\'', r"'\''"))
}

/// A program's words as a POSIX shell line, each quoted where it needs to be.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| crate::program::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the instances' parts are: `note: 2 instances, one per NUMA node: CPUs 0-3 | 4-7` —
/// the first level (NUMA node, L3, core, PU) whose objects the parts take one each — or just
/// their CPUs.
fn parts_note(topology: &Topology, placements: &[Placement]) -> String {
    let parts: Vec<_> = placements.iter().map(Placement::union).collect();
    let lists: Vec<String> = parts.iter().map(|p| format_list(&set_to_vec(p))).collect();
    let one_each = [
        (ObjKind::Numa, "NUMA node"),
        (ObjKind::L3, "L3 cache"),
        (ObjKind::Core, "core"),
        (ObjKind::Pu, "PU"),
    ]
    .into_iter()
    .find(|(kind, _)| {
        let mut seen = std::collections::BTreeSet::new();
        parts.iter().all(|p| {
            let objects = topology.indexes_intersecting(*kind, p, false);
            objects.len() == 1 && seen.insert(objects[0])
        })
    });
    let how = one_each.map_or(String::new(), |(_, name)| format!(", one per {name}"));
    format!(
        "note: {} instances{how}: CPUs {}",
        parts.len(),
        lists.join(" | ")
    )
}

/// The lines for the program's own runtime, named by its first word: the JVM's processor count
/// (`java`), nginx's worker processes and their CPUs (`nginx`, whose workers are processes).
fn runtime_lines(
    argv: &[String],
    n: usize,
    placement: &Placement,
    restricted: bool,
) -> Vec<String> {
    // The program's name: the first word (a `--shell` or `--server` command is one string).
    let program = argv
        .first()
        .and_then(|a| a.split_whitespace().next())
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|a| a.to_str())
        .unwrap_or("");
    match program {
        "java" => vec![format!(
            "JVM: java -XX:ActiveProcessorCount={n} (sizes the GC and ForkJoin common pool)"
        )],
        "nginx" => {
            let affinity = if placement.is_pinned() {
                let masks: Vec<String> = placement
                    .threads
                    .iter()
                    .map(|t| nginx_mask(&t.pus, placement))
                    .collect();
                format!(" worker_cpu_affinity {};", masks.join(" "))
            } else if restricted {
                let union = set_to_vec(&placement.union());
                format!(
                    " worker_cpu_affinity auto {};",
                    nginx_mask(&union, placement)
                )
            } else {
                String::new()
            };
            vec![format!("nginx.conf: worker_processes {n};{affinity}")]
        }
        _ => Vec::new(),
    }
}

/// One nginx `worker_cpu_affinity` mask: a binary string, CPU 0 the rightmost digit, as wide
/// as the placement's highest CPU so that the masks line up.
fn nginx_mask(cpus: &[usize], placement: &Placement) -> String {
    let width = placement
        .threads
        .iter()
        .flat_map(|t| t.pus.iter())
        .max()
        .map_or(1, |&max| max + 1);
    (0..width)
        .rev()
        .map(|cpu| if cpus.contains(&cpu) { '1' } else { '0' })
        .collect()
}

/// The Windows lines (module docs): where the configuration names CPUs, how to start the program
/// on them; then the runtimes' variables as PowerShell sets them.
fn windows_lines(
    topology: &Topology,
    config: &Config,
    placement: &Placement,
    cmd: &str,
) -> Vec<String> {
    let n = config.threads;
    let mut lines = Vec::new();
    if config.is_restricted() {
        let groups = crate::topology::groups::ProcessorGroups::of(topology);
        lines.extend(crate::topology::groups::windows_lines(
            &groups,
            &set_to_vec(&placement.union()),
            cmd,
        ));
    }
    let mut env = format!("PowerShell: $env:OMP_NUM_THREADS={n}");
    if let Some(places) = placement.omp_places() {
        env.push_str(&format!("; $env:OMP_PLACES='{places}'"));
    }
    env.push_str(&format!(
        "; $env:OMP_PROC_BIND='{}'; $env:RAYON_NUM_THREADS={n}; $env:TOKIO_WORKER_THREADS={n}",
        placement.omp_proc_bind()
    ));
    lines.push(env);
    lines
}

/// `bench`'s options that make its workload the one the sweep measured: the size and every
/// parameter set (a recommendation for `--count 1000` must not be run at the default count).
fn workload_flags(spec: &WorkloadSpec) -> String {
    let mut flags = Vec::new();
    if spec.size != Size::Default {
        flags.push(format!("--size {}", spec.size));
    }
    let numbers = [
        ("rays", spec.rays.map(|v| v as u64)),
        ("mib", spec.mib.map(|v| v as u64)),
        ("tasks", spec.tasks.map(|v| v as u64)),
        ("compute-us", spec.compute_us),
        ("block-us", spec.block_us),
        ("count", spec.count),
        ("repeat", spec.repeat),
        ("items", spec.items.map(|v| v as u64)),
    ];
    for (flag, value) in numbers {
        if let Some(v) = value {
            flags.push(format!("--{flag} {v}"));
        }
    }
    if let Some(pool) = &spec.pool {
        flags.push(format!("--pool {pool}"));
    }
    if spec.batch {
        flags.push("--batch".into());
    }
    flags.iter().map(|f| format!(" {f}")).collect()
}

/// The Slurm, Kubernetes and Docker lines for `config` placed as `placement`, running `cmd`
/// (see the module documentation for what each does and why).
fn scheduler_lines(
    topology: &Topology,
    config: &Config,
    placement: &Placement,
    cmd: &str,
) -> Vec<String> {
    let union = placement.union();
    let pus = union.weight().unwrap_or(0);
    let restricted = config.is_restricted();
    // CPUs the configuration needs: those it names, or one per thread when left to the OS.
    let cpus = if restricted {
        pus
    } else {
        config.threads.min(pus)
    }
    .max(1);
    let cores = topology
        .indexes_intersecting(ObjKind::Core, &union, false)
        .len();
    let uses_siblings = if restricted {
        pus > cores
    } else {
        config.threads > cores
    };
    let hint = if topology.smt().max > 1 {
        if uses_siblings {
            " --hint=multithread"
        } else {
            " --hint=nomultithread"
        }
    } else {
        ""
    };
    let n = config.threads;
    let mut lines = Vec::new();
    if restricted {
        let mask = Format::Slurm.render(&union).unwrap_or_default();
        lines.push(format!(
            "#SBATCH --nodes=1 --ntasks=1 --cpus-per-task={cpus} --exclusive{hint}"
        ));
        lines.push(format!(
            "srun --whole --cpu-bind={mask} {cmd}   # one process; its threads on CPUs {}",
            format_list(&set_to_vec(&union))
        ));
        // One rank per thread only where each gets CPUs of its own: with more threads than
        // CPUs the job would ask for more CPUs than --cpus-per-task above.
        if n > 1 && n <= pus && placement.is_pinned() && placement.binding != Binding::Shared {
            lines.push(format!(
                "srun --whole --ntasks={n} --cpus-per-task=1 --cpu-bind={} PROGRAM   # {n} \
                 single-threaded processes (MPI ranks), one per thread's CPUs",
                per_task_bind(placement)
            ));
        }
    } else {
        lines.push(format!(
            "#SBATCH --nodes=1 --ntasks=1 --cpus-per-task={cpus}{hint}"
        ));
        lines.push(format!("srun --cpu-bind=cores {cmd}"));
    }
    lines.push(format!(
        "kubernetes: resources: {{requests: {{cpu: \"{cpus}\"}}, limits: {{cpu: \"{cpus}\"}}}}   \
         # whole CPUs, memory requests = limits too: with the static CPU manager policy the \
         container gets {cpus} CPU{} of its own (the kubelet picks which)",
        if cpus == 1 { "" } else { "s" }
    ));
    if restricted {
        lines.push(format!(
            "docker run --cpuset-cpus={} -e OMP_NUM_THREADS={n} IMAGE {cmd}",
            format_list(&set_to_vec(&union))
        ));
    } else {
        lines.push(format!(
            "docker run --cpus={cpus} -e OMP_NUM_THREADS={n} IMAGE {cmd}"
        ));
    }
    lines
}

/// `map_cpu:a,b,…` when every thread has one CPU, else `mask_cpu:m1,m2,…`: task `i` on thread
/// `i`'s CPUs.
fn per_task_bind(placement: &Placement) -> String {
    let threads = placement.thread_cpus();
    if threads.iter().all(|t| t.len() == 1) {
        let cpus: Vec<String> = threads.iter().map(|t| t[0].to_string()).collect();
        format!("map_cpu:{}", cpus.join(","))
    } else {
        let masks: Vec<String> = placement
            .cpusets()
            .iter()
            .map(|s| {
                Format::Taskset
                    .render(s)
                    .unwrap_or_else(|_| "0x0".to_owned())
            })
            .collect();
        format!("mask_cpu:{}", masks.join(","))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::grid::{Cpus, Family};
    use crate::placement::Policy;
    use crate::topology::TopologySource;

    fn topo(synthetic: &str) -> Topology {
        Topology::load(&TopologySource::Synthetic(synthetic.into())).unwrap()
    }

    fn config(threads: usize, place: Policy, cpus: &str) -> Config {
        Family::new(place)
            .with_cpus(cpus.parse().unwrap_or(Cpus::All))
            .at(threads)
    }

    fn lines(t: &Topology, c: &Config, binding: Binding) -> Vec<String> {
        let target = Target::Command {
            argv: vec!["./app".into(), "-t".into(), "{threads}".into()],
            shell: false,
        };
        apply_lines(t, &target, c, binding)
    }

    fn find<'a>(lines: &'a [String], prefix: &str) -> Vec<&'a str> {
        lines
            .iter()
            .filter(|l| l.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    #[test]
    fn instances_get_a_line_each_on_their_own_node() {
        // 2 packages, a NUMA node each, 4 cores of 2 PUs: 4 instances of 2 threads.
        let t = topo("pack:2 numa:1 core:4 pu:2");
        let mut c = config(2, Policy::Os, "all");
        c.family.instances = 2;
        c.family.mem = "local".parse().unwrap();
        let l = lines(&t, &c, Binding::Pu);
        assert_eq!(
            l[0],
            "note: 2 instances, one per NUMA node: CPUs 0-7 | 8-15"
        );
        assert_eq!(
            find(&l, "coretune run"),
            [
                "coretune run --threads 2 --place os --cpus '0-7' --mem local -- ./app -t 2 &",
                "coretune run --threads 2 --place os --cpus '8-15' --mem local -- ./app -t 2 &",
            ]
        );
        assert_eq!(
            find(&l, "numactl"),
            [
                "numactl --physcpubind=0-7 --localalloc ./app -t 2 &",
                "numactl --physcpubind=8-15 --localalloc ./app -t 2 &",
            ]
        );
        assert_eq!(
            find(&l, "systemd unit"),
            [
                "systemd unit instance @0: CPUAffinity=0-7 NUMAPolicy=local",
                "systemd unit instance @1: CPUAffinity=8-15 NUMAPolicy=local",
            ]
        );
        assert_eq!(
            find(&l, "#SBATCH"),
            ["#SBATCH --nodes=1 --ntasks=2 --cpus-per-task=8 --exclusive"]
        );
        assert!(
            find(&l, "srun")[0].starts_with(
                "srun --whole --ntasks=2 --cpus-per-task=8 --cpu-bind=mask_cpu:0xff,0xff00 ./app -t 2"
            ),
            "{l:#?}"
        );
        // 4 instances split each node in two: one per L3 is not there, one per core is not
        // either (2 cores each), so only the CPUs are said; {instance} and {cpus} per copy.
        c.family.instances = 4;
        c.family.mem = crate::grid::Mem::Default;
        let target = Target::Command {
            argv: vec![
                "./app".into(),
                "--rank={instance}".into(),
                "--on={cpus}".into(),
            ],
            shell: false,
        };
        let l = apply_lines(&t, &target, &c, Binding::Pu);
        assert_eq!(l[0], "note: 4 instances: CPUs 0-3 | 4-7 | 8-11 | 12-15");
        assert_eq!(
            find(&l, "taskset"),
            [
                "taskset -c 0-3 ./app --rank=0 --on=0-3 &",
                "taskset -c 4-7 ./app --rank=1 --on=4-7 &",
                "taskset -c 8-11 ./app --rank=2 --on=8-11 &",
                "taskset -c 12-15 ./app --rank=3 --on=12-15 &",
            ]
        );
        let srun = find(&l, "srun")[0];
        assert!(srun.contains("--rank=$SLURM_PROCID"), "{srun}");
        // A script runs in a shell per task; a built-in workload's lines keep its threads.
        let script = Target::Command {
            argv: vec!["./app {instance}".into()],
            shell: true,
        };
        let l = apply_lines(&t, &script, &c, Binding::Pu);
        assert!(
            find(&l, "srun")[0]
                .ends_with(" sh -c './app $SLURM_PROCID'   # 4 tasks, each on its part"),
            "{l:#?}"
        );
        let bench = Target::Workload {
            spec: WorkloadSpec {
                name: "membw".into(),
                ..WorkloadSpec::default()
            },
            description: String::new(),
        };
        let l = apply_lines(&t, &bench, &c, Binding::Pu);
        assert_eq!(
            find(&l, "taskset")[0],
            "taskset -c 0-3 coretune bench membw --threads 2 --place os &"
        );
        // A line a user pastes runs: the taskset lines through a shell.
        assert!(l.iter().any(|l| l == "wait"));
    }

    #[test]
    fn a_launchers_lines_are_its_command_lines_with_the_program_filled_in() {
        let t = topo("pack:2 numa:1 core:4 pu:2");
        let mut c = config(4, Policy::Cores, "all");
        c.family.instances = 2;
        // Finding 26 (#35): as root, Open MPI's line carries its consent, so it runs pasted.
        let root = if crate::sys::effective_uid() == 0 {
            " --allow-run-as-root"
        } else {
            ""
        };
        let settings = RunSettings {
            launcher: Some(Launcher::Mpirun),
            ..RunSettings::default()
        };
        let target = Target::Command {
            argv: vec!["./app -t {threads} > 'out {instances}'".into()],
            shell: true,
        };
        let program = r"sh -c './app -t 4 > '\''out 2'\'''";
        let l = apply_lines_for(&t, &target, &c, &settings);
        assert_eq!(
            l,
            [
                format!(
                    "mpirun{root} -np 2 --map-by slot:PE=4 --bind-to core -x OMP_NUM_THREADS=4 \
                     -x OMP_PLACES=cores -x OMP_PROC_BIND=close {program}"
                ),
                "#SBATCH --nodes=1 --ntasks=2 --cpus-per-task=4".to_owned(),
                format!(
                    "srun --ntasks=2 --cpus-per-task=4 --cpu-bind=cores --distribution=block:block \
                     --export=ALL,OMP_NUM_THREADS=4,OMP_PLACES=cores,OMP_PROC_BIND=close {program}"
                ),
            ]
        );
    }

    #[test]
    fn runtimes_get_their_own_lines() {
        let t = topo("core:2 pu:2");
        let run = |argv: &[&str], c: &Config| {
            let target = Target::Command {
                argv: argv.iter().map(|w| (*w).to_owned()).collect(),
                shell: false,
            };
            apply_lines(&t, &target, c, Binding::Pu)
        };
        let l = run(&["./app"], &config(2, Policy::Os, "all"));
        assert_eq!(
            find(&l, "GOMAXPROCS"),
            ["GOMAXPROCS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2"]
        );
        assert!(find(&l, "JVM").is_empty() && find(&l, "nginx").is_empty());
        let l = run(
            &["/usr/bin/java", "-jar", "x.jar"],
            &config(3, Policy::Os, "all"),
        );
        assert_eq!(
            find(&l, "JVM"),
            ["JVM: java -XX:ActiveProcessorCount=3 (sizes the GC and ForkJoin common pool)"]
        );
        // nginx's workers are processes: one mask per worker, CPU 0 rightmost.
        let nginx = ["nginx", "-g", "worker_processes {threads};"];
        let l = run(&nginx, &config(3, Policy::Compact, "all"));
        assert_eq!(
            find(&l, "nginx.conf"),
            ["nginx.conf: worker_processes 3; worker_cpu_affinity 001 010 100;"]
        );
        let l = run(&nginx, &config(2, Policy::Os, "1-2"));
        assert_eq!(
            find(&l, "nginx.conf"),
            ["nginx.conf: worker_processes 2; worker_cpu_affinity auto 110;"]
        );
        let l = run(&nginx, &config(4, Policy::Os, "all"));
        assert_eq!(find(&l, "nginx.conf"), ["nginx.conf: worker_processes 4;"]);
    }

    #[test]
    fn left_to_the_os_asks_for_one_cpu_per_thread_and_binds_to_cores() {
        // 2 cores × 2 PUs: 2 threads fit one per core, 3 need a sibling.
        let t = topo("core:2 pu:2");
        let l = lines(&t, &config(2, Policy::Os, "all"), Binding::Pu);
        assert_eq!(
            find(&l, "#SBATCH"),
            ["#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=2 --hint=nomultithread"]
        );
        assert_eq!(find(&l, "srun"), ["srun --cpu-bind=cores ./app -t 2"]);
        assert_eq!(
            find(&l, "docker"),
            ["docker run --cpus=2 -e OMP_NUM_THREADS=2 IMAGE ./app -t 2"]
        );
        assert!(
            find(&l, "kubernetes")[0]
                .contains(r#"resources: {requests: {cpu: "2"}, limits: {cpu: "2"}}"#)
        );
        let l = lines(&t, &config(3, Policy::Os, "all"), Binding::Pu);
        assert!(find(&l, "#SBATCH")[0].ends_with("--cpus-per-task=3 --hint=multithread"));
        // More threads than PUs: the whole machine, no more.
        let l = lines(&t, &config(16, Policy::Os, "all"), Binding::Pu);
        assert!(find(&l, "#SBATCH")[0].contains("--cpus-per-task=4 "));
        // No SMT: no hint.
        let l = lines(
            &topo("core:4 pu:1"),
            &config(2, Policy::Os, "all"),
            Binding::Pu,
        );
        assert_eq!(
            find(&l, "#SBATCH"),
            ["#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=2"]
        );
    }

    #[test]
    fn pinned_configurations_bind_to_their_cpus_on_a_whole_node() {
        let t = topo("core:4 pu:2");
        // `cores`: one thread per core, PUs 0, 2, 4.
        let l = lines(&t, &config(3, Policy::Cores, "all"), Binding::Pu);
        assert_eq!(
            find(&l, "#SBATCH"),
            ["#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=3 --exclusive --hint=nomultithread"]
        );
        let srun = find(&l, "srun");
        assert!(
            srun[0].starts_with("srun --whole --cpu-bind=mask_cpu:0x15 ./app -t 3"),
            "{srun:?}"
        );
        assert!(
            srun[1].starts_with(
                "srun --whole --ntasks=3 --cpus-per-task=1 --cpu-bind=map_cpu:0,2,4 PROGRAM"
            ),
            "{srun:?}"
        );
        assert_eq!(
            find(&l, "docker"),
            ["docker run --cpuset-cpus=0,2,4 -e OMP_NUM_THREADS=3 IMAGE ./app -t 3"]
        );
        // `compact` uses siblings; per-core binding gives each task its core's mask.
        let l = lines(&t, &config(2, Policy::Compact, "all"), Binding::Core);
        assert!(
            find(&l, "#SBATCH")[0].ends_with("--hint=multithread"),
            "{l:?}"
        );
        let srun = find(&l, "srun");
        assert!(srun[0].contains("--cpu-bind=mask_cpu:0x3 "), "{srun:?}");
        assert!(srun[1].contains("--cpu-bind=mask_cpu:0x3,0x3 "), "{srun:?}");
        // A CPU set without pinning: one mask, no per-task line.
        let l = lines(&t, &config(2, Policy::Os, "all ~core:0"), Binding::Pu);
        let srun = find(&l, "srun");
        assert_eq!(srun.len(), 1);
        assert!(srun[0].contains("--cpu-bind=mask_cpu:0xfc "), "{srun:?}");
        assert!(find(&l, "#SBATCH")[0].contains("--cpus-per-task=6 --exclusive"));
    }

    /// More threads than PUs: the job asks for the PUs it has (not one rank per thread) and a
    /// note says the recommendation is oversubscribed.
    #[test]
    fn oversubscription_is_noted_and_asks_slurm_for_no_more_cpus_than_there_are() {
        let t = topo("core:2 pu:1");
        let l = lines(&t, &config(8, Policy::Compact, "all"), Binding::Pu);
        assert!(
            find(&l, "#SBATCH")[0].contains("--cpus-per-task=2"),
            "{l:?}"
        );
        let srun = find(&l, "srun");
        assert_eq!(srun.len(), 1, "no per-rank line: {srun:?}");
        assert!(
            find(&l, "note: 8 threads on 2 PUs: oversubscribed").len() == 1,
            "{l:?}"
        );
        let fits = lines(&t, &config(2, Policy::Compact, "all"), Binding::Pu);
        assert!(find(&fits, "note:").is_empty(), "{fits:?}");
        // One thread, compact: CPU 0 alone, which the recommendation says.
        let one = lines(&t, &config(1, Policy::Compact, "all"), Binding::Pu);
        assert!(
            find(&one, "systemd unit: CPUAffinity=0 ").len() == 1
                && find(&one, "note: these CPUs include CPU 0").len() == 1,
            "{one:?}"
        );
        let not_zero = lines(&t, &config(1, Policy::Compact, "pu:1"), Binding::Pu);
        assert!(find(&not_zero, "note:").is_empty(), "{not_zero:?}");
    }

    #[test]
    fn workloads_run_their_coretune_bench_line_under_srun() {
        let t = topo("core:2 pu:1");
        let target = Target::Workload {
            spec: WorkloadSpec {
                name: "sum".into(),
                size: Size::Small,
                count: Some(1000),
                repeat: Some(3),
                ..WorkloadSpec::default()
            },
            description: String::new(),
        };
        let l = apply_lines(
            &t,
            &target,
            &config(1, Policy::Compact, "pu:1"),
            Binding::Pu,
        );
        assert_eq!(
            find(&l, "srun")[0],
            "srun --whole --cpu-bind=mask_cpu:0x2 coretune bench sum --threads 1 --place compact \
             --cpus 'pu:1' --size small --count 1000 --repeat 3   # one process; its threads on CPUs 1"
        );
    }

    /// A sweep on Windows (a topology hwloc found under Wine, kept in `tests/data/windows/`)
    /// gets the Windows lines and none of the Linux or cluster ones.
    #[test]
    fn a_windows_machine_gets_windows_lines() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/windows/wine8-2pu.xml");
        let t = Topology::load(&TopologySource::XmlFile(path)).unwrap();
        assert!(crate::topology::groups::is_windows(&t));
        let l = lines(&t, &config(1, Policy::Compact, "pu:1"), Binding::Pu);
        assert_eq!(
            l[0],
            "coretune run --threads 1 --place compact --cpus 'pu:1' -- ./app -t 1"
        );
        assert!(
            l.contains(&"cmd.exe: start /affinity 2 ./app -t 1".to_owned()),
            "{l:?}"
        );
        assert!(
            l.iter().any(|x| x.ends_with("$p.ProcessorAffinity = 2")),
            "{l:?}"
        );
        assert!(
            l.iter().any(|x| x.starts_with("PowerShell: $env:OMP_NUM_THREADS=1; $env:OMP_PLACES='{1}'")),
            "{l:?}"
        );
        for linux in [
            "taskset",
            "srun",
            "#SBATCH",
            "docker",
            "kubernetes",
            "systemd",
        ] {
            assert!(find(&l, linux).is_empty(), "{linux} in {l:?}");
        }
    }
}
