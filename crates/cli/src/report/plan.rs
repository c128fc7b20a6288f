//! A plan before anything runs (`coretune tune --dry-run`): the grid, the number of runs and
//! the time bounds of core's [`DesignEstimate`], as text or JSON.

use std::fmt::Write as _;
use std::time::Duration;

use coretune_core::sweep::{Design, DesignCost, DesignEstimate, Target};

/// The plan as JSON: the topology summary, the target, the plan and its estimate.
///
/// # Errors
///
/// Serialising (never, for these types).
pub(crate) fn json(
    topology: &str,
    target: &Target,
    plan: &Design,
    estimate: &DesignEstimate,
) -> anyhow::Result<String> {
    let value = serde_json::json!({
        "topology": topology,
        "target": target.label(),
        "plan": plan,
        "estimate": estimate,
    });
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// The plan as text: one line per axis, then the runs and times; `one` is the single-threaded
/// run time the times come from.
pub(crate) fn text(
    topology: &str,
    target: &Target,
    plan: &Design,
    estimate: &DesignEstimate,
    one: Option<Duration>,
) -> String {
    let g = &plan.grid;
    let join = |v: Vec<String>, sep: &str| v.join(sep);
    let mut s = String::new();
    let _ = writeln!(s, "Plan for {topology}: {}", target.label());
    let min_time = if plan.min_time.is_zero() {
        String::new()
    } else {
        format!(", more up to {:.1} s each", plan.min_time.as_secs_f64())
    };
    let rows = [
        (
            "threads",
            join(g.threads.iter().map(ToString::to_string).collect(), ", "),
        ),
        (
            "placements",
            join(g.places.iter().map(ToString::to_string).collect(), ", "),
        ),
        (
            "cpus",
            join(g.cpus.iter().map(ToString::to_string).collect(), " | "),
        ),
        (
            "throttles",
            join(g.throttles.iter().map(ToString::to_string).collect(), ", "),
        ),
        (
            "runs",
            format!(
                "{} warm-up + {} measured per configuration{min_time}",
                plan.warmup, plan.runs
            ),
        ),
    ];
    let mems = (g.mems.iter().any(|m| !m.is_default())).then(|| {
        (
            "memory",
            join(g.mems.iter().map(ToString::to_string).collect(), " | "),
        )
    });
    let instances = g.has_instances().then(|| {
        (
            "instances",
            format!(
                "{} (copies at once, each on its own part of the CPUs, judged on their \
                 throughput together)",
                join(g.instances.iter().map(ToString::to_string).collect(), ", ")
            ),
        )
    });
    for (k, v) in rows.into_iter().chain(mems).chain(instances) {
        let _ = writeln!(s, "  {k:<11}{v}");
    }
    for (k, v) in super::other_grid_lists(g) {
        let _ = writeln!(s, "  {k:<11}{v}");
    }
    match &estimate.first_stage {
        None => {
            let _ = writeln!(s, "  {:<11}{}", "exhaustive", cost(&estimate.grid));
        }
        Some(first) => {
            let _ = writeln!(s, "  {:<11}first stage {}", "search", cost(first));
            let _ = writeln!(
                s,
                "  {:<11}then brackets around the best; at most the whole grid: {}",
                "",
                cost(&estimate.grid)
            );
            let _ = writeln!(
                s,
                "  {:<11}{}: the search's median on replayed sweeps of machines this size",
                "expected",
                cost(&estimate.expected)
            );
        }
    }
    match one {
        Some(one) => {
            let _ = writeln!(
                s,
                "  (times from one single-threaded run of {:.3} s)",
                one.as_secs_f64()
            );
        }
        None => {
            let _ = writeln!(
                s,
                "  (add --estimate-one SECS, a single-threaded run's time, for times)"
            );
        }
    }
    s
}

fn cost(c: &DesignCost) -> String {
    let time = c.seconds.map_or(String::new(), |(fast, slow)| {
        format!(
            ", {} (perfect scaling) to {} (no speedup)",
            duration(fast),
            duration(slow)
        )
    });
    format!(
        "{}, {}{time}",
        coretune_core::cpuset::counted(c.configs, "configuration"),
        coretune_core::cpuset::counted(c.runs, "run")
    )
}

/// Seconds as `45 s`, `12.5 min`, `3.2 h`.
fn duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 5400.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}
