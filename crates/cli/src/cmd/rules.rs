//! `coretune rules check|apply|watch FILE`: a rules file (which programs get which CPUs, in
//! coretune's CPU-set language) checked against the running processes, applied once, or kept in
//! force by a daemon as programs start.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use coretune_core::cpuset::{format_list, set_to_vec};
use coretune_core::enforce::rules;
use coretune_core::enforce::rules::{
    Action, DaemonEvent, DaemonOptions, Enforcer, EventSource, Outcome, RuleAction, RuleSet,
    Trigger,
};
use coretune_core::{Topology, TopologySource};

#[derive(Debug, Args)]
pub(crate) struct RulesArgs {
    #[command(subcommand)]
    command: RulesCommand,
}

#[derive(Debug, Subcommand)]
enum RulesCommand {
    /// Check a rules file and list, per rule, the running processes it matches and what would
    /// change (changes nothing).
    Check(CheckArgs),
    /// Apply a rules file once to the running processes; one JSON line per process changed.
    Apply(ApplyArgs),
    /// The daemon: apply a rules file to every process that starts (the kernel's process-event
    /// connector, else /proc polling), one JSON line per action; SIGHUP re-reads the file.
    Watch(WatchArgs),
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The rules file (TOML).
    file: PathBuf,
    /// One JSON object per matched process instead of the listing.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ApplyArgs {
    /// The rules file (TOML).
    file: PathBuf,
    /// Change nothing: log what would be done.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct WatchArgs {
    /// The rules file (TOML).
    file: PathBuf,
    /// Change nothing: log what would be done.
    #[arg(long)]
    dry_run: bool,
    /// Poll /proc even where the process-event connector works.
    #[arg(long)]
    poll: bool,
    /// The /proc polling interval, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    interval: u64,
}

pub(crate) fn run(args: &RulesArgs) -> anyhow::Result<ExitCode> {
    if !coretune_core::enforce::rules::keeping_in_force_is_supported() {
        bail!(
            "rules: Linux only (process starts through the kernel's process-event connector, \
             /proc); on Windows start programs with `coretune run --cpus`, or keep them placed \
             with Process Lasso or CPU sets"
        );
    }
    // Rules bind processes of this machine: its topology, always.
    let topo = Topology::load(&TopologySource::Live)?;
    match &args.command {
        RulesCommand::Check(a) => check(&topo, a),
        RulesCommand::Apply(a) => apply(&topo, a),
        RulesCommand::Watch(a) => watch(&topo, a),
    }
}

fn load(topo: &Topology, file: &Path) -> anyhow::Result<RuleSet> {
    // One line: the errors name the file (and line and column) themselves.
    let rules = RuleSet::load(file, topo).map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &rules.warnings {
        eprintln!("coretune: warning: {w}");
    }
    Ok(rules)
}

fn not_root_note(only_uid: Option<u32>) {
    if let Some(uid) = only_uid {
        eprintln!(
            "coretune: not root: only processes of uid {uid} (yours) are looked at and changed"
        );
    }
}

fn json_line(action: &Action) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, action)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

fn check(topo: &Topology, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let rules = load(topo, &args.file)?;
    let summary = rules_summary(&rules);
    let mut enforcer = Enforcer::new(rules, true);
    not_root_note(enforcer.only_uid());
    let actions = enforcer
        .scan(Trigger::Start)
        .context("reading the running processes")?;
    if args.json {
        for a in &actions {
            json_line(a)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}: {summary}", args.file.display())?;
    for rule in &enforcer.rules().rules {
        let what = match &rule.action {
            RuleAction::Exclude => "exclude (left alone)".to_owned(),
            RuleAction::Apply(e) => {
                let mut parts = Vec::new();
                if let (Some(cpus), Some(expr)) = (&e.cpus, &e.cpus_expr) {
                    parts.push(format!(
                        "CPUs {} ('{expr}')",
                        format_list(&set_to_vec(cpus))
                    ));
                } else if let Some(cpus) = &e.cpus {
                    parts.push(format!("CPUs {}", format_list(&set_to_vec(cpus))));
                }
                if let Some(p) = e.policy {
                    parts.push(format!("policy {p}"));
                }
                if let Some(n) = e.nice {
                    parts.push(format!("nice {n}"));
                }
                parts.join(", ")
            }
            _ => String::new(),
        };
        writeln!(
            out,
            "\nrule '{}' (line {}): {} → {what}",
            rule.name,
            rule.line,
            rule.describe_match()
        )?;
        let matched: Vec<&Action> = actions.iter().filter(|a| a.rule == rule.name).collect();
        if matched.is_empty() {
            writeln!(out, "  no running process matches")?;
        }
        for a in matched {
            writeln!(out, "  pid {:>7}  {}  {}", a.pid, a.exe, change_text(a))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `3 rules (1 skipped on this machine)`.
fn rules_summary(rules: &RuleSet) -> String {
    let n = rules.rules.len();
    let mut text = format!("{n} rule{}", if n == 1 { "" } else { "s" });
    if !rules.warnings.is_empty() {
        text.push_str(&format!(
            " ({} skipped on this machine)",
            rules.warnings.len()
        ));
    }
    text
}

/// What would change for one process, in words.
fn change_text(a: &Action) -> String {
    let arrow = |old: Option<String>, new: Option<String>| match (old, new) {
        (Some(o), Some(n)) if o == n => format!("{n} (no change)"),
        (Some(o), Some(n)) => format!("{o} → {n}"),
        (None, Some(n)) => format!("→ {n}"),
        _ => String::new(),
    };
    let mut parts = Vec::new();
    if a.new_cpus.is_some() {
        parts.push(format!(
            "CPUs {}",
            arrow(a.old_cpus.clone(), a.new_cpus.clone())
        ));
    }
    if a.new_nice.is_some() {
        parts.push(format!(
            "nice {}",
            arrow(
                a.old_nice.map(|n| n.to_string()),
                a.new_nice.map(|n| n.to_string())
            )
        ));
    }
    let state = match a.result {
        Outcome::Excluded => "excluded".to_owned(),
        Outcome::Unchanged => "already so".to_owned(),
        Outcome::DryRun => format!(
            "would change ({})",
            coretune_core::cpuset::counted(a.threads, "thread")
        ),
        Outcome::Skipped => format!(
            "skipped: {}",
            a.reason.as_deref().unwrap_or("cannot be changed")
        ),
        _ => "changed".to_owned(),
    };
    if parts.is_empty() {
        state
    } else {
        format!("{}  [{state}]", parts.join(", "))
    }
}

fn apply(topo: &Topology, args: &ApplyArgs) -> anyhow::Result<ExitCode> {
    let rules = load(topo, &args.file)?;
    let mut enforcer = Enforcer::new(rules, args.dry_run);
    not_root_note(enforcer.only_uid());
    let actions = enforcer
        .scan(Trigger::Start)
        .context("reading the running processes")?;
    let mut changed = 0;
    let mut skipped = 0;
    for a in actions.iter().filter(|a| a.is_logged()) {
        json_line(a)?;
        match a.result {
            Outcome::Skipped => skipped += 1,
            _ => changed += 1,
        }
    }
    eprintln!(
        "coretune: {changed} process{} {}, {skipped} skipped",
        if changed == 1 { "" } else { "es" },
        if args.dry_run {
            "would be changed"
        } else {
            "changed"
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn watch(topo: &Topology, args: &WatchArgs) -> anyhow::Result<ExitCode> {
    let rules = load(topo, &args.file)?;
    let options = DaemonOptions {
        dry_run: args.dry_run,
        force_poll: args.poll,
        interval: Duration::from_millis(args.interval),
    };
    let file = args.file.clone();
    let mut reload = || RuleSet::load(&file, topo);
    let mut failed: Option<anyhow::Error> = None;
    let mut on = |event: DaemonEvent<'_>| match event {
        DaemonEvent::Started {
            source,
            rules,
            only_uid,
        } => {
            let how = match source {
                EventSource::Connector => "through the kernel's process-event connector".to_owned(),
                EventSource::Polling { interval, reason } => {
                    let why = reason
                        .as_ref()
                        .map(|r| format!(" (the process-event connector is unavailable: {r})"))
                        .unwrap_or_default();
                    format!("by polling /proc every {} ms{why}", interval.as_millis())
                }
                _ => "somehow".to_owned(),
            };
            eprintln!(
                "coretune: rules watch: {} from {}{}; watching process starts {how}",
                rules_summary(rules),
                rules.path.display(),
                if args.dry_run { " (dry run)" } else { "" }
            );
            not_root_note(only_uid);
        }
        DaemonEvent::Action(a) => {
            if let Err(e) = json_line(a) {
                failed.get_or_insert(e);
            }
        }
        DaemonEvent::Reloaded(rules) => {
            for w in &rules.warnings {
                eprintln!("coretune: warning: {w}");
            }
            eprintln!(
                "coretune: SIGHUP: {} from {} in force",
                rules_summary(rules),
                rules.path.display()
            );
        }
        DaemonEvent::ReloadFailed(e) => {
            eprintln!("coretune: SIGHUP: keeping the rules in force: {e}");
        }
        DaemonEvent::EventsLost => eprintln!(
            "coretune: the kernel dropped process events (its queue was full): looking at \
             every process again"
        ),
        DaemonEvent::Stopping(signal) => eprintln!("coretune: stopping (signal {signal})"),
        _ => {}
    };
    rules::run_daemon(rules, &mut reload, &options, &mut on).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(ExitCode::SUCCESS)
}
