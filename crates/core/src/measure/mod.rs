//! Measuring a run: what it cost ([`Probe`], [`ChildProbe`] → [`Measurement`]: wall, CPU time,
//! context switches, migrations, peak memory, the CPU each worker ran on), how quiet the
//! machine was around it ([`NoiseProbe`] → [`Noise`]), and the statistics of repeated runs
//! ([`Summary`]: median, MAD, a bootstrap interval; [`UslFit`]: the Universal Scalability Law).
//!
//! ```
//! use coretune_core::measure::Summary;
//!
//! let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 100.0]).expect("five values");
//! assert_eq!(s.median, 3.0);
//! assert!(s.min <= s.median && s.median <= s.max);
//! ```

mod noise;
mod probe;
pub(crate) mod stats;

pub use noise::{BUSY_OTHERS_CPUS, BUSY_STEAL, Noise, NoiseProbe};
pub use probe::{
    ChildProbe, Measurement, MigrationSource, Probe, RssSource, ThreadProbe, ThreadRecord,
    ThreadTracker,
};
pub use stats::{Summary, UslFit};

pub(crate) use probe::seconds;
pub(crate) use stats::OUTLIER_Z;
