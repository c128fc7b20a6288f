//! The placement a program is handed in its environment, read by
//! [`ThreadPoolBuilder::from_env`](crate::ThreadPoolBuilder::from_env): coretune's plan
//! (`CORETUNE_PIN`, the pinning library's format) or OpenMP's `OMP_PLACES` in every form the
//! OpenMP specification (5.2, §6.5 "OMP_PLACES") allows.
//!
//! ```text
//! CORETUNE_PIN = item { " " item }        item = "places=" list { "/" list } | "skip=" …
//! OMP_PLACES   = p-list | aname
//! p-list       = p-interval { "," p-interval }
//! p-interval   = place [ ":" len [ ":" stride ] ] | "!" place
//! place        = "{" res-list "}" | res
//! res-list     = res-interval { "," res-interval }
//! res-interval = res [ ":" num [ ":" stride ] ] | "!" res
//! aname        = ( "threads" | "cores" | "ll_caches" | "numa_domains" | "sockets" ) [ "(" n ")" ]
//! ```
//!
//! `{0}:4:2` is the places `{0},{2},{4},{6}`; `{0:2}` the place `{0,1}`; `{0:2}:4:2` the places
//! `{0,1},{2,3},{4,5},{6,7}`; strides may be negative; `!` leaves a place (or a CPU) out. The
//! abstract names take the CPUs this process may run on, grouped as Linux's sysfs describes
//! them (`topology/core_cpus_list`, `package_cpus_list`, the last-level cache's
//! `shared_cpu_list`, `node*/cpulist`), and the first `n` of them with `(n)`. They are read
//! on Linux only; elsewhere they are an error naming the variable.

/// One place: the CPUs a thread placed there may run on, ascending.
pub(crate) type Place = Vec<usize>;

/// The places in `CORETUNE_PIN`'s `places=0/2/1,3` item (other items, like `skip=`, are the
/// pinning library's).
pub(crate) fn parse_coretune_plan(text: &str) -> Result<Vec<Place>, String> {
    let list = text
        .split_ascii_whitespace()
        .find_map(|item| item.strip_prefix("places="))
        .ok_or("no places= item")?;
    list.split('/')
        .map(|place| {
            let cpus = parse_cpu_list(place)?;
            if cpus.is_empty() {
                Err(format!("empty place in {list:?}"))
            } else {
                Ok(cpus)
            }
        })
        .collect()
}

/// A CPU list as the kernel writes them: `0-3,8`.
pub(crate) fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let number = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("{s:?} is not a CPU number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("range {part:?} runs backwards"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// `OMP_PLACES`: an explicit list, or an abstract name whose places `abstract_places(name)`
/// gives (all of them; `(n)` keeps the first `n`).
pub(crate) fn parse_omp_places(
    text: &str,
    abstract_places: impl Fn(&str) -> Result<Vec<Place>, String>,
) -> Result<Vec<Place>, String> {
    let text = text.trim();
    let word_end = text
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '_'))
        .unwrap_or(text.len());
    if word_end > 0 {
        let (name, rest) = text.split_at(word_end);
        let name = name.to_ascii_lowercase();
        let count = match rest.trim() {
            "" => None,
            rest => {
                let inner = rest
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| format!("expected `{name}(N)`, found {text:?}"))?;
                match inner.trim().parse::<usize>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => return Err(format!("{inner:?} in {text:?} is not a positive count")),
                }
            }
        };
        let mut places = abstract_places(&name)?;
        if places.is_empty() {
            return Err(format!("{name}: this process may run on no CPU of any"));
        }
        if let Some(n) = count {
            places.truncate(n);
        }
        return Ok(places);
    }
    let mut parser = Parser { text, at: 0 };
    let places = parser.p_list()?;
    if places.is_empty() {
        return Err(format!("{text:?} leaves no place"));
    }
    Ok(places)
}

/// A recursive-descent reader of the explicit form.
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        // The caller names the variable and its value.
        format!("{what} at byte {}", self.at)
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_spaces();
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn number(&mut self) -> Result<i64, String> {
        self.skip_spaces();
        let start = self.at;
        if self.peek() == Some('-') || self.peek() == Some('+') {
            self.at += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        self.text[start..self.at].parse().map_err(|_| {
            self.at = start;
            self.error("expected a number")
        })
    }

    fn count(&mut self) -> Result<usize, String> {
        let n = self.number()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| self.error("a count must be positive"))
    }

    /// `:len[:stride]` after an item, or nothing (`(1, 1)`).
    fn interval(&mut self) -> Result<(usize, i64), String> {
        if !self.eat(':') {
            return Ok((1, 1));
        }
        let len = self.count()?;
        let stride = if self.eat(':') { self.number()? } else { 1 };
        Ok((len, stride))
    }

    fn p_list(&mut self) -> Result<Vec<Place>, String> {
        let mut places: Vec<Place> = Vec::new();
        loop {
            if self.eat('!') {
                let excluded = self.place()?;
                places.retain(|p| *p != excluded);
            } else {
                let place = self.place()?;
                let (len, stride) = self.interval()?;
                for k in 0..len {
                    places.push(self.shift(&place, k, stride)?);
                }
            }
            if !self.eat(',') {
                break;
            }
        }
        self.skip_spaces();
        if self.at != self.text.len() {
            return Err(self.error("unexpected text"));
        }
        Ok(places)
    }

    /// `place` with every CPU moved by `k × stride`.
    fn shift(&self, place: &[usize], k: usize, stride: i64) -> Result<Place, String> {
        let by = i64::try_from(k)
            .ok()
            .and_then(|k| k.checked_mul(stride))
            .ok_or_else(|| self.error("interval too long"))?;
        let mut out: Place = place
            .iter()
            .map(|&cpu| {
                i64::try_from(cpu)
                    .ok()
                    .and_then(|c| c.checked_add(by))
                    .and_then(|c| usize::try_from(c).ok())
                    .ok_or_else(|| self.error("the interval goes below CPU 0"))
            })
            .collect::<Result<_, _>>()?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn place(&mut self) -> Result<Place, String> {
        if !self.eat('{') {
            // A bare resource is a place of one CPU.
            let cpu = self.cpu()?;
            return Ok(vec![cpu]);
        }
        let mut cpus: Vec<usize> = Vec::new();
        loop {
            if self.eat('!') {
                let excluded = self.cpu()?;
                cpus.retain(|&c| c != excluded);
            } else {
                let first = self.cpu()?;
                let (num, stride) = self.interval()?;
                for k in 0..num {
                    cpus.extend(self.shift(&[first], k, stride)?);
                }
            }
            if !self.eat(',') {
                break;
            }
        }
        if !self.eat('}') {
            return Err(self.error("expected `}`"));
        }
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return Err(self.error("empty place"));
        }
        Ok(cpus)
    }

    fn cpu(&mut self) -> Result<usize, String> {
        let start = self.at;
        let n = self.number()?;
        usize::try_from(n).map_err(|_| {
            self.at = start;
            self.error("a CPU number cannot be negative")
        })
    }
}

/// The places an abstract name stands for on this machine: this process's CPUs grouped as
/// Linux's sysfs describes them, ordered by their first CPU.
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) fn abstract_places(name: &str) -> Result<Vec<Place>, String> {
    use std::collections::BTreeMap;
    use std::path::Path;
    let allowed = crate::sys::current_affinity()
        .map_err(|e| format!("cannot read this process's CPUs: {e}"))?;
    let sysfs = Path::new("/sys/devices/system");
    let read_list = |path: &Path| -> Option<Vec<usize>> {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| parse_cpu_list(&t).ok())
    };
    // Groups the allowed CPUs by the set each belongs to.
    let group_by = |set_of: &dyn Fn(usize) -> Option<Vec<usize>>| -> Result<Vec<Place>, String> {
        let mut groups: BTreeMap<Vec<usize>, Place> = BTreeMap::new();
        for &cpu in &allowed {
            let set = set_of(cpu).ok_or_else(|| {
                format!("{name}: sysfs does not describe CPU {cpu}'s {name} on this machine")
            })?;
            groups.entry(set).or_default().push(cpu);
        }
        let mut places: Vec<Place> = groups.into_values().collect();
        places.sort_by_key(|p| p.first().copied());
        Ok(places)
    };
    let topology = |cpu: usize, files: &[&str]| {
        files
            .iter()
            .find_map(|f| read_list(&sysfs.join(format!("cpu/cpu{cpu}/topology/{f}"))))
    };
    match name {
        "threads" => Ok(allowed.iter().map(|&c| vec![c]).collect()),
        "cores" => group_by(&|cpu| topology(cpu, &["core_cpus_list", "thread_siblings_list"])),
        "sockets" => group_by(&|cpu| topology(cpu, &["package_cpus_list", "core_siblings_list"])),
        "ll_caches" => group_by(&|cpu| {
            // The cache of the highest level this CPU has.
            let dir = sysfs.join(format!("cpu/cpu{cpu}/cache"));
            std::fs::read_dir(dir)
                .ok()?
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let level: u32 = std::fs::read_to_string(e.path().join("level"))
                        .ok()?
                        .trim()
                        .parse()
                        .ok()?;
                    Some((level, read_list(&e.path().join("shared_cpu_list"))?))
                })
                .max_by_key(|(level, _)| *level)
                .map(|(_, set)| set)
        }),
        "numa_domains" => {
            let nodes: Vec<Vec<usize>> = std::fs::read_dir(sysfs.join("node"))
                .map_err(|e| format!("numa_domains: {e}"))?
                .filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("node"))
                        .is_some_and(|n| n.parse::<usize>().is_ok())
                })
                .filter_map(|e| read_list(&e.path().join("cpulist")))
                .collect();
            group_by(&|cpu| nodes.iter().find(|n| n.contains(&cpu)).cloned())
        }
        _ => Err(format!(
            "unknown abstract name {name:?} (threads, cores, ll_caches, numa_domains, sockets)"
        )),
    }
}

/// Abstract names need the machine's topology, which only Linux's sysfs gives the pool.
#[cfg(not(all(target_os = "linux", not(loom))))]
pub(crate) fn abstract_places(name: &str) -> Result<Vec<Place>, String> {
    Err(format!(
        "abstract places ({name}) are read on Linux only; give the places as a list ({{0}},{{1}})"
    ))
}

#[cfg(test)]
mod test {
    use super::*;

    fn omp(text: &str) -> Result<Vec<Place>, String> {
        parse_omp_places(text, |name| match name {
            "cores" => Ok(vec![vec![0, 1], vec![2, 3], vec![4, 5]]),
            "threads" => Ok((0..6).map(|c| vec![c]).collect()),
            other => Err(format!("unknown {other}")),
        })
    }

    #[test]
    fn every_explicit_form_of_the_spec() {
        let cases: &[(&str, Vec<Place>)] = &[
            ("{0},{1}", vec![vec![0], vec![1]]),
            ("{0:2}", vec![vec![0, 1]]),
            ("{0}:4:2", vec![vec![0], vec![2], vec![4], vec![6]]),
            ("{0}:2", vec![vec![0], vec![1]]),
            (
                "{0:2}:4:2",
                vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]],
            ),
            (
                "{0,1,2,3},{4,5,6,7}",
                vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
            ),
            ("{0:4:2}", vec![vec![0, 2, 4, 6]]),
            ("{6}:3:-2", vec![vec![6], vec![4], vec![2]]),
            ("{0:4,!2}", vec![vec![0, 1, 3]]),
            ("{0}:4,!{2}", vec![vec![0], vec![1], vec![3]]),
            (" { 0 } , { 1 } ", vec![vec![0], vec![1]]),
            ("0,1", vec![vec![0], vec![1]]),
        ];
        for (text, want) in cases {
            assert_eq!(omp(text).as_ref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn abstract_names_with_and_without_a_count() {
        assert_eq!(omp("cores").unwrap().len(), 3);
        assert_eq!(omp("cores(2)"), Ok(vec![vec![0, 1], vec![2, 3]]));
        assert_eq!(omp("THREADS(1)"), Ok(vec![vec![0]]));
        assert!(
            omp("cores(0)")
                .unwrap_err()
                .contains("not a positive count")
        );
        assert!(omp("sockets").unwrap_err().contains("unknown sockets"));
    }

    #[test]
    fn malformed_lists_say_where() {
        for (text, says) in [
            ("{0", "expected `}` at byte 2"),
            ("{}", "expected a number at byte 1"),
            ("{0}:0", "count must be positive"),
            ("{1}:3:-1", "below CPU 0"),
            ("{0},", "expected a number"),
            ("{0}x", "unexpected text at byte 3"),
            ("{-1}", "cannot be negative at byte 1"),
            ("{0},!{0}", "leaves no place"),
        ] {
            let error = omp(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn coretune_plan_places() {
        assert_eq!(
            parse_coretune_plan("places=0/2/1,3 skip=0x1"),
            Ok(vec![vec![0], vec![2], vec![1, 3]])
        );
        assert_eq!(
            parse_coretune_plan("skip=auto places=0-3/4-7"),
            Ok(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]])
        );
        assert!(parse_coretune_plan("skip=0x0").is_err());
        assert!(parse_coretune_plan("places=0//1").is_err());
        assert!(parse_coretune_plan("places=a").is_err());
    }

    #[cfg(all(target_os = "linux", not(loom)))]
    #[test]
    fn abstract_names_cover_this_process_cpus() {
        let allowed = crate::sys::current_affinity().unwrap();
        for name in ["threads", "cores", "sockets", "ll_caches", "numa_domains"] {
            let Ok(places) = abstract_places(name) else {
                // A machine whose sysfs lacks the files (some containers): said, not hidden.
                eprintln!("{name}: not described by this machine's sysfs");
                continue;
            };
            let mut all: Vec<usize> = places.concat();
            all.sort_unstable();
            assert_eq!(all, allowed, "{name}: {places:?}");
        }
        assert_eq!(abstract_places("threads").unwrap().len(), allowed.len());
    }
}
