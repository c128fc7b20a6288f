//! One run of a built-in workload: a coretune pool per instance, in this process, each worker
//! checking before it works that it is on its CPUs and has its memory policy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::runner::{Runner, Started};
use crate::grid::Config;
use crate::memory::MemPlan;
use crate::placement::Placement;
use crate::program::Audit;
use crate::sweep::Outcome;
use crate::workload::{DynWorkload, RunConfig, run_copies};

impl Runner<'_> {
    /// One run of a built-in workload: a pool per instance, each on its part's CPUs with its
    /// own throttle and memory policy, run at once ([`run_copies`]).
    pub(super) fn run_builtin(
        &self,
        w: &Arc<dyn DynWorkload>,
        c: &Config,
        placements: &[Placement],
        started: &mut Started,
    ) -> Outcome {
        let found = Arc::new(Found::default());
        let several = placements.len() > 1;
        let mut copies = Vec::with_capacity(placements.len());
        for (k, placement) in placements.iter().enumerate() {
            let plan = match self.mem_plan(c, placement) {
                Ok(plan) => plan,
                Err(e) => return Outcome::Failed(e),
            };
            let cpus = placement.pool_cpus(self.topology);
            // Each worker, before it works: on its CPUs, then with the memory policy, which is
            // each worker's own (set_mempolicy is per thread) and set before it touches its
            // data (a workload's pages are first touched by their workers).
            let sets = cpus.clone();
            let found = Arc::clone(&found);
            let copy = if several {
                format!("copy {k}: ")
            } else {
                String::new()
            };
            let hook: crate::workload::StartHook = Arc::new(move |i: usize| {
                found.check_worker(&copy, i, sets.as_deref(), plan.as_ref());
            });
            copies.push((cpus, Some(placement.steal_orders()), Some(hook)));
        }
        let (threads, throttle, machine) = (c.threads, c.family.throttle, self.machine);
        let workload = Arc::clone(w);
        let run = move || {
            let throttles: Vec<_> = copies
                .iter()
                .map(|_| throttle.build(threads, machine))
                .collect();
            let configs: Vec<RunConfig<'_>> = copies
                .into_iter()
                .zip(&throttles)
                .map(|((cpus, steal_order, start_hook), throttle)| RunConfig {
                    threads,
                    cpus,
                    steal_order,
                    start_hook,
                    throttle: throttle.as_ref(),
                })
                .collect();
            run_copies(workload.as_ref(), &configs)
        };
        let Some(limit) = self.settings.timeout else {
            let outcome = match run() {
                Ok(r) => Outcome::Done(r),
                Err(e) => Outcome::Failed(e.to_string()),
            };
            started.audit.merge(found.audit(c, placements));
            return outcome;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("coretune-run".into())
            .spawn(move || {
                let _ = tx.send(run());
            });
        if let Err(e) = spawned {
            return Outcome::Failed(format!("cannot start the run's thread: {e}"));
        }
        let outcome = match rx.recv_timeout(limit) {
            Ok(Ok(r)) => Outcome::Done(r),
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Err(_) => Outcome::Abandoned(format!(
                "a {} run exceeded the timeout ({:.1} s) and cannot be stopped inside coretune",
                w.name(),
                limit.as_secs_f64()
            )),
        };
        started.audit.merge(found.audit(c, placements));
        outcome
    }
}

/// What the workers of a built-in run found about themselves.
#[derive(Debug, Default)]
struct Found {
    /// Workers that checked.
    workers: AtomicUsize,
    /// What did not match, one line each.
    mismatches: Mutex<Vec<String>>,
}

impl Found {
    /// Worker `i` of a pool whose workers were planned on `sets` (`None`: anywhere) checks the
    /// CPUs it may run on, then sets its memory policy `plan` and says if it was refused.
    fn check_worker(
        &self,
        copy: &str,
        i: usize,
        sets: Option<&[Vec<usize>]>,
        plan: Option<&MemPlan>,
    ) {
        self.workers.fetch_add(1, Ordering::Relaxed);
        let mut wrong = Vec::new();
        if let Some(sets) = sets.filter(|s| !s.is_empty()) {
            let planned = &sets[i % sets.len()];
            match crate::program::affinity_of(0) {
                Ok(allowed) => {
                    let allowed = crate::sys::set_to_vec(&allowed);
                    if allowed.iter().any(|c| !planned.contains(c)) {
                        wrong.push(format!(
                            "{copy}worker {i} may run on CPUs {}, not only on its CPUs {}",
                            crate::sys::format_list(&allowed),
                            crate::sys::format_list(planned)
                        ));
                    }
                }
                Err(e) => wrong.push(format!("{copy}worker {i}: its CPUs cannot be read: {e}")),
            }
        }
        if let Some(plan) = plan
            && let Err(e) = plan.apply_to_this_thread()
        {
            wrong.push(format!(
                "{copy}worker {i}: memory policy {} refused: {e}",
                plan.numa_maps_word()
            ));
        }
        if !wrong.is_empty()
            && let Ok(mut m) = self.mismatches.lock()
        {
            m.extend(wrong);
        }
    }

    /// What the run's workers checked and found.
    fn audit(&self, c: &Config, placements: &[Placement]) -> Audit {
        let workers = self.workers.load(Ordering::Relaxed);
        let pinned = placements.iter().any(|p| p.is_pinned()) || c.is_restricted();
        let mut checked = Vec::new();
        if pinned {
            checked.push(format!(
                "each worker on its CPUs ({})",
                crate::sys::counted(workers, "worker")
            ));
        }
        if !c.family.mem.is_default() {
            checked.push(format!("memory policy {} on each worker", c.family.mem));
        }
        Audit {
            checked,
            mismatches: self
                .mismatches
                .lock()
                .map(|m| m.clone())
                .unwrap_or_default(),
        }
    }
}
