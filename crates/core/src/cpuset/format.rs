//! Output formats for a CPU set: what each tool that takes a CPU set wants to be given.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use hwlocality::cpu::cpuset::CpuSet;

use crate::hwloc::{hwloc_string, taskset_string};
use crate::sys::{format_list, set_to_vec};
use crate::topology::Topology;
use crate::topology::groups::{GroupMask, ProcessorGroups, windows_text};

/// A way to write a CPU set down.
///
/// The formats marked *parseable* read back through [`CpuSetExpr`](super::CpuSetExpr) to the same
/// set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Sorted, range-compressed OS indexes: `0-3,8` (Linux's cpulist). Parseable.
    List,
    /// hwloc's bitmap string, exactly as `hwloc-calc` prints it: 32-bit words, most significant
    /// first, comma-separated, all-zero words empty, `0x0` for an all-zero lowest word. Parseable.
    Hwloc,
    /// One hex number, as `hwloc-calc --taskset` prints it and `taskset` takes it: `0xff`.
    /// Parseable.
    Taskset,
    /// What Windows' `start /affinity` takes: processor group 0's hex mask, `FC`. A set with
    /// CPUs in other groups, which `start` cannot reach, is one `GROUP:HEX` per group
    /// (`0:FFFFFFFFFFFFFFFF,1:3`). Either reads back as an expression with coretune's `win:`
    /// prefix (`win:FC`). With a topology ([`Format::render_on`]) the masks are that machine's
    /// processor groups (modelled for a machine not seen on Windows, see `ProcessorGroups`);
    /// without, hwloc's numbering of Windows CPUs, `64 × group + bit`.
    Windows,
    /// PowerShell's `(Get-Process).ProcessorAffinity`: the group-0 mask in decimal. Fails for CPUs
    /// of other groups, which `ProcessorAffinity` cannot express.
    PowerShell,
    /// `0b1010`, most significant bit first. Parseable.
    Binary,
    /// The number of CPUs.
    Count,
    /// A JSON array of OS indexes: `[0,1,2,3,8]`.
    Json,
    /// `numactl --physcpubind=` value (a CPU list). Parseable.
    Numactl,
    /// `OMP_PLACES` with one place per CPU, runs written as intervals: `{0}:4,{8}`.
    OmpPlaces,
    /// Slurm `--cpu-bind=` value: `mask_cpu:0xff`. Parseable.
    Slurm,
    /// systemd `CPUAffinity=` / `AllowedCPUs=` value (a CPU list). Parseable.
    Systemd,
    /// `likwid-pin -c` value: a CPU list, which likwid reads as OS indexes. Parseable.
    Likwid,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 13] = [
        Format::List,
        Format::Hwloc,
        Format::Taskset,
        Format::Windows,
        Format::PowerShell,
        Format::Binary,
        Format::Count,
        Format::Json,
        Format::Numactl,
        Format::OmpPlaces,
        Format::Slurm,
        Format::Systemd,
        Format::Likwid,
    ];

    /// Whether [`CpuSetExpr`](super::CpuSetExpr) reads this format's output back.
    pub fn is_parseable(self) -> bool {
        !matches!(
            self,
            Format::Windows | Format::PowerShell | Format::Count | Format::Json | Format::OmpPlaces
        )
    }

    /// Writes `set` in this format; [`Format::Windows`] and [`Format::PowerShell`] in hwloc's
    /// numbering of Windows CPUs (CPU `n` is bit `n % 64` of group `n / 64`).
    ///
    /// # Errors
    ///
    /// [`FormatError::TooWide`] for [`Format::PowerShell`] when the set has CPUs past group 0.
    pub fn render(self, set: &CpuSet) -> Result<String, FormatError> {
        let cpus = set_to_vec(set);
        self.render_groups(set, &ProcessorGroups::numbered(cpus.iter().copied()))
    }

    /// Writes `set` in this format for `topology`: [`Format::Windows`] and
    /// [`Format::PowerShell`] with the machine's processor groups, read from a Windows topology or
    /// modelled for any other (so a plan made from a Linux machine's XML gives the masks that
    /// machine would take on Windows); the other formats as [`Format::render`].
    ///
    /// # Errors
    ///
    /// As [`Format::render`], and [`FormatError::NotInGroups`] for CPUs the topology does not
    /// have.
    pub fn render_on(self, set: &CpuSet, topology: &Topology) -> Result<String, FormatError> {
        match self {
            Format::Windows | Format::PowerShell => {
                self.render_groups(set, &ProcessorGroups::of(topology))
            }
            _ => self.render(set),
        }
    }

    fn render_groups(self, set: &CpuSet, groups: &ProcessorGroups) -> Result<String, FormatError> {
        let cpus = set_to_vec(set);
        Ok(match self {
            Format::List | Format::Numactl | Format::Systemd | Format::Likwid => format_list(&cpus),
            Format::Hwloc => hwloc_string(set.borrow()),
            Format::Taskset => taskset_string(set.borrow()),
            Format::Slurm => format!("mask_cpu:{}", taskset_string(set.borrow())),
            Format::Windows | Format::PowerShell => {
                let (masks, unplaced) = groups.split(&cpus);
                if let Some(&cpu) = unplaced.first() {
                    return Err(FormatError::NotInGroups { format: self, cpu });
                }
                match self {
                    Format::Windows => windows_text(&masks),
                    _ => match masks.as_slice() {
                        [] => "0".to_owned(),
                        [GroupMask { group: 0, mask }] => mask.to_string(),
                        _ => {
                            let past = cpus
                                .iter()
                                .copied()
                                .find(|&c| groups.locate(c).is_some_and(|(g, _)| g != 0))
                                .unwrap_or(0);
                            return Err(FormatError::TooWide {
                                format: self,
                                cpu: past,
                            });
                        }
                    },
                }
            }
            Format::Binary => {
                let Some(&last) = cpus.last() else {
                    return Ok("0b0".to_owned());
                };
                let mut bits = vec![b'0'; last + 1];
                for &c in &cpus {
                    bits[last - c] = b'1';
                }
                format!("0b{}", String::from_utf8_lossy(&bits))
            }
            Format::Count => cpus.len().to_string(),
            Format::Json => {
                let items: Vec<String> = cpus.iter().map(ToString::to_string).collect();
                format!("[{}]", items.join(","))
            }
            Format::OmpPlaces => omp_places(&cpus),
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::List => "list",
            Format::Hwloc => "hwloc",
            Format::Taskset => "taskset",
            Format::Windows => "windows",
            Format::PowerShell => "powershell",
            Format::Binary => "binary",
            Format::Count => "count",
            Format::Json => "json",
            Format::Numactl => "numactl",
            Format::OmpPlaces => "omp",
            Format::Slurm => "slurm",
            Format::Systemd => "systemd",
            Format::Likwid => "likwid",
        })
    }
}

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        let alias = match lower.as_str() {
            "hex" => Some(Format::Hwloc),
            "win" => Some(Format::Windows),
            "ps" => Some(Format::PowerShell),
            "bin" => Some(Format::Binary),
            "omp_places" | "omp-places" => Some(Format::OmpPlaces),
            _ => None,
        };
        alias
            .or_else(|| Format::ALL.into_iter().find(|f| f.to_string() == lower))
            .ok_or_else(|| FormatError::Unknown(s.to_owned()))
    }
}

/// Why a set could not be written in a format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The format name is not one of [`Format::ALL`].
    #[error(
        "unknown format '{0}' (known: list, hwloc, taskset, windows, powershell, binary, count, \
         json, numactl, omp, slurm, systemd, likwid)"
    )]
    Unknown(String),
    /// The format cannot express a CPU this far up.
    #[error("{format} cannot express CPU {cpu} (only the CPUs of processor group 0)")]
    TooWide {
        /// The format.
        format: Format,
        /// The first CPU it cannot express.
        cpu: usize,
    },
    /// The machine's processor groups have no such CPU (it is not one of its PUs).
    #[error("{format}: CPU {cpu} is in none of this machine's processor groups")]
    NotInGroups {
        /// The format.
        format: Format,
        /// The first such CPU.
        cpu: usize,
    },
}

fn omp_places(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut len = 1;
        while i + len < cpus.len() && cpus[i + len] == start + len {
            len += 1;
        }
        parts.push(if len == 1 {
            format!("{{{start}}}")
        } else {
            format!("{{{start}}}:{len}")
        });
        i += len;
    }
    parts.join(",")
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::sys::set_from_indexes;

    fn render(format: Format, cpus: &[usize]) -> String {
        format
            .render(&set_from_indexes(cpus.iter().copied()))
            .unwrap()
    }

    #[test]
    fn hwloc_strings_match_hwloc_calc_output() {
        // Strings printed by hwloc-calc 2.9 (see expected.json and the module docs).
        assert_eq!(render(Format::Hwloc, &[]), "0x0");
        assert_eq!(render(Format::Hwloc, &[0, 1, 2, 3]), "0x0000000f");
        assert_eq!(
            render(Format::Hwloc, &[32, 64]),
            "0x00000001,0x00000001,0x0"
        );
        assert_eq!(render(Format::Hwloc, &[0, 64]), "0x00000001,,0x00000001");
        assert_eq!(render(Format::Hwloc, &[193]), "0x00000002,,,,,,0x0");
    }

    #[test]
    fn a_set_renders_in_every_other_tools_format() {
        let cpus = [0, 1, 2, 3, 8];
        assert_eq!(render(Format::List, &cpus), "0-3,8");
        assert_eq!(render(Format::Taskset, &cpus), "0x10f");
        assert_eq!(render(Format::Taskset, &[]), "0x0");
        assert_eq!(
            render(Format::Taskset, &[192]),
            format!("0x1{}", "0".repeat(48))
        );
        assert_eq!(render(Format::Binary, &cpus), "0b100001111");
        assert_eq!(render(Format::Count, &cpus), "5");
        assert_eq!(render(Format::Json, &cpus), "[0,1,2,3,8]");
        assert_eq!(render(Format::OmpPlaces, &cpus), "{0}:4,{8}");
        assert_eq!(render(Format::Slurm, &cpus), "mask_cpu:0x10f");
        assert_eq!(render(Format::PowerShell, &cpus), "271");
        assert_eq!(render(Format::Windows, &[2, 3]), "C");
        assert_eq!(render(Format::Windows, &[0, 65]), "0:1,1:2");
        assert_eq!(
            Format::PowerShell.render(&set_from_indexes([1, 64])),
            Err(FormatError::TooWide {
                format: Format::PowerShell,
                cpu: 64
            })
        );
    }

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!("hex".parse::<Format>(), Ok(Format::Hwloc));
        assert!("xml".parse::<Format>().is_err());
    }
}
