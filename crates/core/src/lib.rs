//! coretune-core
