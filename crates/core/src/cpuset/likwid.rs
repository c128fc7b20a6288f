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
//! The **domains** are likwid's: `N` the node, `S<i>` socket i, `D<i>` die i, `C<i>` the i-th
//! last-level cache, `M<i>` NUMA node i. Each lists its hardware threads core by core, each
//! core's threads together (likwid's `processorList`), counting only CPUs this process may use.
//! An **index list** counts in likwid's logical order, *physical cores first*: the first thread
//! of every core of the domain, then the second of every core, and so on (`cpulist_sort`), so
//! `S0:0-3` is four cores, not two cores and their SMT siblings. An **`E:` expression** walks
//! the processor list itself (siblings together): `count` threads in chunks of `chunk`, the
//! chunks `stride` apart, from `offset`. **Scatter** takes each domain's logical list in turn.

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
        /// The positions, as written (`0-3,5`).
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
            let positions = crate::sys::parse_list(list).ok_or_else(|| {
                format!("likwid expression '{text}': '{list}' is not a list of positions (0-3,5)")
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

/// Every domain of `topology`: N, then S, D, C and M in order.
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
    for (letter, objects) in [
        ('S', topology.objects(ObjectType::Package)),
        ('D', topology.objects(ObjectType::Die)),
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

/// The CPUs (OS indexes) `sels` name on `topology`, in likwid's order, duplicates removed.
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
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|c| seen.insert(*c));
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
