//! Tests of the store as a whole, through its `SessionStore`
//! methods, by area: the log on disk, several writers on one directory, leases, and the
//! decoded states in the cache.

mod cached;
mod leases;
mod logs;
mod writers;
