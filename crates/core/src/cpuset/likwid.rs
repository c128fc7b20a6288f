//! likwid-pin's CPU expressions, read as likwid reads them (`cpustring.c`, `affinity.c` in
//! likwid 5), so that `-c` arguments users of likwid type work in coretune's CPU-set language:
//!
//! ```text
//! N:0-3  S0:0-1  C1:0,2  M1:0-3  D0:0      domain:index list (L:domain:list is the same)
//! E:N:8  E:S0:4:1:2  E:M1:4:2:4:1          E:domain:count[:chunk:stride[:offset]]
//! M:scatter  S:scatter:4                   round-robin over the domains of one kind
//! S0:0-1@S1:0-1                            several, joined with @
//! ```
//!
//! The **domains** are likwid's, the ones `likwid-pin -p` lists: `N` the node, `S<i>` socket i,
//! `D<i>` die i (each socket is one die where hwloc reports no dies, as likwid counts them),
//! `C<i>` the i-th last-level cache, `M<i>` NUMA node i. Each lists its hardware threads core by
//! core, each core's threads together (likwid's `processorList`), counting only CPUs this
//! process may use. An **index list** counts in likwid's logical order, *physical cores first*:
//! the first thread of every core of the domain, then the second of every core, and so on
//! (`cpulist_sort`), so `S0:0-3` is four cores, not two cores and their SMT siblings. The list
//! keeps the order written, as likwid-pin does: `S0:1,0` is the domain's second thread, then its
//! first, and a descending range counts down (`N:3-0`). An **`E:` expression** walks the
//! processor list itself (siblings together): `count` threads in chunks of `chunk`, the chunks
//! `stride` apart, from `offset`. **Scatter** takes each domain's logical list in turn. A CPU
//! named twice stays twice (`N:1,0@N:1` is 1,0,1 for likwid-pin: three threads, two on CPU 1).

use hwlocality::object::TopologyObject;
use hwlocality::object::types::ObjectType;

use crate::topology::Topology;

/// One likwid selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LikwidSel {
    /// `DOMAIN:LIST` or `L:DOMAIN:LIST`: positions in the domain's logical order.
    Logical {
        /// The domain (`N`, `S0`, `C1`, `M0`, `D0`).
        domain: String,
        /// The positions, in the order written (`0-3,5`; `1,0`; `3-0` counts down).
        positions: Vec<usize>,
    },
    /// `E:DOMAIN:COUNT[:CHUNK:STRIDE[:OFFSET]]`.
    Expression {
        /// The domain.
        domain: String,
        /// Threads to take.
        count: usize,
        /// Consecutive threads per chunk.
        chunk: usize,
        /// Distance between the chunks' starts.
        stride: usize,
        /// Where the first chunk starts.
        offset: usize,
    },
    /// `KIND:scatter[:COUNT]`: the domains of one kind (`S`, `M`, `C`, `D`) in turn.
    Scatter {
        /// The kind's letter.
        kind: char,
        /// How many threads (all of them when absent).
        count: Option<usize>,
    },
}

/// Whether `text` is written in likwid's syntax: a domain tag (`N`, `S0`, `C1`, `M2`, `D0`),
/// `L:`, `E:` or a scatter, before the first colon. None of these is a coretune or hwloc
/// location, so there is no ambiguity.
pub(crate) fn looks_like_likwid(text: &str) -> bool {
    let first = text.split('@').next().unwrap_or_default();
    let head = first.split(':').next().unwrap_or_default();
    first.contains(':') && (matches!(head, "L" | "E") || is_domain(head) || is_kind(head))
}

fn is_domain(tag: &str) -> bool {
    tag == "N"
        || tag.len() > 1
            && matches!(tag.as_bytes()[0], b'S' | b'C' | b'M' | b'D')
            && tag[1..].bytes().all(|b| b.is_ascii_digit())
}

fn is_kind(tag: &str) -> bool {
    matches!(tag, "S" | "C" | "M" | "D")
}

/// Parses one likwid expression (possibly several joined with `@`).
pub(crate) fn parse(text: &str) -> Result<Vec<LikwidSel>, String> {
    text.split('@').map(parse_one).collect()
}

fn parse_one(text: &str) -> Result<LikwidSel, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let number = |s: &str, what: &str| {
        s.parse::<usize>()
            .map_err(|_| format!("likwid expression '{text}': {what} '{s}' is not a number"))
    };
    match parts.as_slice() {
        ["E", domain, rest @ ..] if is_domain(domain) => {
            let count = match rest.first() {
                Some(c) => number(c, "count")?,
                None => usize::MAX,
            };
            let (chunk, stride, offset) = match rest {
                [] | [_] => (1, 1, 0),
                [_, c, s] => (number(c, "chunk")?, number(s, "stride")?, 0),
                [_, c, s, o] => (
                    number(c, "chunk")?,
                    number(s, "stride")?,
                    number(o, "offset")?,
                ),
                _ => {
                    return Err(format!(
                        "likwid expression '{text}': expected E:DOMAIN:COUNT[:CHUNK:STRIDE[:OFFSET]]"
                    ));
                }
            };
            if chunk == 0 || stride == 0 {
                return Err(format!(
                    "likwid expression '{text}': chunk and stride must be at least 1"
                ));
            }
            Ok(LikwidSel::Expression {
                domain: (*domain).to_owned(),
                count,
                chunk,
                stride,
                offset,
            })
        }
        [kind, method, rest @ ..] if is_kind(kind) && method.eq_ignore_ascii_case("scatter") => {
            let count = match rest {
                [] => None,
                [c] => Some(number(c, "count")?),
                _ => {
                    return Err(format!(
                        "likwid expression '{text}': expected KIND:scatter[:COUNT]"
                    ));
                }
            };
            Ok(LikwidSel::Scatter {
                kind: kind.chars().next().unwrap_or('N'),
                count,
            })
        }
        ["L", domain, list] | [domain, list] if is_domain(domain) => {
            let positions = positions(list).ok_or_else(|| {
                format!(
                    "likwid expression '{text}': '{list}' is not a list of positions (0-3,5 or 1,0)"
                )
            })?;
            Ok(LikwidSel::Logical {
                domain: (*domain).to_owned(),
                positions,
            })
        }
        _ => Err(format!(
            "likwid expression '{text}': expected DOMAIN:LIST, E:DOMAIN:COUNT[:CHUNK:STRIDE[:OFFSET]] \
             or KIND:scatter (domains N, S0, C0, M0, D0)"
        )),
    }
}

/// A domain's index list in the order written, as likwid reads it: numbers and ranges separated
/// by commas, a range counting down when its end is below its start (`3-0` is 3,2,1,0), a
/// position named twice kept twice. `None` when malformed or past [`MAX_CPU`](super::MAX_CPU).
fn positions(list: &str) -> Option<Vec<usize>> {
    let number = |s: &str| {
        s.parse::<usize>()
            .ok()
            .filter(|&n| n <= super::error::MAX_CPU)
    };
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a <= b {
                    out.extend(a..=b);
                } else {
                    out.extend((b..=a).rev());
                }
            }
            None => out.push(number(part)?),
        }
    }
    Some(out)
}

/// One domain's hardware threads, core by core (likwid's processor list), each with its
/// position in its core.
struct Domain {
    tag: String,
    threads: Vec<(usize, usize)>,
}

impl Domain {
    /// The processor list: OS indexes, siblings together.
    fn list(&self) -> Vec<usize> {
        self.threads.iter().map(|&(cpu, _)| cpu).collect()
    }

    /// likwid's logical order: the first thread of every core, then the second, …
    fn logical(&self) -> Vec<usize> {
        let deepest = self.threads.iter().map(|&(_, k)| k).max().unwrap_or(0);
        (0..=deepest)
            .flat_map(|k| {
                self.threads
                    .iter()
                    .filter(move |&&(_, t)| t == k)
                    .map(|&(cpu, _)| cpu)
            })
            .collect()
    }
}

/// Every domain of `topology`: N, then S, D, C and M in order. Where hwloc reports no dies,
/// each package is one die (likwid's `D` domains then equal its `S` domains, as `likwid-pin -p`
/// lists them on such a machine).
fn domains(topology: &Topology) -> Vec<Domain> {
    let allowed = topology.cpuset();
    // Each usable PU with its core's logical index and its position in that core.
    let mut pus: Vec<(usize, &TopologyObject, usize)> = Vec::new();
    for core in topology.objects(ObjectType::Core) {
        let mut k = 0;
        for pu in topology.objects(ObjectType::PU) {
            let inside = pu
                .first_ancestor_with_type(ObjectType::Core)
                .is_some_and(|c| std::ptr::eq(c, core));
            let usable = pu.os_index().is_some_and(|os| allowed.is_set(os));
            if inside && usable {
                pus.push((pu.os_index().unwrap_or(0), core, k));
                k += 1;
            }
        }
    }
    let within = |container: &TopologyObject| -> Vec<(usize, usize)> {
        let set = container.cpuset();
        pus.iter()
            .filter(|(cpu, _, _)| set.is_some_and(|s| s.is_set(*cpu)))
            .map(|&(cpu, _, k)| (cpu, k))
            .collect()
    };
    let mut out = vec![Domain {
        tag: "N".to_owned(),
        threads: pus.iter().map(|&(cpu, _, k)| (cpu, k)).collect(),
    }];
    let llc = [ObjectType::L3Cache, ObjectType::L2Cache]
        .into_iter()
        .find(|&ty| !topology.objects(ty).is_empty());
    let mut numa = topology.objects(ObjectType::NUMANode);
    numa.sort_by_key(|n| n.os_index());
    let packages = topology.objects(ObjectType::Package);
    let dies = match topology.objects(ObjectType::Die) {
        dies if dies.is_empty() => packages.clone(),
        dies => dies,
    };
    for (letter, objects) in [
        ('S', packages),
        ('D', dies),
        ('C', llc.map(|ty| topology.objects(ty)).unwrap_or_default()),
        ('M', numa),
    ] {
        for (i, obj) in objects.into_iter().enumerate() {
            out.push(Domain {
                tag: format!("{letter}{i}"),
                threads: within(obj),
            });
        }
    }
    out
}

/// The CPUs (OS indexes) `sels` name on `topology`, in likwid's order; a CPU named twice is
/// there twice, as likwid-pin keeps it (`N:0@N:0` is two threads on CPU 0).
///
/// # Errors
///
/// A domain this machine does not have, or a position past a domain's last thread.
pub(crate) fn resolve(topology: &Topology, sels: &[LikwidSel]) -> Result<Vec<usize>, String> {
    let all = domains(topology);
    let find = |tag: &str| {
        all.iter().find(|d| d.tag == tag).ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|d| d.tag.as_str()).collect();
            format!(
                "no likwid domain {tag} on this machine (it has {})",
                known.join(" ")
            )
        })
    };
    let mut out: Vec<usize> = Vec::new();
    for sel in sels {
        match sel {
            LikwidSel::Logical { domain, positions } => {
                let order = find(domain)?.logical();
                for &p in positions {
                    let cpu = order.get(p).ok_or_else(|| {
                        format!(
                            "{domain}:{p}: the domain has {} hardware threads (0-{})",
                            order.len(),
                            order.len().saturating_sub(1)
                        )
                    })?;
                    out.push(*cpu);
                }
            }
            LikwidSel::Expression {
                domain,
                count,
                chunk,
                stride,
                offset,
            } => {
                // cpustr_to_cpulist_expression: chunks `stride` apart, wrapping to the start.
                let list = find(domain)?.list();
                if *offset >= list.len() {
                    return Err(format!(
                        "E:{domain}: offset {offset} past the domain's {} threads",
                        list.len()
                    ));
                }
                let want = (*count).min(list.len() * 64);
                let mut taken = Vec::new();
                let mut start = 0;
                while taken.len() < want {
                    for j in 0..*chunk {
                        if start + j >= list.len() || taken.len() == want {
                            break;
                        }
                        taken.push(list[(offset + start + j) % list.len()]);
                    }
                    start += stride;
                    if offset + start >= list.len() {
                        start = 0;
                    }
                    if *count == usize::MAX && taken.len() >= list.len() {
                        break;
                    }
                }
                out.extend(taken);
            }
            LikwidSel::Scatter { kind, count } => {
                let lists: Vec<Vec<usize>> = all
                    .iter()
                    .filter(|d| {
                        d.tag.starts_with(*kind) && d.tag.len() > 1 && !d.threads.is_empty()
                    })
                    .map(Domain::logical)
                    .collect();
                if lists.is_empty() {
                    return Err(format!("{kind}:scatter: no {kind} domain on this machine"));
                }
                let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
                let mut taken = Vec::new();
                'round: for i in 0..longest {
                    for list in &lists {
                        if let Some(&cpu) = list.get(i) {
                            taken.push(cpu);
                            if count.is_some_and(|c| taken.len() == c) {
                                break 'round;
                            }
                        }
                    }
                }
                out.extend(taken);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::topology::TopologySource;

    /// 2 sockets × 2 cores × 2 threads: hwloc numbers the PUs 0-7 core by core.
    fn smt() -> Topology {
        Topology::load(&TopologySource::Synthetic("pack:2 l3:1 core:2 pu:2".into())).unwrap()
    }

    fn cpus(expr: &str) -> Vec<usize> {
        resolve(&smt(), &parse(expr).unwrap()).unwrap()
    }

    #[test]
    fn domains_count_physical_cores_first() {
        // N's logical order: the first thread of cores 0-3 (PUs 0, 2, 4, 6), then the second.
        assert_eq!(cpus("N:0-3"), [0, 2, 4, 6]);
        assert_eq!(cpus("N:0-7"), [0, 2, 4, 6, 1, 3, 5, 7]);
        assert_eq!(cpus("L:N:4"), [1]);
        assert_eq!(cpus("S1:0-1"), [4, 6]);
        assert_eq!(cpus("S0:0-1@S1:0-1"), [0, 2, 4, 6]);
        assert_eq!(cpus("C1:2"), [5]);
        assert_eq!(cpus("M0:0-3"), [0, 2, 4, 6]);
    }

    #[test]
    fn a_list_inside_a_domain_keeps_the_order_written_and_dies_default_to_sockets() {
        // S0's logical order is 0 2 1 3: position 1 then position 0.
        assert_eq!(cpus("S0:1,0"), [2, 0]);
        assert_eq!(cpus("N:3-0"), [6, 4, 2, 0]);
        assert_eq!(cpus("N:1,0@N:1"), [2, 0, 2]);
        assert_eq!(cpus("C0:1,0"), [2, 0]);
        // No dies in hwloc's view: each socket is one, as likwid counts them.
        assert_eq!(cpus("D1:0-1"), cpus("S1:0-1"));
        let err = resolve(&smt(), &parse("D2:0").unwrap()).unwrap_err();
        assert!(err.contains("(it has N S0 S1 D0 D1 C0 C1 M0)"), "{err}");
    }

    #[test]
    fn expressions_walk_the_processor_list() {
        // The processor list keeps siblings together: 0 1 2 3 4 5 6 7.
        assert_eq!(cpus("E:N:4"), [0, 1, 2, 3]);
        // 4 threads in chunks of 1, 2 apart: one per core.
        assert_eq!(cpus("E:N:4:1:2"), [0, 2, 4, 6]);
        assert_eq!(cpus("E:S1:2:1:2"), [4, 6]);
        assert_eq!(cpus("E:N:2:1:2:1"), [1, 3]);
    }

    #[test]
    fn scatter_takes_each_domain_in_turn() {
        assert_eq!(cpus("S:scatter"), [0, 4, 2, 6, 1, 5, 3, 7]);
        assert_eq!(cpus("S:scatter:2"), [0, 4]);
    }

    #[test]
    fn recognised_only_where_unambiguous_and_errors_say_why() {
        for text in ["N:0-3", "S0:0", "L:N:0", "E:N:2", "M:scatter", "C1:0@C0:0"] {
            assert!(looks_like_likwid(text), "{text}");
        }
        for text in ["numa:0", "pu:0-3", "core:1", "0-3", "N", "Socket:0", "all"] {
            assert!(!looks_like_likwid(text), "{text}");
        }
        let topo = smt();
        let err = resolve(&topo, &parse("S2:0").unwrap()).unwrap_err();
        assert!(err.contains("no likwid domain S2"), "{err}");
        let err = resolve(&topo, &parse("S0:4").unwrap()).unwrap_err();
        assert!(
            err.contains("S0:4: the domain has 4 hardware threads (0-3)"),
            "{err}"
        );
        assert!(
            parse("E:N:x")
                .unwrap_err()
                .contains("count 'x' is not a number")
        );
        assert!(
            parse("N:a-b")
                .unwrap_err()
                .contains("not a list of positions")
        );
    }
}
