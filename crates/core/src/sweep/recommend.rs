//! The recommendation: the fastest configuration only when it is better beyond noise; otherwise
//! the simplest of those that tie with it.
//!
//! Only configurations in the running take part: one whose run failed (without `tune -i`) is
//! never recommended, never the fastest, in no tie and not on the Pareto front; the warnings
//! say which were put out and why.
//!
//! A configuration *ties* with the fastest when its runs show it at most the tolerance (3% by
//! default) slower: the one-sided 95% upper bound of the ratio of its median to the fastest's
//! is within `1 + tolerance` (`search::tie`, whose docs give the interval: Welch's t on the log
//! of the ratio, each median's spread the larger of its standard deviation and 1.4826 × MAD).
//! A median within the tolerance is not enough: three noisy runs 2.9% slower may well be 5%
//! slower, and the pick must be within the tolerance of the best, not of a lucky draw. A median
//! beyond the tolerance is no tie, whatever the intervals. With one run per configuration (a
//! `--runs 1` sweep) there is no interval and the median decides. Among the ties the simplest
//! wins: fewer threads, then no pinning, then no CPU exclusion, then no throttle
//! ([`Config::simplicity_key`]); with no tie, the fastest. The reason is one or two sentences
//! built from the measurements: how the choice compares with the fastest (with the bound that
//! supports a tie), a simpler configuration within the tolerance by median that its runs could
//! not show as such, what pinning and CPU exclusion were worth, and what the counters say about
//! oversubscription. "Beyond noise" is said only when every simpler configuration is slower
//! than the choice by more than the tolerance and its ratio's lower bound is above 1 (a
//! configuration the search measured once is taken to vary as much as the choice does).
//!
//! **Oversubscription must earn its place.** When that pick runs more threads at once than the
//! PUs of its CPU set (`Design::pus`, `Design::oversubscribed`) and some configuration that does
//! not was measured, the fastest configuration that is not oversubscribed takes its place when
//! it is within the tolerance of it by median and its runs do not show it slower beyond noise
//! (the lower bound of their ratio above 1): the same rule then picks among the configurations
//! that are not oversubscribed, and the reason names both (`search::pick`, `search::gives_way`).
//! On a machine shared with other work, threads beyond the CPUs take time from it: 3 threads
//! per CPU are no answer when their runs cannot show them faster than 2 threads. A median slower
//! by more than the tolerance keeps the oversubscribed pick, as the tie rule has it (the
//! noisier one is not preferred for its noise: the means of the replay corpus, outliers and
//! all, favour it). With one run each the median has decided. Sweeps without PU counts (from
//! before them) count no configuration as oversubscribed.
//!
//! A tie within the tolerance by median that the runs cannot show is not left to 3 runs: the
//! engine measures the two further (`Design::max_runs`, the deciding stage, a bound per
//! comparison), and the reason names the configurations that got more runs and how many.
//! Statistical outliers of the choice and of the fastest (modified z-score above 3.5,
//! hyperfine's MAD rule and warning) are a warning naming the configuration: they widen the
//! bound (the standard deviation counts them), so they can cost a tie, never make one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::design::oversubscribed;
use super::objective::{Objective, Quantity, pareto_front};
use super::search::{Estimate, Tie, pick, ratio, slower_beyond_noise, tie};
use super::summary::ConfigSummary;
use crate::grid::Config;

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

/// The first objective's cost estimate of a configuration in the running (lower is better);
/// `None` for one out of it or without a successful run.
fn estimate(s: &ConfigSummary, objective: &Objective) -> Option<Estimate> {
    if s.out.is_some() {
        return None;
    }
    Some(objective.estimate(s.objectives.first()?.as_ref()?))
}

/// The configurations on the Pareto front of `objectives` (none when there are fewer than
/// two): those in the running that no other one beats on every objective, by median.
pub(crate) fn pareto(summaries: &[ConfigSummary], objectives: &[Objective]) -> Vec<Config> {
    if objectives.len() < 2 {
        return Vec::new();
    }
    let points: Vec<Vec<Option<f64>>> = summaries
        .iter()
        .map(|s| {
            objectives
                .iter()
                .zip(&s.objectives)
                .map(|(o, v)| {
                    v.as_ref()
                        .filter(|_| s.out.is_none())
                        .map(|v| o.cost(v.median))
                })
                .collect()
        })
        .collect();
    pareto_front(&points)
        .into_iter()
        .map(|i| summaries[i].config.clone())
        .collect()
}

fn pct(a: f64, b: f64) -> f64 {
    (b / a - 1.0) * 100.0
}

/// Chooses a configuration from the summaries, on the first of the `objectives` they were
/// made for (the others are stated). `None` when no configuration has a successful run.
pub fn recommend(
    summaries: &[ConfigSummary],
    tolerance: f64,
    objectives: &[Objective],
) -> Option<Recommendation> {
    recommend_on(
        summaries,
        tolerance,
        objectives,
        &pareto(summaries, objectives),
        None,
        &BTreeMap::new(),
    )
}

/// [`recommend`] with the Pareto front of `objectives` already found (the report model has it)
/// and, when the sweep measured undecided ties further (`Design::max_runs`), the runs every
/// configuration got first (`runs`): the reason then names the configurations measured further
/// and their runs. `pus` gives the PUs of each CPU set (`Design::pus`; empty: no
/// configuration counts as oversubscribed).
pub(crate) fn recommend_on(
    summaries: &[ConfigSummary],
    tolerance: f64,
    objectives: &[Objective],
    front: &[Config],
    runs: Option<usize>,
    pus: &BTreeMap<String, usize>,
) -> Option<Recommendation> {
    let time = Objective::time();
    let objective = objectives.first().unwrap_or(&time);
    let measured: Vec<(&ConfigSummary, &Config, Estimate)> = summaries
        .iter()
        .filter_map(|s| estimate(s, objective).map(|e| (s, &s.config, e)))
        .collect();
    let over = |c: &Config| oversubscribed(pus, c).is_some();
    let picked = pick(&measured, tolerance, &over)?;
    let (fastest, _, best) = measured[picked.fastest];
    let (chosen, _, chosen_est) = measured[picked.chosen];
    let value = |s: &ConfigSummary| {
        s.objectives
            .first()
            .and_then(Option::as_ref)
            .map(|v| v.median)
    };
    let shown = value(chosen).map_or_else(String::new, |v| objective.show(v));
    // "Better than every simpler configuration beyond noise" needs simpler configurations that
    // were measured (a sweep stopped after its first configuration has none) and an interval
    // for the choice (one run has none).
    let simpler: Vec<&(&ConfigSummary, &Config, Estimate)> = measured
        .iter()
        .filter(|(s, _, _)| s.config.simplicity_key() < chosen.config.simplicity_key())
        .collect();
    let beyond_noise = chosen.config == fastest.config
        && !simpler.is_empty()
        && chosen.runs >= MIN_RUNS_FOR_NOISE
        && simpler.iter().all(|(_, _, e)| {
            tie(e, &chosen_est, tolerance) == Tie::No && slower_beyond_noise(e, &chosen_est)
        });
    // The simplest configuration simpler than the choice that is within the tolerance by
    // median but whose runs could not show it.
    let unshown = simpler
        .iter()
        .filter(|(_, _, e)| tie(e, &best, tolerance) == Tie::Undecided)
        .min_by_key(|(s, _, _)| s.config.simplicity_key());

    let mut reason = Vec::new();
    // The speedup is of the time, or of the program's own figure when that is the objective;
    // with instances, over one copy of one thread (the gain from splitting the machine).
    let over = match &chosen.baseline {
        Some(b) if b.family.instances == 1 && chosen.config.family.instances > 1 => {
            "one copy of 1 thread's"
        }
        _ => "the 1-thread",
    };
    let speed = match &objective.quantity {
        Quantity::Time => chosen.speedup.map(|s| format!(", {s:.2}× {over} time")),
        Quantity::Metric(name) => chosen.speedup.map(|s| format!(", {s:.2}× {over} {name}")),
        Quantity::Throughput => chosen
            .speedup
            .map(|s| format!(", {s:.2}× {over} throughput")),
        Quantity::Cpu | Quantity::Rss => None,
    }
    .unwrap_or_default();
    let (best_word, better_word, worse_word) = if objective.is_time() {
        ("fastest".to_owned(), "faster", "slower")
    } else {
        (format!("best on {}", objective.name()), "better", "worse")
    };
    // The oversubscription rule: the tie rule's pick runs more threads at once than its PUs.
    let held = picked
        .oversubscribed
        .map(|(o, fit)| (measured[o], measured[fit]));
    let over_words = |c: &Config| {
        oversubscribed(pus, c).map_or_else(String::new, |(n, p)| {
            format!(
                "{} at once on {}",
                crate::sys::counted(n, "thread"),
                crate::sys::counted(p, "PU")
            )
        })
    };
    if let Some(((o, _, o_est), (fit, _, fit_est))) =
        held.filter(|((o, _, _), _)| o.config != chosen.config)
    {
        reason.push(format!(
            "{}, but it is oversubscribed ({}), and {}, the {best_word} configuration that is \
             not, is within the {:.0}% tolerance of it by median ({:.1}% {}) and its runs do not \
             show it {} beyond noise: {} is recommended ({shown} median{speed}), since more \
             threads than CPUs take CPU time from everything else on the machine.",
            if o.config == fastest.config {
                format!("{} is {best_word}", o.config)
            } else {
                format!(
                    "{} is the simplest tie with the {best_word}, {}",
                    o.config, fastest.config
                )
            },
            over_words(&o.config),
            fit.config,
            tolerance * 100.0,
            pct(o_est.median, fit_est.median).abs(),
            if fit_est.median >= o_est.median {
                "behind"
            } else {
                "ahead"
            },
            worse_word,
            chosen.config,
        ));
    } else if chosen.config == fastest.config {
        reason.push(format!(
            "{} is {best_word} ({shown} median{speed}){}.",
            chosen.config,
            if beyond_noise {
                ", better than every simpler configuration beyond noise"
            } else {
                ""
            }
        ));
    } else {
        let why = match ratio(&chosen_est, &best) {
            Some((_, _, high)) => format!(
                "within the {:.0}% tolerance (its runs put it at most {:.1}% slower, 95% \
                 confidence)",
                tolerance * 100.0,
                (high - 1.0) * 100.0
            ),
            None => format!("within the {:.0}% tolerance", tolerance * 100.0),
        };
        reason.push(format!(
            "{} is {best_word}, but only {:.1}% {better_word} than {} ({shown} median{speed}), \
             {why}: the simpler one is recommended.",
            fastest.config,
            pct(best.median, chosen_est.median),
            chosen.config,
        ));
    }
    if let Some((_, (fit, _, fit_est))) = held.filter(|((o, _, _), _)| o.config == chosen.config) {
        let shown = if fit_est.median > chosen_est.median * (1.0 + tolerance) {
            format!("beyond the {:.0}% tolerance", tolerance * 100.0)
        } else {
            match ratio(&fit_est, &chosen_est) {
                Some((low, _, _)) => format!(
                    "beyond noise (at least {:.1}% {worse_word}, 95% confidence)",
                    (low - 1.0) * 100.0,
                ),
                None => "beyond noise".to_owned(),
            }
        };
        reason.push(format!(
            "It is oversubscribed ({}) and recommended all the same: {}, the {best_word} \
             configuration that is not, is {:.1}% {} by median, {shown}.",
            over_words(&chosen.config),
            fit.config,
            pct(chosen_est.median, fit_est.median),
            worse_word,
        ));
    }
    if let Some((s, _, e)) = unshown {
        let high = ratio(e, &best).map_or(String::new(), |(_, _, high)| {
            format!(
                " (up to {:.1}% slower, 95% confidence)",
                (high - 1.0) * 100.0
            )
        });
        reason.push(format!(
            "{} is within {:.1}% of the {best_word} by median, but its {} and the {best_word}'s \
             {} cannot show it within the {:.0}% tolerance{high}, so it is not recommended.",
            s.config,
            pct(best.median, e.median),
            crate::sys::counted(s.runs, "run"),
            fastest.runs,
            tolerance * 100.0,
        ));
    }
    // The runs that decided it, when configurations were measured further than the others.
    if let Some(base) = runs {
        let (named, others): (Vec<&ConfigSummary>, Vec<&ConfigSummary>) = measured
            .iter()
            .map(|(s, _, _)| *s)
            .filter(|s| s.runs > base)
            .partition(|s| s.config == chosen.config || s.config == fastest.config);
        // A few are all named; of many (ties that ended one after another), the two compared.
        let (named, others) = if named.len() + others.len() <= 3 {
            let mut all = named;
            all.extend(others);
            all.sort_by(|a, b| a.config.cmp(&b.config));
            (all, Vec::new())
        } else {
            (named, others)
        };
        let named: Vec<String> = named
            .iter()
            .map(|s| format!("{} ({} runs)", s.config, s.runs))
            .collect();
        let others = match others.len() {
            0 => String::new(),
            n => format!(
                "; {} got more runs on the way",
                crate::sys::counted(n, "other configuration")
            ),
        };
        if !named.is_empty() {
            reason.push(format!(
                "Decided by more runs where {base} could not tell: {}{others}.",
                named.join(", ")
            ));
        }
    }
    // The other objectives, stated, and whether the choice is on their Pareto front.
    if objectives.len() >= 2 {
        let others: Vec<String> = objectives
            .iter()
            .zip(&chosen.objectives)
            .skip(1)
            .map(|(o, v)| {
                v.as_ref().map_or_else(
                    || format!("{} unknown", o.name()),
                    |v| format!("{} {}", o.name(), o.show(v.median)),
                )
            })
            .collect();
        let names: Vec<&str> = objectives.iter().map(Objective::name).collect();
        reason.push(format!(
            "Its {}: {} (median); {}.",
            if others.len() == 1 {
                "other objective"
            } else {
                "other objectives"
            },
            others.join(", "),
            if front == [chosen.config.clone()] {
                format!(
                    "it is the Pareto front of {} alone: no other configuration is better on any",
                    names.join(" and ")
                )
            } else if front.contains(&chosen.config) {
                format!(
                    "it is on the Pareto front of {} with {}",
                    names.join(" and "),
                    crate::sys::counted(front.len() - 1, "other configuration")
                )
            } else {
                format!(
                    "configurations beat it on all of {}: see the Pareto front",
                    names.join(" and ")
                )
            }
        ));
    }

    // Pinning: at the recommended thread count, the best pinned placement against the OS's
    // (same CPU set and throttle).
    let best_of = |pred: &dyn Fn(&Config) -> bool| {
        measured
            .iter()
            .filter(|(s, _, _)| pred(&s.config))
            .min_by(|a, b| a.2.median.total_cmp(&b.2.median))
            .map(|(s, _, e)| (*s, *e))
    };
    // Whether two configurations' difference can be told from noise: not with one run each.
    let once_each =
        |a: &Estimate, b: &Estimate| a.n < MIN_RUNS_FOR_NOISE && b.n < MIN_RUNS_FOR_NOISE;
    // Whether the slower of two is slower beyond the tolerance and beyond noise.
    let apart = |a: &Estimate, b: &Estimate| {
        let (slow, fast) = if a.median >= b.median { (a, b) } else { (b, a) };
        tie(slow, fast, tolerance) == Tie::No && slower_beyond_noise(slow, fast)
    };
    let same = |c: &Config| {
        c.threads == chosen.config.threads
            && c.family.cpus == chosen.config.family.cpus
            && c.family.throttle == chosen.config.family.throttle
    };
    if let (Some((_, os_e)), Some((pinned, pin_e))) = (
        best_of(&|c| same(c) && !c.family.place.is_pinned()),
        best_of(&|c| same(c) && c.family.place.is_pinned()),
    ) {
        let gain = pct(pin_e.median, os_e.median);
        let n = crate::sys::counted(chosen.config.threads, "thread");
        if once_each(&os_e, &pin_e) {
            reason.push(format!(
                "At {n} pinning ({}) {} {:.1}% (one run each: not told from noise).",
                pinned.config.family.place,
                if gain >= 0.0 { "gains" } else { "costs" },
                gain.abs()
            ));
        } else if gain > 0.0 && apart(&os_e, &pin_e) {
            reason.push(format!(
                "At {n} pinning ({}) gains {gain:.1}% over the OS's placement, beyond noise.",
                pinned.config.family.place
            ));
        } else if gain >= 0.0 {
            reason.push(format!(
                "At {n} pinning ({}) gains {gain:.1}%, within noise: leave placement to \
                 the OS.",
                pinned.config.family.place
            ));
        } else {
            reason.push(format!(
                "At {n} pinning ({}) costs {:.1}%: leave placement to the OS.",
                pinned.config.family.place, -gain
            ));
        }
    }

    // CPU exclusion (e.g. keeping CPU 0 free).
    if let (Some((_, all_e)), Some((excl, excl_e))) = (
        best_of(&|c| c.family.cpus.is_all()),
        best_of(&|c| !c.family.cpus.is_all()),
    ) {
        let gain = pct(excl_e.median, all_e.median);
        let verdict = if once_each(&excl_e, &all_e) {
            "one run each: not told from noise"
        } else if apart(&excl_e, &all_e) {
            "beyond noise"
        } else {
            "within noise"
        };
        reason.push(format!(
            "Restricting to '{}' {} {:.1}%, {verdict}.",
            excl.config.family.cpus,
            if gain >= 0.0 { "gains" } else { "costs" },
            gain.abs()
        ));
    }

    // Oversubscription, from the counters of the chosen family.
    let family = &chosen.config.family;
    let curve: Vec<&ConfigSummary> = summaries
        .iter()
        .filter(|s| s.config.family == *family && estimate(s, objective).is_some())
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
                    "Beyond {} involuntary context switches rise {ratio:.0}× ({at:.0} → \
                     {top_cs:.0} per run at {} threads).",
                    crate::sys::counted(chosen.config.threads, "thread"),
                    top.config.threads
                ));
            }
        }
    }

    let mut warnings = Vec::new();
    for s in summaries {
        if s.objectives
            .first()
            .and_then(Option::as_ref)
            .is_some_and(|w| w.bimodal)
        {
            warnings.push(format!(
                "{}: {} fall in two clusters (bimodal): typical of threads sometimes \
                 sharing a core, or of a noisy machine; more runs would tell.",
                s.config,
                if objective.is_time() {
                    "run times".to_owned()
                } else {
                    format!("its {} values", objective.name())
                }
            ));
        }
    }
    // Outliers of the choice and of the fastest (hyperfine's warning, with the configuration
    // named): one far run widens an interval and can make a slower configuration tie.
    let pair = if chosen.config == fastest.config {
        vec![chosen]
    } else {
        vec![chosen, fastest]
    };
    for s in pair {
        let Some(v) = s.objectives.first().and_then(Option::as_ref) else {
            continue;
        };
        if !v.outliers.is_empty() {
            warnings.push(format!(
                "{}: {} of {} are statistical outliers (modified z-score above {}, from the \
                 median and MAD): they widen its interval; a quieter machine or more runs would \
                 tell.",
                s.config,
                v.outliers.len(),
                crate::sys::counted(v.n, "run"),
                crate::measure::OUTLIER_Z,
            ));
        }
    }
    // Configurations put out by a failed run, told once with the first's reason.
    let out: Vec<&ConfigSummary> = summaries.iter().filter(|s| s.out.is_some()).collect();
    if let Some(first) = out.first() {
        warnings.push(format!(
            "{} out of the running after a failed run (the first: {}: {}); tune -i keeps \
             such configurations, without their failed runs.",
            if out.len() == 1 {
                "1 configuration is".to_owned()
            } else {
                format!("{} configurations are", out.len())
            },
            first.config,
            first.out.as_deref().unwrap_or_default()
        ));
    }
    // Failed runs left out of the statistics of configurations still in the running (-i).
    for s in summaries.iter().filter(|s| s.out.is_none() && s.failed > 0) {
        let word = if s.timed_out == s.failed {
            "timed out"
        } else {
            "failed"
        };
        warnings.push(format!(
            "{}: {} of {} {word} (left out of its statistics); the first: {}.",
            s.config,
            s.failed,
            crate::sys::counted(s.runs + s.failed, "run"),
            s.first_failure.as_deref().unwrap_or("failed")
        ));
    }
    // Configurations with one successful run that could change the answer: the choice, the
    // fastest and those within the tolerance of it (the search's one-run exploration of the
    // rest is no caveat).
    let every = measured.iter().all(|(s, _, _)| s.runs < MIN_RUNS_FOR_NOISE);
    let single: Vec<&(&ConfigSummary, &Config, Estimate)> = measured
        .iter()
        .filter(|(s, _, e)| {
            s.runs < MIN_RUNS_FOR_NOISE
                && (every
                    || s.config == chosen.config
                    || s.config == fastest.config
                    || tie(e, &best, tolerance) != Tie::No)
        })
        .collect();
    if !single.is_empty() {
        if every && single.iter().all(|(s, _, _)| s.failed == 0) {
            warnings.push(
                "one successful run per configuration: there is no interval, so no difference \
                 can be told from noise (--runs 3 or more for that)."
                    .to_owned(),
            );
        } else {
            let (first, _, _) = single[0];
            warnings.push(format!(
                "{} with one successful run ({}{}): there is no interval for {}, so no \
                 difference can be told from noise.",
                crate::sys::counted(single.len(), "configuration"),
                first.config,
                if first.failed > 0 {
                    format!(", of {} made", first.runs + first.failed)
                } else {
                    String::new()
                },
                if single.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    if simpler.is_empty() && measured.len() == 1 {
        warnings.push(format!(
            "{} is the only configuration in the running: nothing to compare it with.",
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
