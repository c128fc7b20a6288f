//! Where a topology comes from ([`TopologySource`]: this machine, hwloc XML or a synthetic
//! description), how hwloc loads it ([`LoadOptions`]), and why it could not ([`TopologyError`]).

use std::fmt;
use std::path::{Path, PathBuf};

use hwlocality::object::types::ObjectType;

/// Where a topology comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologySource {
    /// The machine this process runs on.
    Live,
    /// An hwloc XML file (as written by `lstopo --of xml` or `hwloc-gather-topology`).
    XmlFile(PathBuf),
    /// An hwloc XML document already in memory; `label` names it in messages.
    Xml {
        /// What the XML came from (a path, a directory), for messages.
        label: String,
        /// The XML text.
        xml: String,
    },
    /// An hwloc synthetic description such as `pack:2 numa:2 l3:2 core:8 pu:2`.
    Synthetic(String),
}

impl TopologySource {
    /// Classifies an `--input` value the way `lstopo --input` does: an existing file is XML, a
    /// string that looks like a path (contains `/` or ends in `.xml`) but does not exist is a
    /// missing file, anything else is a synthetic description.
    ///
    /// Directories are not handled here: hwloc reads them only through the environment (see the
    /// module documentation), so callers turn them into [`TopologySource::Xml`] themselves.
    pub fn from_input(input: &str) -> Self {
        let path = Path::new(input);
        if path.is_file()
            || input.contains('/')
            || input.ends_with(".xml")
            || input.ends_with(".XML")
        {
            TopologySource::XmlFile(path.to_path_buf())
        } else {
            TopologySource::Synthetic(input.to_owned())
        }
    }
}

impl fmt::Display for TopologySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologySource::Live => f.write_str("this machine"),
            TopologySource::XmlFile(path) => write!(f, "{}", path.display()),
            TopologySource::Xml { label, .. } => f.write_str(label),
            TopologySource::Synthetic(s) => write!(f, "synthetic '{s}'"),
        }
    }
}

/// Why a topology could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// The topology file could not be read.
    // The I/O error is part of the message rather than a `source`, so that `{:#}` chains do not
    // print it twice.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// hwloc refused the XML; `reason` says what coretune could tell about why.
    #[error("{input}: hwloc rejected the XML: {reason}")]
    BadXml {
        /// What the XML came from.
        input: String,
        /// The most specific reason known.
        reason: String,
    },
    /// hwloc refused the synthetic description.
    #[error(
        "synthetic topology '{description}': hwloc rejected it: {reason} \
         (expected a list of TYPE:COUNT from the top down, e.g. 'pack:2 numa:2 core:8 pu:2')"
    )]
    BadSynthetic {
        /// The description as given.
        description: String,
        /// The most specific reason known.
        reason: String,
    },
    /// hwloc failed to discover the live machine.
    #[error("could not discover this machine's topology: {0}")]
    Live(String),
}

/// Which objects a load keeps (hwloc's type filters) and whether disallowed resources count.
///
/// The default is hwloc's default load. [`LoadOptions::hwloc_calc`] is how hwloc-calc loads
/// (every object type hwloc can report, including I/O devices, Misc objects and instruction
/// caches); [`LoadOptions::io`] adds PCI and OS devices, for device locality.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    pub(super) include_disallowed: bool,
    pub(super) all_types: bool,
    pub(super) io: bool,
    pub(super) io_important: bool,
    pub(super) ignore: Vec<ObjectType>,
}

impl LoadOptions {
    /// lstopo's load: every object type kept (instruction caches, Misc objects), and the I/O
    /// devices hwloc finds important (bridges, PCI devices and OS devices with a use), as
    /// `lstopo --of xml` writes them.
    pub fn lstopo() -> Self {
        Self {
            all_types: true,
            io_important: true,
            ..Self::default()
        }
    }

    /// hwloc-calc's load: every object type kept, disallowed resources when asked.
    pub fn hwloc_calc(include_disallowed: bool) -> Self {
        Self {
            include_disallowed,
            all_types: true,
            ..Self::default()
        }
    }

    /// hwloc-distrib's load: hwloc's default filters.
    pub fn hwloc_distrib() -> Self {
        Self::default()
    }

    /// Includes disallowed resources (`--disallowed`).
    #[must_use]
    pub fn include_disallowed(mut self, yes: bool) -> Self {
        self.include_disallowed = yes;
        self
    }

    /// Keeps PCI devices, bridges and OS devices (network interfaces, disks, GPUs), so that
    /// `pci=...` and `os=...` name something.
    #[must_use]
    pub fn io(mut self, yes: bool) -> Self {
        self.io = yes;
        self
    }

    /// Leaves out objects of type `ty` (`hwloc-distrib --ignore`; hwloc's type names are read by
    /// [`crate::hwloc::type_from_name`]).
    pub fn ignore(&mut self, ty: ObjectType) {
        self.ignore.push(ty);
    }
}

/// Why [`Topology::restrict`](super::Topology::restrict) left the topology as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestrictError {
    /// hwloc refuses this combination of flags.
    #[error("hwloc refuses restrict flags {0:#x}")]
    Flags(u64),
    /// The set has nothing in common with the topology.
    #[error("the set has no CPU or NUMA node of the topology")]
    NothingLeft,
}

pub(super) fn bad_xml(input: &str, xml: &str) -> TopologyError {
    let reason = if !xml.contains("<topology") {
        "not an hwloc XML file (no <topology> element)".to_owned()
    } else if xml.contains("version=\"3.0\"") {
        "it is in hwloc 3's XML format, which libhwloc 2 cannot read".to_owned()
    } else {
        "malformed or inconsistent hwloc XML (HWLOC_XML_VERBOSE=1 makes hwloc say where)".to_owned()
    };
    TopologyError::BadXml {
        input: input.to_owned(),
        reason,
    }
}

/// hwloc says nothing about why a synthetic description failed; point at the first token that is
/// not `TYPE:COUNT` with a positive count, or say the combination was refused.
pub(super) fn synthetic_reason(description: &str) -> String {
    for token in description.split_whitespace() {
        if token.starts_with('[') || token.starts_with('(') || token.starts_with('{') {
            continue;
        }
        match token.split_once(':') {
            None => return format!("'{token}' is not TYPE:COUNT"),
            Some((_, count)) => {
                let digits: String = count.chars().take_while(char::is_ascii_digit).collect();
                if digits.is_empty() || digits.parse::<u64>().map_or(true, |n| n == 0) {
                    return format!("'{token}' needs a positive count");
                }
            }
        }
    }
    if description.trim().is_empty() {
        return "the description is empty".to_owned();
    }
    "unknown object type, or types out of order".to_owned()
}

/// An hwloc call's failure in words (`hwloc_topology_load failed: Invalid argument`):
/// hwlocality's own message shows the errno as Rust's debug text.
pub(super) fn hwloc_reason(e: &hwlocality::errors::RawHwlocError) -> String {
    match e.errno {
        Some(errno) => format!("{} failed: {errno}", e.api),
        None => format!("{} failed", e.api),
    }
}
