//! The expression syntax: tokens, their parse into [`CpuSetExpr`], and the canonical rendering.

use std::fmt;
use std::str::FromStr;

use super::error::{CpuSetError, MAX_CPU};
use crate::hwloc::{is_hwloc_type, parse_hwloc_bitmap_checked};
use crate::sys::{format_list, parse_list};
use crate::topology::ObjKind;
use crate::topology::groups::GroupMask;

/// How a term combines with the set built so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// No prefix: add the term's CPUs.
    Union,
    /// `~`: remove them.
    Remove,
    /// `x` or `&`: keep only CPUs also in the term.
    Intersect,
    /// `^`: toggle them.
    Xor,
}

impl Op {
    fn prefix(self) -> &'static str {
        match self {
            Op::Union => "",
            Op::Remove => "~",
            Op::Intersect => "x",
            Op::Xor => "^",
        }
    }
}

/// Which objects of a level a location takes (hwloc-calc's index syntax).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexRange {
    /// `all`.
    All,
    /// `odd`: indexes 1, 3, 5, ...
    Odd,
    /// `even`: indexes 0, 2, 4, ...
    Even,
    /// `N-M` (`N` alone is `N-N`).
    Span(usize, usize),
    /// `N-`: from N to the last.
    From(usize),
    /// `N:W`: W objects from N, wrapping to index 0 past the last.
    Wrap(usize, usize),
}

impl fmt::Display for IndexRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IndexRange::All => f.write_str("all"),
            IndexRange::Odd => f.write_str("odd"),
            IndexRange::Even => f.write_str("even"),
            IndexRange::Span(a, b) if a == b => write!(f, "{a}"),
            IndexRange::Span(a, b) => write!(f, "{a}-{b}"),
            IndexRange::From(a) => write!(f, "{a}-"),
            IndexRange::Wrap(a, w) => write!(f, "{a}:{w}"),
        }
    }
}

/// One `type:range` step of a location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// The object type.
    pub kind: ObjKind,
    /// Which objects of that type, counted inside the previous step's objects.
    pub range: IndexRange,
}

/// A kind of core named by `cpukind:N`, `pcores` or `ecores`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindSel {
    /// hwloc's rank N (0 = most power-efficient).
    Rank(usize),
    /// The fastest kind of a hybrid machine.
    PCores,
    /// The most efficient kind of a hybrid machine.
    ECores,
}

/// What a term names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Atom {
    /// `all` / `root`.
    All,
    /// CPUs by OS index (from a list, hex, binary, Windows or Slurm mask), ascending.
    Cpus(Vec<usize>),
    /// hwloc objects, outermost first.
    Location(Vec<Level>),
    /// A kind of core.
    Kind(KindSel),
    /// CPUs by OS index (as [`Atom::Cpus`]) and every CPU of the machine from `from` on: `8-`,
    /// `0xf...f`.
    CpusFrom {
        /// CPUs below `from`, ascending.
        cpus: Vec<usize>,
        /// The first CPU of the open end.
        from: usize,
    },
    /// Any other hwloc-calc location (devices, groups, cache variants), as written; evaluated
    /// by hwloc-calc's engine, and refused where hwloc-calc would only warn.
    Hwloc(String),
    /// Windows masks (`win:FC`, `win:0:FF,1:3`): one per processor group, resolved on the
    /// machine's groups (hwloc's numbering on a Windows topology, modelled on any other).
    WindowsGroups(Vec<GroupMask>),
    /// likwid-pin's syntax (`S0:0-3`, `E:N:8:1:2`, `M:scatter`), as written
    /// (see [`LikwidSel`](super::LikwidSel)).
    Likwid {
        /// The text, for display.
        text: String,
        /// What it selects.
        sels: Vec<super::LikwidSel>,
    },
}

/// One operator and atom, with the text it came from.
#[derive(Clone, Debug)]
pub struct Term {
    /// How it combines with the set so far.
    pub op: Op,
    /// What it names.
    pub atom: Atom,
    /// The term as written (for messages).
    pub text: String,
    /// Byte offset of the term in the whole expression (for carets).
    pub offset: usize,
}

impl PartialEq for Term {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op && self.atom == other.atom
    }
}

impl Eq for Term {}

/// A parsed CPU-set expression: terms applied left to right.
///
/// An expression is a space-separated list of terms applied left to right to an initially empty
/// set, as `hwloc-calc` applies its arguments. A term is an optional operator (`~` remove, `x` or
/// `&` intersect, `^` xor; none = union) followed by an atom:
///
/// | atom | meaning |
/// |---|---|
/// | `all`, `root` | every usable PU |
/// | `0-3,8` | a Linux CPU list (OS indexes) |
/// | `0xff`, `0xffffffff,0xfffffffc` | a hex mask; comma groups are hwloc's 32-bit words, most significant first, an empty group is 0 |
/// | `0b1010` | a binary mask, most significant bit first |
/// | `win:FC`, `win:0:FFFF,1:3` | Windows `start /affinity` hex, optionally one mask per 64-CPU processor group |
/// | `mask_cpu:0xff` | Slurm's `--cpu-bind=mask_cpu:` mask |
/// | `numa:1`, `core:0-3`, `numa:1.core:0-3` | hwloc objects (see [`ObjKind`](crate::topology::ObjKind) for the type names) with index ranges, nested with `.` |
/// | `cpukind:0`, `pcores`, `ecores` | a kind of core on hybrid machines (hwloc's rank: 0 = most efficient) |
/// | `8-`, `0-3,8-`, `0xf...f`, `0xf...f,0xfffffff0` | open-ended: up to the machine's last CPU |
/// | `os=eth0`, `pci=0000:02:00.0`, `pci[10de:]:0`, `osdev[gpu]:1`, `group0:1`, `l3u:2`, `l1i:0` | any other hwloc-calc location, devices included: the CPUs near a device |
///
/// Index ranges are hwloc-calc's: `N`, `N-M`, `N-` (to the last), `N:W` (W objects from N,
/// wrapping to 0 past the last), `all`, `odd`, `even`.
///
/// Parsing needs no topology; [`CpuSetExpr::resolve`](super::CpuSetExpr::resolve) evaluates it on
/// one. [`Display`](fmt::Display) prints a canonical form that parses back to an equal expression
/// (masks print as CPU lists).
///
/// Two expressions are equal when their terms are, whatever their spelling.
#[derive(Clone, Debug)]
pub struct CpuSetExpr {
    pub(super) source: String,
    pub(super) terms: Vec<Term>,
}

impl PartialEq for CpuSetExpr {
    fn eq(&self, other: &Self) -> bool {
        self.terms == other.terms
    }
}

impl Eq for CpuSetExpr {}

impl CpuSetExpr {
    /// Parses several arguments as one expression, as `hwloc-calc` does with its arguments:
    /// joined by spaces and applied left to right.
    ///
    /// # Errors
    ///
    /// As [`FromStr`]: [`CpuSetError::Syntax`] or [`CpuSetError::UnknownType`] naming the term.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Self, CpuSetError> {
        let joined: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        joined.join(" ").parse()
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The terms, left to right.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }
}

impl FromStr for CpuSetExpr {
    type Err = CpuSetError;

    fn from_str(source: &str) -> Result<Self, Self::Err> {
        let mut terms = Vec::new();
        let mut offset = 0;
        for raw in source.split(|c: char| c.is_ascii_whitespace()) {
            let here = offset;
            offset += raw.len() + 1;
            if raw.is_empty() {
                continue;
            }
            terms.push(parse_term(source, raw, here)?);
        }
        if terms.is_empty() {
            return Err(CpuSetError::Syntax {
                input: source.to_owned(),
                part: source.to_owned(),
                offset: 0,
                reason: "the expression is empty (try 'all', '0-3' or 'numa:0')".to_owned(),
            });
        }
        Ok(Self {
            source: source.to_owned(),
            terms,
        })
    }
}

impl fmt::Display for CpuSetExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(term.op.prefix())?;
            match &term.atom {
                Atom::All => f.write_str("all")?,
                // An empty list cannot be written as a list; `0x0` parses back to it.
                Atom::Cpus(cpus) if cpus.is_empty() => f.write_str("0x0")?,
                Atom::Cpus(cpus) => f.write_str(&format_list(cpus))?,
                Atom::Kind(KindSel::Rank(n)) => write!(f, "cpukind:{n}")?,
                Atom::Kind(KindSel::PCores) => f.write_str("pcores")?,
                Atom::Kind(KindSel::ECores) => f.write_str("ecores")?,
                Atom::CpusFrom { cpus, from } if cpus.is_empty() => write!(f, "{from}-")?,
                Atom::CpusFrom { cpus, from } => write!(f, "{},{from}-", format_list(cpus))?,
                Atom::Hwloc(text) | Atom::Likwid { text, .. } => f.write_str(text)?,
                Atom::WindowsGroups(masks) => {
                    write!(f, "win:{}", crate::topology::groups::windows_text(masks))?;
                }
                Atom::Location(levels) => {
                    for (j, level) in levels.iter().enumerate() {
                        if j > 0 {
                            f.write_str(".")?;
                        }
                        write!(f, "{}:{}", level.kind, level.range)?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn parse_term(input: &str, raw: &str, offset: usize) -> Result<Term, CpuSetError> {
    let (op, body) = match raw.as_bytes()[0] {
        b'~' => (Op::Remove, &raw[1..]),
        b'x' | b'X' if !raw[1..].is_empty() => (Op::Intersect, &raw[1..]),
        b'&' => (Op::Intersect, &raw[1..]),
        b'^' => (Op::Xor, &raw[1..]),
        _ => (Op::Union, raw),
    };
    let syntax = |reason: String| CpuSetError::Syntax {
        input: input.to_owned(),
        part: raw.to_owned(),
        offset,
        reason,
    };
    if body.is_empty() {
        return Err(syntax(
            "an operator needs something after it, e.g. '~pu:0'".to_owned(),
        ));
    }
    let atom = parse_atom(body).map_err(|e| match e {
        AtomError::Syntax(reason) => syntax(reason),
        AtomError::UnknownType(name) => CpuSetError::UnknownType {
            input: input.to_owned(),
            part: raw.to_owned(),
            name,
        },
    })?;
    Ok(Term {
        op,
        atom,
        text: raw.to_owned(),
        offset,
    })
}

enum AtomError {
    Syntax(String),
    UnknownType(String),
}

fn parse_atom(body: &str) -> Result<Atom, AtomError> {
    if super::likwid::looks_like_likwid(body) {
        return super::likwid::parse(body)
            .map(|sels| Atom::Likwid {
                text: body.to_owned(),
                sels,
            })
            .map_err(AtomError::Syntax);
    }
    let lower = body.to_ascii_lowercase();
    match lower.as_str() {
        "all" | "root" => return Ok(Atom::All),
        "pcores" => return Ok(Atom::Kind(KindSel::PCores)),
        "ecores" => return Ok(Atom::Kind(KindSel::ECores)),
        _ => {}
    }
    if lower.starts_with("0xf...f") {
        return parse_infinite_mask(&lower);
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        return parse_hwloc_hex(hex).map(Atom::Cpus);
    }
    if let Some(bin) = lower.strip_prefix("0b") {
        return parse_binary(bin).map(Atom::Cpus);
    }
    if let Some(win) = lower.strip_prefix("win:") {
        return parse_windows(win).map(Atom::WindowsGroups);
    }
    if let Some(mask) = lower.strip_prefix("mask_cpu:") {
        let hex = mask.strip_prefix("0x").unwrap_or(mask);
        return parse_hwloc_hex(hex).map(Atom::Cpus);
    }
    if lower.starts_with(|c: char| c.is_ascii_digit()) {
        if let Some(head) = lower.strip_suffix('-') {
            // `0-3,8-`: a list whose last range runs to the machine's last CPU.
            let (list, from) = match head.rsplit_once(',') {
                Some((list, from)) => (Some(list), from),
                None => (None, head),
            };
            let from = parse_index(from)?;
            let cpus = match list {
                Some(list) => parse_cpu_list(list)?,
                None => Vec::new(),
            };
            return Ok(Atom::CpusFrom { cpus, from });
        }
        return parse_cpu_list(&lower).map(Atom::Cpus);
    }
    if let Some(rank) = lower.strip_prefix("cpukind:") {
        let rank = parse_index(rank)?;
        return Ok(Atom::Kind(KindSel::Rank(rank)));
    }
    // `os=eth0`, `pci[10de:]:0`: hwloc-calc's device syntax.
    let prefix = body.bytes().take_while(u8::is_ascii_alphanumeric).count();
    if prefix > 0 && matches!(body.as_bytes().get(prefix), Some(b'=' | b'[')) {
        let name = &body[..prefix];
        if is_hwloc_type(name) {
            return Ok(Atom::Hwloc(body.to_owned()));
        }
        return Err(AtomError::UnknownType(name.to_owned()));
    }
    match parse_location(body) {
        Err(AtomError::UnknownType(name)) if is_hwloc_type(&name) => {
            Ok(Atom::Hwloc(body.to_owned()))
        }
        other => other.map(Atom::Location),
    }
}

/// `0xf...f` and `0xf...f,WORDS`: hwloc's infinite masks, every CPU from some point on.
fn parse_infinite_mask(text: &str) -> Result<Atom, AtomError> {
    let set = parse_hwloc_bitmap_checked(text)
        .ok_or_else(|| AtomError::Syntax(format!("'{text}' is not an hwloc mask")))?;
    let from = set.last_unset().map_or(0, |i| usize::from(i) + 1);
    let cpus: Vec<usize> = set
        .iter_set()
        .map(usize::from)
        .take_while(|&c| c < from)
        .collect();
    if from > MAX_CPU {
        return Err(AtomError::Syntax(format!(
            "mask names CPU {from}, past the largest supported ({MAX_CPU})"
        )));
    }
    Ok(Atom::CpusFrom { cpus, from })
}

fn parse_index(text: &str) -> Result<usize, AtomError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AtomError::Syntax(format!("'{text}' is not an index")));
    }
    text.parse::<usize>()
        .ok()
        .filter(|&n| n <= MAX_CPU)
        .ok_or_else(|| AtomError::Syntax(format!("index {text} is too large")))
}

fn parse_cpu_list(text: &str) -> Result<Vec<usize>, AtomError> {
    // Bound every number before expanding ranges, so `0-4000000000` fails instead of allocating.
    for number in text.split([',', '-']) {
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AtomError::Syntax(
                "a CPU list is numbers and ranges separated by commas, e.g. 0-3,8".to_owned(),
            ));
        }
        parse_index(number)?;
    }
    parse_list(text).ok_or_else(|| {
        AtomError::Syntax("a range must go upwards and have two ends, e.g. 0-3".to_owned())
    })
}

fn hex_value(text: &str) -> Result<Vec<usize>, AtomError> {
    let mut cpus = Vec::new();
    for (i, c) in text.bytes().rev().enumerate() {
        let digit = (c as char)
            .to_digit(16)
            .ok_or_else(|| AtomError::Syntax(format!("'{}' is not a hex digit", c as char)))?;
        for bit in 0..4 {
            if digit & (1 << bit) != 0 {
                let cpu = i * 4 + bit;
                if cpu > MAX_CPU {
                    return Err(AtomError::Syntax(format!(
                        "mask names CPU {cpu}, past the largest supported ({MAX_CPU})"
                    )));
                }
                cpus.push(cpu);
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// `hex` is what follows `0x`: one hex number of any length (taskset's form), or hwloc's
/// comma-separated 32-bit words, most significant first (an empty word is 0; later words may
/// repeat the `0x`).
fn parse_hwloc_hex(hex: &str) -> Result<Vec<usize>, AtomError> {
    let words: Vec<&str> = hex.split(',').collect();
    if words.len() == 1 {
        if hex.is_empty() {
            return Err(AtomError::Syntax("'0x' needs hex digits".to_owned()));
        }
        return hex_value(hex);
    }
    let mut cpus = Vec::new();
    for (i, word) in words.iter().rev().enumerate() {
        let word = if i + 1 == words.len() {
            word
        } else {
            word.strip_prefix("0x").unwrap_or(word)
        };
        if word.len() > 8 {
            return Err(AtomError::Syntax(format!(
                "'{word}' is longer than hwloc's 32-bit (8 hex digit) words"
            )));
        }
        if i + 1 == words.len() && word.is_empty() {
            return Err(AtomError::Syntax("'0x' needs hex digits".to_owned()));
        }
        cpus.extend(hex_value(word)?.into_iter().map(|c| c + 32 * i));
    }
    cpus.sort_unstable();
    Ok(cpus)
}

fn parse_binary(bin: &str) -> Result<Vec<usize>, AtomError> {
    if bin.is_empty() {
        return Err(AtomError::Syntax("'0b' needs binary digits".to_owned()));
    }
    if bin.len() > MAX_CPU + 1 {
        return Err(AtomError::Syntax("binary mask is too long".to_owned()));
    }
    let mut cpus = Vec::new();
    for (i, c) in bin.bytes().rev().enumerate() {
        match c {
            b'0' => {}
            b'1' => cpus.push(i),
            _ => {
                return Err(AtomError::Syntax(format!(
                    "'{}' is not a binary digit",
                    c as char
                )));
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// `win:HEX` (processor group 0) or `win:G:HEX,G:HEX` (one mask per processor group), by group.
fn parse_windows(text: &str) -> Result<Vec<GroupMask>, AtomError> {
    if !text.contains(':') {
        if text.is_empty() {
            return Err(AtomError::Syntax("'win:' needs a hex mask".to_owned()));
        }
        return Ok(vec![windows_group(0, text)?]);
    }
    let mut masks: Vec<GroupMask> = Vec::new();
    for part in text.split(',') {
        let Some((group, hex)) = part.split_once(':') else {
            return Err(AtomError::Syntax(format!(
                "'{part}' is not GROUP:HEX (e.g. 1:FF for processor group 1's first 8 CPUs)"
            )));
        };
        let group = parse_index(group)?;
        let group = u16::try_from(group)
            .ok()
            .filter(|&g| usize::from(g) * 64 <= MAX_CPU)
            .ok_or_else(|| {
                AtomError::Syntax(format!(
                    "processor group {group} is past the largest supported"
                ))
            })?;
        let m = windows_group(group, hex)?;
        match masks.iter_mut().find(|x| x.group == group) {
            Some(x) => x.mask |= m.mask,
            None => masks.push(m),
        }
    }
    masks.sort();
    Ok(masks)
}

fn windows_group(group: u16, hex: &str) -> Result<GroupMask, AtomError> {
    let hex = hex.strip_prefix("0x").unwrap_or(hex);
    if hex.is_empty() || hex.len() > 16 {
        return Err(AtomError::Syntax(format!(
            "'{hex}' is not a 64-bit hex mask (1 to 16 hex digits)"
        )));
    }
    let mask = u64::from_str_radix(hex, 16)
        .map_err(|_| AtomError::Syntax(format!("'{hex}' is not a hex mask")))?;
    Ok(GroupMask { group, mask })
}

fn parse_location(body: &str) -> Result<Vec<Level>, AtomError> {
    let mut levels = Vec::new();
    for step in body.split('.') {
        let Some((name, range)) = step.split_once(':') else {
            if ObjKind::from_name(step).is_some() {
                return Err(AtomError::Syntax(format!(
                    "'{step}' needs an index, e.g. {step}:0"
                )));
            }
            return Err(AtomError::Syntax(
                "not a CPU list, mask or TYPE:INDEX location (e.g. 0-3, 0xff, core:0-3)".to_owned(),
            ));
        };
        let kind =
            ObjKind::from_name(name).ok_or_else(|| AtomError::UnknownType(name.to_owned()))?;
        levels.push(Level {
            kind,
            range: parse_range(range)?,
        });
    }
    Ok(levels)
}

fn parse_range(text: &str) -> Result<IndexRange, AtomError> {
    match text.to_ascii_lowercase().as_str() {
        "all" => return Ok(IndexRange::All),
        "odd" => return Ok(IndexRange::Odd),
        "even" => return Ok(IndexRange::Even),
        _ => {}
    }
    if let Some((first, last)) = text.split_once('-') {
        let first = parse_index(first)?;
        if last.is_empty() {
            return Ok(IndexRange::From(first));
        }
        let last = parse_index(last)?;
        if last < first {
            return Err(AtomError::Syntax(format!(
                "range {first}-{last} goes downwards"
            )));
        }
        return Ok(IndexRange::Span(first, last));
    }
    if let Some((first, width)) = text.split_once(':') {
        let first = parse_index(first)?;
        let width = parse_index(width)?;
        if width == 0 {
            return Err(AtomError::Syntax(format!("'{text}' takes 0 objects")));
        }
        return Ok(IndexRange::Wrap(first, width));
    }
    let n = parse_index(text)?;
    Ok(IndexRange::Span(n, n))
}
