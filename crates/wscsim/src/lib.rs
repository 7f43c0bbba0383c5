//! wscsim: a fast, deterministic packet-level simulator of warehouse-scale datacenter
//! networks. See `docs/` in the repository for the user guide and model reference.
//!
//! Layers, bottom up: `engine` (time, events, random streams), `net` (packets, ports,
//! switches, NICs, routing), `scheme` (the data-plane API), `transport` (UDP, TCP),
//! `topology` (builders), `workload` (applications), `metrics`, `config` (scenarios) and
//! `sim` (one run, tying them together).

pub mod check;
pub mod config;
pub mod emulate;
pub mod engine;
pub mod host;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod scheme;
pub mod services;
pub mod sim;
pub mod table;
pub mod topology;
pub mod transport;
pub mod units;
pub mod workload;

pub use sim::Sim;

/// The crate version, recorded in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
