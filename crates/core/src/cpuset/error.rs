//! Why a CPU-set expression could not be parsed or evaluated ([`CpuSetError`]), and the
//! largest CPU index one may name ([`MAX_CPU`]).

use crate::topology::ObjKind;

/// The largest CPU index an expression may name. Linux's `NR_CPUS` tops out at 8192; this leaves
/// room while keeping a typo such as `0-4000000000` from allocating gigabytes.
pub const MAX_CPU: usize = 65_535;

/// Why an expression could not be parsed or evaluated. Every variant keeps the expression and the
/// offending part, and its message is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CpuSetError {
    /// The text is not valid syntax.
    #[error("'{part}': {reason}")]
    Syntax {
        /// The whole expression.
        input: String,
        /// The term that failed.
        part: String,
        /// Byte offset of `part` in `input`.
        offset: usize,
        /// What was expected.
        reason: String,
    },
    /// A location names an object type coretune does not know.
    #[error(
        "'{part}': unknown object type '{name}' (known: pu, core, package, numa, die, l1, l2, \
         l3, machine, cpukind)"
    )]
    UnknownType {
        /// The whole expression.
        input: String,
        /// The term that failed.
        part: String,
        /// The type name as written.
        name: String,
    },
    /// The topology has no object of the named type (e.g. `die:0` where hwloc reports no dies).
    #[error("'{part}': this machine has no {kind} objects")]
    TypeNotPresent {
        /// The term that failed.
        part: String,
        /// The type.
        kind: ObjKind,
    },
    /// A logical index is past the last object (counted inside the enclosing object, if any).
    #[error("'{part}': index {index} past the last {kind} (there are {count}{within})")]
    IndexOutOfRange {
        /// The term that failed.
        part: String,
        /// The type.
        kind: ObjKind,
        /// The index asked for.
        index: usize,
        /// How many there are.
        count: usize,
        /// `" in numa:1"` when counted inside another object, else empty.
        within: String,
    },
    /// No object of that type has this OS (physical) index.
    #[error("'{part}': no {kind} has OS index {index} (they have {available})")]
    NoSuchOsIndex {
        /// The term that failed.
        part: String,
        /// The type.
        kind: ObjKind,
        /// The OS index asked for.
        index: usize,
        /// The OS indexes there are, as a list.
        available: String,
    },
    /// A list or mask names CPUs the machine does not have at all.
    #[error("'{part}': CPU {cpus} does not exist (this machine has CPUs {existing})")]
    NoSuchCpu {
        /// The term that failed.
        part: String,
        /// The missing CPUs, as a list.
        cpus: String,
        /// The CPUs the machine has (online or not), as a list.
        existing: String,
    },
    /// `cpukind:N` past the last kind, or any kind on a machine hwloc has no kinds for.
    #[error("'{part}': {reason}")]
    NoSuchKind {
        /// The term that failed.
        part: String,
        /// What hwloc knows.
        reason: String,
    },
    /// The expression evaluates to no CPU at all.
    #[error("'{input}': the result is empty")]
    Empty {
        /// The whole expression.
        input: String,
    },
    /// hwloc-calc's engine warns about a location (an object or device that does not exist, a
    /// range it cannot read); coretune refuses it.
    #[error("'{part}': {reason}")]
    Location {
        /// The term that failed.
        part: String,
        /// What hwloc-calc says about it.
        reason: String,
    },
    /// The expression only names CPUs that are offline or not allowed to this process.
    #[error("'{input}': CPUs {cpus} are all offline or not allowed (usable: {usable})")]
    Unusable {
        /// The whole expression.
        input: String,
        /// The CPUs named, as a list.
        cpus: String,
        /// The usable CPUs, as a list.
        usable: String,
    },
}

impl CpuSetError {
    /// The error as two extra lines: the expression and a caret under the offending term, when the
    /// error points at one term of `input`.
    pub fn caret(&self, input: &str) -> Option<String> {
        let part = match self {
            CpuSetError::Syntax { part, .. }
            | CpuSetError::UnknownType { part, .. }
            | CpuSetError::TypeNotPresent { part, .. }
            | CpuSetError::IndexOutOfRange { part, .. }
            | CpuSetError::NoSuchOsIndex { part, .. }
            | CpuSetError::NoSuchCpu { part, .. }
            | CpuSetError::NoSuchKind { part, .. }
            | CpuSetError::Location { part, .. } => part,
            _ => return None,
        };
        let start = input.find(part.as_str())?;
        let width = part.chars().count().max(1);
        let pad = input[..start].chars().count();
        Some(format!(
            "  {input}\n  {}{}",
            " ".repeat(pad),
            "^".repeat(width)
        ))
    }
}
