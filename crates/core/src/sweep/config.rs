//! One configuration of a sweep, and the grid of them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One point of the grid: how many threads, placed how, on which CPUs, with how many admitted.
///
/// Placement and CPU set are kept as the text the user gave (`spread`, `all ~pu:0`): they are
/// resolved against the topology when the configuration runs, and the text is what a report and
/// the `apply` lines show.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Config {
    /// Worker threads.
    pub threads: usize,
    /// Placement policy (`os`, `compact`, `spread`, `cores`, `round-robin`).
    pub place: String,
    /// CPU-set expression the placement is limited to (`all` = no limit).
    pub cpus: String,
    /// At most this many workers compute at once; `None` = no throttle.
    pub throttle: Option<usize>,
}

impl Config {
    /// The configuration with everything but the thread count: what a scaling curve is drawn
    /// for.
    pub fn family(&self) -> Family {
        Family {
            place: self.place.clone(),
            cpus: self.cpus.clone(),
            throttle: self.throttle,
        }
    }

    /// How "simple" the configuration is, for breaking ties: fewer threads, then no pinning,
    /// then no CPU exclusion, then no throttle (DESIGN.md: a tie goes to the simplest).
    pub fn simplicity_key(&self) -> (usize, bool, bool, bool, String) {
        (
            self.threads,
            self.place != "os",
            self.cpus != "all",
            self.throttle.is_some(),
            self.place.clone(),
        )
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.threads == 1 { "" } else { "s" };
        write!(f, "{} thread{s}, {}", self.threads, self.family())
    }
}

/// A configuration without its thread count.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Family {
    /// Placement policy.
    pub place: String,
    /// CPU-set expression.
    pub cpus: String,
    /// Throttle limit.
    pub throttle: Option<usize>,
}

impl Family {
    /// This family at `threads`.
    pub fn at(&self, threads: usize) -> Config {
        Config {
            threads,
            place: self.place.clone(),
            cpus: self.cpus.clone(),
            throttle: self.throttle,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "place {}", self.place)?;
        if self.cpus != "all" {
            write!(f, ", cpus '{}'", self.cpus)?;
        }
        if let Some(k) = self.throttle {
            write!(f, ", throttle {k}")?;
        }
        Ok(())
    }
}

/// The grid: every combination of its axes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    /// Thread counts, ascending, distinct.
    pub threads: Vec<usize>,
    /// Placement policies.
    pub places: Vec<String>,
    /// CPU-set expressions.
    pub cpus: Vec<String>,
    /// Throttle limits (`None` = no throttle).
    pub throttles: Vec<Option<usize>>,
}

impl Grid {
    /// Every family of the grid, in axis order.
    pub fn families(&self) -> Vec<Family> {
        let mut out = Vec::new();
        for place in &self.places {
            for cpus in &self.cpus {
                for &throttle in &self.throttles {
                    out.push(Family {
                        place: place.clone(),
                        cpus: cpus.clone(),
                        throttle,
                    });
                }
            }
        }
        out
    }

    /// Every configuration of the grid.
    pub fn configs(&self) -> Vec<Config> {
        self.families()
            .iter()
            .flat_map(|f| self.threads.iter().map(move |&t| f.at(t)))
            .collect()
    }
}

/// What thread-count tokens mean on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineCounts {
    /// Physical cores usable.
    pub cores: usize,
    /// PUs usable.
    pub pus: usize,
}

/// Parses a thread-count list: numbers, ranges `a-b` or `a..b` (inclusive), ranges with a step
/// `a-b:s`, and the tokens `cores`, `pus` and `K*cores` / `K*pus`, comma-separated
/// (`1-4,6,8,cores,2*pus`). The result is sorted and without duplicates.
///
/// # Errors
///
/// A message naming the offending item.
pub fn parse_threads(spec: &str, machine: MachineCounts) -> Result<Vec<usize>, String> {
    let token = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        let (k, name) = match t.split_once('*') {
            Some((k, name)) => (
                k.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("'{t}': expected K*cores or K*pus"))?,
                name.trim(),
            ),
            None => (1, t),
        };
        let base = match name {
            "cores" => machine.cores,
            "pus" => machine.pus,
            n => {
                if k != 1 || t.contains('*') {
                    return Err(format!("'{t}': expected K*cores or K*pus"));
                }
                n.parse::<usize>()
                    .map_err(|_| format!("'{t}': not a thread count, range, cores or pus"))?
            }
        };
        Ok(k * base)
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (
                r,
                s.parse::<usize>()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| format!("'{item}': step must be a positive number"))?,
            ),
            None => (item, 1),
        };
        let bounds = range.split_once("..").or_else(|| range.split_once('-'));
        match bounds {
            Some((a, b)) => {
                let (a, b) = (token(a)?, token(b)?);
                if b < a {
                    return Err(format!("'{item}': range ends before it starts"));
                }
                out.extend((a..=b).step_by(step));
            }
            None => out.push(token(range)?),
        }
    }
    if out.contains(&0) {
        return Err("thread counts must be at least 1".into());
    }
    if out.is_empty() {
        return Err(format!("'{spec}': no thread counts"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The default thread counts: a ladder of roughly ×1.5 steps from 1 to well past the PU count
/// (4 × PUs, at least 8: the article's renderer was fastest at 18 threads on 4 cores), plus the
/// core and PU counts themselves.
pub fn default_threads(machine: MachineCounts) -> Vec<usize> {
    let top = (4 * machine.pus).max(8);
    let mut out = vec![machine.cores.max(1), machine.pus.max(1)];
    let mut p = 1;
    while p <= top {
        out.push(p);
        if p * 3 / 2 <= top && p >= 2 {
            out.push(p * 3 / 2);
        }
        p *= 2;
    }
    out.push(top);
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod test {
    use super::*;

    const LAPTOP: MachineCounts = MachineCounts { cores: 4, pus: 8 };

    #[test]
    fn thread_lists() {
        assert_eq!(
            parse_threads("1-4,6,8", LAPTOP).unwrap(),
            vec![1, 2, 3, 4, 6, 8]
        );
        assert_eq!(
            parse_threads("cores,pus,2*pus", LAPTOP).unwrap(),
            vec![4, 8, 16]
        );
        assert_eq!(parse_threads("1..3", LAPTOP).unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_threads("2-10:4", LAPTOP).unwrap(), vec![2, 6, 10]);
        assert_eq!(parse_threads("1-cores", LAPTOP).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_threads("4,4,1", LAPTOP).unwrap(), vec![1, 4]);
        for (bad, msg) in [
            ("0", "at least 1"),
            ("x", "'x': not a thread count"),
            ("3-1", "ends before"),
            ("2*banana", "K*cores or K*pus"),
            ("1-4:0", "step must be"),
            ("", "no thread counts"),
        ] {
            let err = parse_threads(bad, LAPTOP).unwrap_err();
            assert!(err.contains(msg), "{bad}: {err}");
        }
    }

    #[test]
    fn default_ladder_goes_past_the_pu_count() {
        assert_eq!(
            default_threads(MachineCounts { cores: 2, pus: 2 }),
            vec![1, 2, 3, 4, 6, 8]
        );
        assert_eq!(
            default_threads(LAPTOP),
            vec![1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
        );
    }

    #[test]
    fn grid_and_simplicity() {
        let grid = Grid {
            threads: vec![1, 2],
            places: vec!["os".into(), "spread".into()],
            cpus: vec!["all".into()],
            throttles: vec![None],
        };
        assert_eq!(grid.configs().len(), 4);
        let mut configs = grid.configs();
        configs.sort_by_key(Config::simplicity_key);
        assert_eq!(configs[0].to_string(), "1 thread, place os");
        assert_eq!(configs[1].to_string(), "1 thread, place spread");
    }
}
