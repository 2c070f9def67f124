//! Executors: how the stages are scheduled. `local` runs them all in this process.

pub mod local;
