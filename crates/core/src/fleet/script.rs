//! The batch script of one submission: `#SBATCH` lines for the target, the node choice and the
//! site's options, then the sweep — the same coretune binary, writing its own results folder
//! under the fleet folder, named after the node it runs on (`DIR/TARGET/NODE`):
//! `coretune tune --fleet-node DIR/TARGET/NODE`, which reads the sweep's options from the
//! fleet's `fleet.json` ([`NodeSweep::Options`]). A folder that already holds a sweep (a job
//! resubmitted, or a second array task on the same node) is continued with `--resume` instead,
//! so nothing measured is repeated.
//!
//! The options are not written into the script: a script holds nothing that `fleet.json` does
//! not say, and no option has to be spelt back into a command line by hand. A fleet of
//! `fleet.json` version 1 ([`NodeSweep::Args`]) gets the script it always had, its sweep's
//! arguments after `--out`.

use std::fmt::Write as _;
use std::path::Path;

use super::spec::{FleetSpec, NodeSweep, SlurmTarget, TargetKind};
use crate::program::shell_quote;

/// Which nodes the jobs of a submission may run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobNodes {
    /// Any node of the target, `tasks` of them as a job array (a single job for 1).
    Any {
        /// How many nodes to measure.
        tasks: usize,
        /// Nodes not to use (measured already).
        exclude: Vec<String>,
    },
    /// This node.
    Node(String),
}

/// The batch script of one submission of `target` (see the module documentation).
pub(super) fn batch_script(
    spec: &FleetSpec,
    dir: &Path,
    target: &SlurmTarget,
    place: &JobNodes,
) -> String {
    let target_dir = dir.join(target.name());
    let mut s = String::new();
    let _ = writeln!(s, "#!/bin/bash");
    let _ = writeln!(
        s,
        "# coretune tune --slurm: the sweep of target '{}' ({}) on one node, into {}/NODE/",
        target.name(),
        target.describe(),
        target_dir.display()
    );
    let mut sbatch = |line: String| {
        let _ = writeln!(s, "#SBATCH {line}");
    };
    sbatch(format!("--job-name=coretune-{}", target.name()));
    match target.kind {
        TargetKind::Partition => sbatch(format!("--partition={}", target.value)),
        TargetKind::Constraint => sbatch(format!("--constraint={}", target.value)),
        TargetKind::Nodelist => {}
    }
    sbatch("--nodes=1".into());
    sbatch("--ntasks=1".into());
    sbatch("--exclusive".into());
    let log = match place {
        JobNodes::Any { tasks, exclude } => {
            if !exclude.is_empty() {
                sbatch(format!("--exclude={}", exclude.join(",")));
            }
            if *tasks > 1 {
                sbatch(format!("--array=0-{}", tasks - 1));
                "slurm-%A_%a.log"
            } else {
                "slurm-%j.log"
            }
        }
        JobNodes::Node(node) => {
            sbatch(format!("--nodelist={node}"));
            "slurm-%j.log"
        }
    };
    sbatch(format!("--output={}", target_dir.join(log).display()));
    if let Some(time) = &spec.time {
        sbatch(format!("--time={time}"));
    }
    if let Some(account) = &spec.account {
        sbatch(format!("--account={account}"));
    }
    for arg in &spec.sbatch_args {
        sbatch(arg.clone());
    }
    let coretune = shell_quote(&spec.coretune.display().to_string());
    let _ = writeln!(s, "set -eu");
    let _ = writeln!(
        s,
        "dir={}/\"${{SLURMD_NODENAME:?not running under Slurm}}\"",
        shell_quote(&target_dir.display().to_string())
    );
    let _ = writeln!(s, "if [ -e \"$dir/sweep.json\" ]; then");
    let _ = writeln!(s, "  exec {coretune} tune --quiet --resume \"$dir\"");
    let _ = writeln!(s, "fi");
    match &spec.sweep {
        NodeSweep::Options(_) => {
            let _ = writeln!(s, "exec {coretune} tune --quiet --fleet-node \"$dir\"");
        }
        NodeSweep::Args(args) => {
            let args: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
            // `--out` before the arguments: after a `--` everything is the program's.
            let _ = writeln!(
                s,
                "exec {coretune} tune --quiet --out \"$dir\"{}{}",
                if args.is_empty() { "" } else { " " },
                args.join(" ")
            );
        }
    }
    s
}

#[cfg(test)]
mod test {
    #[cfg(target_os = "linux")]
    use std::path::PathBuf;

    use super::*;

    #[cfg(target_os = "linux")]
    fn spec() -> FleetSpec {
        FleetSpec {
            targets: Vec::new(),
            nodes: 2,
            sbatch_args: vec!["--qos=debug".into()],
            account: Some("proj".into()),
            time: Some("00:30:00".into()),
            coretune: PathBuf::from("/shared/bin/coretune"),
            sweep: NodeSweep::Options(serde_json::json!({"workload": "sum", "threads": "1,2"})),
        }
    }

    #[test]
    fn shell_quoting_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("1,2"), "1,2");
        assert_eq!(shell_quote("all ~pu:0"), "'all ~pu:0'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    // Batch scripts for Linux nodes, with their paths.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_array_over_a_partition() {
        let target = SlurmTarget {
            kind: TargetKind::Partition,
            value: "gpu".into(),
        };
        let s = batch_script(
            &spec(),
            Path::new("/shared/out"),
            &target,
            &JobNodes::Any {
                tasks: 2,
                exclude: Vec::new(),
            },
        );
        let directives: Vec<&str> = s.lines().filter(|l| l.starts_with("#SBATCH")).collect();
        assert_eq!(
            directives,
            [
                "#SBATCH --job-name=coretune-gpu",
                "#SBATCH --partition=gpu",
                "#SBATCH --nodes=1",
                "#SBATCH --ntasks=1",
                "#SBATCH --exclusive",
                "#SBATCH --array=0-1",
                "#SBATCH --output=/shared/out/gpu/slurm-%A_%a.log",
                "#SBATCH --time=00:30:00",
                "#SBATCH --account=proj",
                "#SBATCH --qos=debug",
            ]
        );
        assert!(s.starts_with("#!/bin/bash\n"));
        assert!(s.contains("dir=/shared/out/gpu/\"${SLURMD_NODENAME:?not running under Slurm}\""));
        assert!(s.contains("exec /shared/bin/coretune tune --quiet --resume \"$dir\""));
        assert!(s.ends_with("exec /shared/bin/coretune tune --quiet --fleet-node \"$dir\"\n"));
        // The options stay in fleet.json: the script holds none of them.
        assert!(!s.contains("threads") && !s.contains("1,2"), "{s}");
    }

    // Batch scripts for Linux nodes, with their paths.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_fleet_of_version_1_repeats_its_sweep_arguments_after_out() {
        let mut spec = spec();
        spec.sweep = NodeSweep::Args(vec![
            "sum".into(),
            "--threads".into(),
            "1,2".into(),
            "--cpus".into(),
            "all ~pu:0".into(),
            "--".into(),
            "it's".into(),
        ]);
        let target = SlurmTarget {
            kind: TargetKind::Partition,
            value: "gpu".into(),
        };
        let s = batch_script(
            &spec,
            Path::new("/shared/out"),
            &target,
            &JobNodes::Node("n07".into()),
        );
        assert!(s.contains("exec /shared/bin/coretune tune --quiet --resume \"$dir\""));
        assert!(s.ends_with(
            "exec /shared/bin/coretune tune --quiet --out \"$dir\" sum --threads 1,2 --cpus \
             'all ~pu:0' -- 'it'\\''s'\n"
        ));
    }

    // Batch scripts for Linux nodes, with their paths.
    #[cfg(target_os = "linux")]
    #[test]
    fn one_node_or_anywhere_but_some() {
        let target = SlurmTarget {
            kind: TargetKind::Constraint,
            value: "skylake".into(),
        };
        let s = batch_script(
            &spec(),
            Path::new("/o"),
            &target,
            &JobNodes::Node("n07".into()),
        );
        assert!(s.contains("#SBATCH --constraint=skylake\n"));
        assert!(s.contains("#SBATCH --nodelist=n07\n"));
        assert!(s.contains("#SBATCH --output=/o/constraint-skylake/slurm-%j.log\n"));
        assert!(!s.contains("--array"));
        let s = batch_script(
            &spec(),
            Path::new("/o"),
            &target,
            &JobNodes::Any {
                tasks: 1,
                exclude: vec!["n01".into(), "n02".into()],
            },
        );
        assert!(s.contains("#SBATCH --exclude=n01,n02\n"));
        assert!(!s.contains("--array"));
    }
}
