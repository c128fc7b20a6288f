//! One module per subcommand.

pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod completions;
pub(crate) mod cpus;
pub(crate) mod man;
pub(crate) mod place;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod topo;
pub(crate) mod tune;
pub(crate) mod watch;
