//! One module per subcommand.

pub(crate) mod bench;
pub(crate) mod cpus;
pub(crate) mod place;
pub(crate) mod run;
pub(crate) mod topo;
