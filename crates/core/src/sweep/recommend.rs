//! The recommendation: the fastest configuration only when it is better beyond noise; otherwise
//! the simplest of those that tie with it.
//!
//! A configuration *ties* with the fastest when its 95% interval of the median overlaps the
//! fastest's, or its median is within the tolerance (3% by default) of the fastest's. Among the
//! ties the simplest wins: fewer threads, then no pinning, then no CPU exclusion, then no
//! throttle ([`Config::simplicity_key`]). The reason is one or two sentences built from the
//! measurements: how the choice compares with the fastest, what pinning and CPU exclusion were
//! worth, and what the counters say about oversubscription.

use serde::{Deserialize, Serialize};

use super::search::{Estimate, ties};
use super::{Config, ConfigSummary};

/// Runs a configuration needs before its interval can support a claim beyond noise.
const MIN_RUNS_FOR_NOISE: usize = 2;

/// What coretune recommends, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The recommended configuration.
    #[serde(flatten)]
    pub config: Config,
    /// The configuration with the lowest median time.
    pub fastest: Config,
    /// Whether the recommended configuration is the fastest and beats every simpler one beyond
    /// noise (false when it was chosen as the simplest of a tie).
    pub beyond_noise: bool,
    /// Why, in a sentence or two.
    pub reason: String,
    /// Ready-to-paste lines that apply it (filled in by the caller, who knows the topology and
    /// the command).
    pub apply: Vec<String>,
    /// Caveats: bimodal results, runs on a busy machine, failures.
    pub warnings: Vec<String>,
}

fn estimate(s: &ConfigSummary) -> Option<Estimate> {
    s.wall.as_ref().map(|w| Estimate {
        median: w.median,
        ci: w.ci,
    })
}

fn pct(a: f64, b: f64) -> f64 {
    (b / a - 1.0) * 100.0
}

/// Chooses a configuration from the summaries. `None` when no configuration has a successful
/// run.
pub fn recommend(summaries: &[ConfigSummary], tolerance: f64) -> Option<Recommendation> {
    let measured: Vec<(&ConfigSummary, Estimate)> = summaries
        .iter()
        .filter_map(|s| estimate(s).map(|e| (s, e)))
        .collect();
    let &(fastest, best) = measured
        .iter()
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))?;
    let chosen = measured
        .iter()
        .filter(|(_, e)| ties(e, &best, tolerance))
        .map(|(s, _)| *s)
        .min_by_key(|s| s.config.simplicity_key())?;
    let chosen_est = estimate(chosen)?;
    // "Better than every simpler configuration beyond noise" needs simpler configurations that
    // were measured (a sweep stopped after its first configuration has none) and intervals
    // (one run has none: its interval is the run itself).
    let simpler: Vec<&(&ConfigSummary, Estimate)> = measured
        .iter()
        .filter(|(s, _)| s.config.simplicity_key() < chosen.config.simplicity_key())
        .collect();
    let intervals = chosen.runs >= MIN_RUNS_FOR_NOISE
        && simpler.iter().all(|(s, _)| s.runs >= MIN_RUNS_FOR_NOISE);
    let noise_known = measured.iter().all(|(s, _)| s.runs >= MIN_RUNS_FOR_NOISE);
    let beyond_noise = chosen.config == fastest.config
        && !simpler.is_empty()
        && intervals
        && simpler
            .iter()
            .all(|(_, e)| !ties(e, &chosen_est, tolerance));

    let mut reason = Vec::new();
    let speed = chosen
        .speedup
        .map(|s| format!(", {s:.2}× the 1-thread time"))
        .unwrap_or_default();
    if chosen.config == fastest.config {
        reason.push(format!(
            "{} is fastest ({:.3} s median{speed}){}.",
            chosen.config,
            chosen_est.median,
            if beyond_noise {
                ", better than every simpler configuration beyond noise"
            } else {
                ""
            }
        ));
    } else {
        let why = if chosen_est.median <= best.median * (1.0 + tolerance) {
            format!("within the {:.0}% tolerance", tolerance * 100.0)
        } else {
            "within noise (the 95% intervals of the medians overlap)".to_owned()
        };
        reason.push(format!(
            "{} is fastest, but only {:.1}% faster than {} ({:.3} s median{speed}), {why}: the \
             simpler one is recommended.",
            fastest.config,
            pct(best.median, chosen_est.median),
            chosen.config,
            chosen_est.median,
        ));
    }

    // Pinning: at the recommended thread count, the best pinned placement against the OS's
    // (same CPU set and throttle).
    let best_of = |pred: &dyn Fn(&Config) -> bool| {
        measured
            .iter()
            .filter(|(s, _)| pred(&s.config))
            .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
            .copied()
    };
    let same = |c: &Config| {
        c.threads == chosen.config.threads
            && c.cpus == chosen.config.cpus
            && c.throttle == chosen.config.throttle
    };
    if let (Some((_, os_e)), Some((pinned, pin_e))) = (
        best_of(&|c| same(c) && !c.place.is_pinned()),
        best_of(&|c| same(c) && c.place.is_pinned()),
    ) {
        let gain = pct(pin_e.median, os_e.median);
        let n = chosen.config.threads;
        if !noise_known {
            reason.push(format!(
                "At {n} threads pinning ({}) {} {:.1}% (one run each: not told from noise).",
                pinned.config.place,
                if gain >= 0.0 { "gains" } else { "costs" },
                gain.abs()
            ));
        } else if gain > 0.0 && !ties(&os_e, &pin_e, tolerance) {
            reason.push(format!(
                "At {n} threads pinning ({}) gains {gain:.1}% over the OS's placement, beyond noise.",
                pinned.config.place
            ));
        } else if gain >= 0.0 {
            reason.push(format!(
                "At {n} threads pinning ({}) gains {gain:.1}%, within noise: leave placement to \
                 the OS.",
                pinned.config.place
            ));
        } else {
            reason.push(format!(
                "At {n} threads pinning ({}) costs {:.1}%: leave placement to the OS.",
                pinned.config.place, -gain
            ));
        }
    }

    // CPU exclusion (e.g. keeping CPU 0 free).
    if let (Some((_, all_e)), Some((excl, excl_e))) = (
        best_of(&|c| c.cpus.is_all()),
        best_of(&|c| !c.cpus.is_all()),
    ) {
        let gain = pct(excl_e.median, all_e.median);
        let verdict = if !noise_known {
            "one run each: not told from noise"
        } else if ties(&excl_e, &all_e, tolerance) && ties(&all_e, &excl_e, tolerance) {
            "within noise"
        } else {
            "beyond noise"
        };
        reason.push(format!(
            "Restricting to '{}' {} {:.1}%, {verdict}.",
            excl.config.cpus,
            if gain >= 0.0 { "gains" } else { "costs" },
            gain.abs()
        ));
    }

    // Oversubscription, from the counters of the chosen family.
    let family = chosen.config.family();
    let curve: Vec<&ConfigSummary> = summaries
        .iter()
        .filter(|s| s.config.family() == family && s.wall.is_some())
        .collect();
    if let (Some(at), Some(top)) = (
        chosen.involuntary_ctx_switches,
        curve
            .iter()
            .max_by_key(|s| s.config.threads)
            .filter(|s| s.config.threads > chosen.config.threads),
    ) {
        if let Some(top_cs) = top.involuntary_ctx_switches {
            let ratio = top_cs / at.max(1.0);
            if ratio >= 3.0 {
                reason.push(format!(
                    "Beyond {} threads involuntary context switches rise {ratio:.0}× ({at:.0} → \
                     {top_cs:.0} per run at {} threads).",
                    chosen.config.threads, top.config.threads
                ));
            }
        }
    }

    let mut warnings = Vec::new();
    for s in summaries {
        if s.wall.as_ref().is_some_and(|w| w.bimodal) {
            warnings.push(format!(
                "{}: run times fall in two clusters (bimodal): typical of threads sometimes \
                 sharing a core, or of a noisy machine; more runs would tell.",
                s.config
            ));
        }
        if s.failed > 0 {
            warnings.push(format!(
                "{}: {} run(s) failed (excluded).",
                s.config, s.failed
            ));
        }
    }
    if !noise_known {
        warnings.push(
            "one run per configuration: there is no interval, so no difference can be told \
             from noise (--runs 3 or more for that)."
                .to_owned(),
        );
    }
    if simpler.is_empty() && measured.len() == 1 {
        warnings.push(format!(
            "{} is the only configuration measured: nothing to compare it with.",
            chosen.config
        ));
    }
    let busy: usize = summaries.iter().map(|s| s.busy_runs).sum();
    if busy > 0 {
        let total: usize = summaries.iter().map(|s| s.runs + s.failed).sum();
        warnings.push(format!(
            "{busy} of {total} runs were taken while other processes used the CPUs (busy \
             machine): differences of a few percent may be noise."
        ));
    }

    Some(Recommendation {
        config: chosen.config.clone(),
        fastest: fastest.config.clone(),
        beyond_noise,
        reason: reason.join(" "),
        apply: Vec::new(),
        warnings,
    })
}
