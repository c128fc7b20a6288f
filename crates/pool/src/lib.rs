//! coretune-pool: a work-stealing thread pool whose workers are created with a placement.
#![deny(missing_docs)]
