//! What `adapt` turns on a running program — a [`Setting`]: its CPU set, how its threads are
//! placed on it, its thread count (through a user's hook) and its cgroup's CPU quota — and the
//! [`Space`] of settings it may move to, with each setting's neighbours.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::placement::Policy;
use crate::sys::format_list;

/// One setting of a running program, as applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// Its CPUs (OS indexes, ascending).
    pub cpus: Vec<usize>,
    /// How its threads are placed on them: every thread on the whole set (`os`: the scheduler
    /// decides), or one by one as a policy plans it (`cores`, `compact`, ...); `None` as they
    /// were found (a program attached to whose threads had sets of their own).
    pub place: Option<Policy>,
    /// Its thread count, where a hook changes it (`--set-threads`).
    pub threads: Option<usize>,
    /// Its cgroup's CPU quota in CPUs (`cpu.max`, v1 `cpu.cfs_quota_us / cpu.cfs_period_us`);
    /// `None`: no limit, or the quota is no knob.
    pub quota: Option<f64>,
}

impl Setting {
    /// `cpus` shared by every thread (`os`), nothing else turned.
    pub fn shared(cpus: Vec<usize>) -> Self {
        Self {
            cpus,
            place: Some(Policy::Os),
            threads: None,
            quota: None,
        }
    }

    /// The placement as text: the policy's name, or `as-found`.
    pub fn place_text(&self) -> &'static str {
        self.place.map_or("as-found", Policy::as_str)
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CPUs {} {}", format_list(&self.cpus), self.place_text())?;
        if let Some(n) = self.threads {
            write!(f, ", {n} thread{}", if n == 1 { "" } else { "s" })?;
        }
        if let Some(q) = self.quota {
            write!(f, ", quota {q} CPUs")?;
        }
        Ok(())
    }
}

/// In the log: `{"cpus": "0-1", "place": "os", "threads": 4, "quota": null}`.
impl Serialize for Setting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            cpus: String,
            place: &'a str,
            threads: Option<usize>,
            quota: Option<f64>,
        }
        Shown {
            cpus: format_list(&self.cpus),
            place: self.place_text(),
            threads: self.threads,
            quota: self.quota,
        }
        .serialize(s)
    }
}

/// The settings the controller may move to: which CPUs (in the order it adds them), which
/// placements, which thread counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Space {
    /// The CPUs it may use, in the order it adds them (one PU per core first, then the SMT
    /// siblings); a setting with fewer CPUs drops the last of its CPUs in this order.
    pub order: Vec<usize>,
    /// The placements it may try.
    pub places: Vec<Policy>,
    /// The thread counts it may try (lowest, highest), when the thread count is a knob.
    pub threads: Option<(usize, usize)>,
    /// The quotas it may try in CPUs (lowest, highest), when the quota is a knob; no limit
    /// counts as the highest.
    pub quota: Option<(f64, f64)>,
}

impl Space {
    /// The neighbours of `s`, in the order they are tried: one CPU's worth more quota (the
    /// limit that binds first where there is one), one CPU more, one CPU fewer, each other
    /// placement on the same CPUs, a quarter more and a quarter fewer threads (at least one),
    /// then one CPU's worth less quota. A setting found as it was (`place` `None`) has as
    /// neighbours the same ones with `os`.
    pub fn neighbours(&self, s: &Setting) -> Vec<Setting> {
        let place = s.place.unwrap_or(Policy::Os);
        let mut out = Vec::new();
        let (more_quota, less_quota) = match self.quota {
            Some((low, high)) => {
                let q = s.quota.unwrap_or(high);
                let more = (q < high).then(|| Setting {
                    quota: Some((q + 1.0).min(high)),
                    ..s.clone()
                });
                let less = (q - 1.0 >= low - 1e-9).then(|| Setting {
                    quota: Some(q - 1.0),
                    ..s.clone()
                });
                (more, less)
            }
            None => (None, None),
        };
        out.extend(more_quota);
        let with_cpus = |cpus: Vec<usize>| {
            let mut cpus = cpus;
            cpus.sort_unstable();
            Setting {
                cpus,
                place: Some(place),
                ..s.clone()
            }
        };
        if let Some(&add) = self.order.iter().find(|c| !s.cpus.contains(c)) {
            let mut cpus = s.cpus.clone();
            cpus.push(add);
            out.push(with_cpus(cpus));
        }
        if s.cpus.len() > 1 {
            let drop = self
                .order
                .iter()
                .rev()
                .find(|c| s.cpus.contains(c))
                .or_else(|| s.cpus.last());
            if let Some(drop) = drop {
                out.push(with_cpus(
                    s.cpus.iter().copied().filter(|c| c != drop).collect(),
                ));
            }
        }
        for &p in &self.places {
            if s.place != Some(p) {
                out.push(Setting {
                    place: Some(p),
                    ..s.clone()
                });
            }
        }
        if let (Some((low, high)), Some(n)) = (self.threads, s.threads) {
            let step = (n / 4).max(1);
            for m in [
                n.saturating_add(step).min(high),
                n.saturating_sub(step).max(low),
            ] {
                if m != n {
                    out.push(Setting {
                        threads: Some(m),
                        place: Some(place),
                        ..s.clone()
                    });
                }
            }
        }
        out.extend(less_quota);
        out.dedup();
        out.retain(|n| n != s);
        out
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn space() -> Space {
        Space {
            order: vec![0, 2, 1, 3],
            places: vec![Policy::Os, Policy::Cores],
            threads: Some((1, 8)),
            quota: None,
        }
    }

    #[test]
    fn a_quota_moves_by_one_cpus_worth_first_up_last_down_within_its_bounds() {
        let sp = Space {
            quota: Some((1.0, 4.0)),
            ..space()
        };
        let s = Setting {
            quota: Some(2.0),
            ..Setting::shared(vec![0, 2])
        };
        let n = sp.neighbours(&s);
        assert_eq!(n[0].quota, Some(3.0));
        assert_eq!(n.last().map(|l| l.quota), Some(Some(1.0)));
        let low = Setting {
            quota: Some(1.0),
            ..s.clone()
        };
        assert!(sp.neighbours(&low).iter().all(|x| x.quota >= Some(1.0)));
        let below = Setting {
            quota: Some(0.25),
            ..s.clone()
        };
        assert_eq!(sp.neighbours(&below)[0].quota, Some(1.25));
        // No limit counts as the highest: only less is tried.
        let none = Setting { quota: None, ..s };
        let n = sp.neighbours(&none);
        assert_eq!(n.last().map(|l| l.quota), Some(Some(3.0)));
        assert!(n.iter().all(|x| x.quota.is_none() || x.quota == Some(3.0)));
    }

    #[test]
    fn neighbours_add_and_drop_cpus_in_the_spaces_order_then_try_places_and_thread_counts() {
        let s = Setting {
            threads: Some(4),
            ..Setting::shared(vec![0, 2])
        };
        let n = space().neighbours(&s);
        let shown: Vec<String> = n.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "CPUs 0-2 os, 4 threads",
                "CPUs 0 os, 4 threads",
                "CPUs 0,2 cores, 4 threads",
                "CPUs 0,2 os, 5 threads",
                "CPUs 0,2 os, 3 threads",
            ]
        );
    }

    #[test]
    fn one_cpu_has_no_fewer_and_all_cpus_no_more() {
        let sp = space();
        let one = sp.neighbours(&Setting::shared(vec![3]));
        assert!(one.iter().all(|n| !n.cpus.is_empty()));
        assert_eq!(one[0].cpus, [0, 3]);
        let all = sp.neighbours(&Setting::shared(vec![0, 1, 2, 3]));
        assert_eq!(all[0].cpus, [0, 1, 2], "drops 3, the last in the order");
        assert!(all.iter().all(|n| n.cpus.len() <= 4));
    }

    #[test]
    fn a_setting_is_logged_as_text() {
        let s = Setting::shared(vec![0, 1]);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"cpus":"0-1","place":"os","threads":null,"quota":null}"#
        );
        let found = Setting { place: None, ..s };
        assert_eq!(found.to_string(), "CPUs 0-1 as-found");
    }
}
